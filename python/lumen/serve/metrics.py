"""The metrics `lumen serve` exposes at /metrics, in Prometheus' text format through
prometheus_client (a registry of its own, so nothing else in the process shows up)."""

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                    10, 30)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class ServeMetrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter("lumen_requests", "Inference requests answered, by HTTP status",
                                ["model", "code"], registry=self.registry)
        self.errors = Counter("lumen_request_errors", "Inference requests answered with an error",
                              ["model", "kind"], registry=self.registry)
        self.latency = Histogram("lumen_request_latency_seconds",
                                 "Time from receiving a request to answering it", ["model"],
                                 buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.queue = Histogram("lumen_queue_seconds",
                               "Time a request waited in its replica before its batch ran",
                               ["model"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.run = Histogram("lumen_run_seconds", "Time of the model run a request was part of",
                             ["model"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.batch = Histogram("lumen_batch_size", "Requests per model run", ["model"],
                               buckets=_BATCH_BUCKETS, registry=self.registry)

    def answered(self, model, code, seconds, kind=None):
        self.requests.labels(model, str(code)).inc()
        self.latency.labels(model).observe(seconds)
        if kind:
            self.errors.labels(model, kind).inc()

    def ran(self, model, batch, queue_s, run_s):
        self.batch.labels(model).observe(batch)
        self.queue.labels(model).observe(queue_s)
        self.run.labels(model).observe(run_s)

    def text(self):
        return generate_latest(self.registry)
