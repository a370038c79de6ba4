"""Load test of `lumen serve` against onnxruntime in the same Ray Serve deployment, on loopback.

    PYTHONPATH=build/python .venv/bin/python bench/serve_load.py [--seconds 20] [--clients 8]

For each model (ResNet-50 from the ONNX package's light models, a BERT-style encoder from
bench/models.py; both given a symbolic batch dim, checked by comparing a batch of 4 with four
single runs) and each engine (Lumen, or onnxruntime with intra-op threads = Lumen's, inter-op 1,
spinning off), the model is served by lumen.serve's application (the same ingress, protocol and
replica code; only the engine differs) with dynamic batching on (max batch 8, waiting
--batch-timeout-ms, default 5) and off (max batch 1). `--clients` concurrent clients (httpx's
async client, binary tensors) send requests back to back for `--seconds`; printed: requests/s, p50/p99 latency, the mean batch size the
replica ran (from /metrics) and failed requests. One replica with all cores; the clients, the HTTP
proxy and the replica share this machine's cores.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def with_symbolic_batch(src, dst):
    """`src` with a symbolic batch dim (lumen.serve.batching.with_symbolic_batch), saved at dst."""
    from lumen.serve.batching import with_symbolic_batch as symbolic

    onnx.save(symbolic(onnx.load(src)), dst)


def check_batches(path):
    """A batch of 4 gives the four single runs' outputs (so batching changes no answer)."""
    import lumen

    compiled = lumen.load_onnx(path).compile()
    feeds4 = sample_feeds(compiled.inputs, 4, seed=7)
    together = compiled.run(feeds4)[0]
    alone = np.concatenate([compiled.run({k: v[i:i + 1] for k, v in feeds4.items()})[0]
                            for i in range(4)])
    np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-4)


def sample_feeds(inputs, batch, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in inputs:
        shape = [batch] + [d if isinstance(d, int) else 1 for d in i["shape"][1:]]
        if i["dtype"] == "int64":
            feeds[i["name"]] = rng.integers(0, 1000, shape).astype(np.int64)
        else:
            feeds[i["name"]] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def binary_request(feeds):
    datatypes = {"float32": "FP32", "int64": "INT64"}
    header = json.dumps({"inputs": [{"name": n, "shape": list(a.shape),
                                     "datatype": datatypes[str(a.dtype)],
                                     "parameters": {"binary_data_size": a.nbytes}}
                                    for n, a in feeds.items()],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + b"".join(a.tobytes() for a in feeds.values()), {
        "Inference-Header-Content-Length": str(len(header))}


def ort_replica_class():
    """ModelReplica with onnxruntime as the engine: everything else is lumen.serve's."""
    from lumen.serve.app import ModelReplica

    class OrtReplica(ModelReplica):
        def _compile(self, model, path, num_threads, compile_options):
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = num_threads or os.cpu_count()
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

            class Runner:
                def run(self, feeds):
                    return session.run(None, feeds)

            return Runner()

    return OrtReplica


def serve_app(engine, name, path, max_batch, threads, timeout_ms=5.0):
    from ray import serve

    import lumen.serve
    from lumen.serve.app import Ingress

    if engine == "lumen":
        return lumen.serve.application({name: path}, max_batch=max_batch,
                                       batch_timeout_ms=timeout_ms, num_threads=threads)
    model = serve.deployment(ort_replica_class(), name=f"model_{name}", num_replicas=1,
                             max_ongoing_requests=256,
                             ray_actor_options={"num_cpus": threads}).bind(
        name, path, max_batch, timeout_ms, threads, {})
    return serve.deployment(Ingress, name="ingress", ray_actor_options={"num_cpus": 0}).bind(
        {name: model}, 64 << 20)


async def post_ok(client, url, body, headers):
    """The response to one request, or None where it failed (an error status, or no answer)."""
    import httpx

    try:
        r = await client.post(url, content=body, headers=headers)
    except httpx.HTTPError:
        return None
    return r if r.status_code == 200 else None


async def load(url, body, headers, clients, seconds):
    import httpx

    latencies, failures = [], 0
    deadline = time.perf_counter() + seconds

    async def client(c):
        nonlocal failures
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            if await post_ok(c, url, body, headers):
                latencies.append(time.perf_counter() - start)
            else:
                failures += 1

    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=clients)) as c:
        start = time.perf_counter()
        await asyncio.gather(*[client(c) for _ in range(clients)])
        elapsed = time.perf_counter() - start
    return latencies, failures, elapsed


def batch_stats(text, name):
    """(requests, runs) the replica ran so far, from /metrics."""
    total = count = 0.0
    for line in text.splitlines():
        if f'model="{name}"' in line:
            if line.startswith("lumen_batch_size_sum"):
                total = float(line.split()[-1])
            elif line.startswith("lumen_batch_size_count"):
                count = float(line.split()[-1])
    return total, count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--models", default="resnet50,minilm")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--engines", default="lumen,onnxruntime")
    parser.add_argument("--max-batch", default="8,1", help="the max batch sizes to serve with")
    parser.add_argument("--batch-timeout-ms", type=float, default=5.0)
    args = parser.parse_args()
    import httpx
    import ray
    from ray import serve

    import lumen
    import models as suite

    tmp = tempfile.mkdtemp(prefix="lumen_serve_load_")
    threads = os.cpu_count() or 1
    os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
    ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, logging_level="ERROR",
             num_cpus=threads)
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    rows = []
    try:
        for name in args.models.split(","):
            path = os.path.join(tmp, f"{name}.onnx")
            with_symbolic_batch(suite.model_path(suite.SUITE[name]), path)
            check_batches(path)
            feeds = sample_feeds(lumen.load_onnx(path).inputs, 1, seed=1)
            body, headers = binary_request(feeds)
            url = f"http://127.0.0.1:{args.port}/v2/models/{name}/infer"
            for max_batch in map(int, args.max_batch.split(",")):
                for engine in args.engines.split(","):
                    serve.run(serve_app(engine, name, path, max_batch, threads,
                                        args.batch_timeout_ms), name="load",
                              route_prefix="/")
                    asyncio.run(load(url, body, headers, args.clients, 2))  # warm up
                    before = httpx.get(f"http://127.0.0.1:{args.port}/metrics").text
                    lat, failed, elapsed = asyncio.run(
                        load(url, body, headers, args.clients, args.seconds))
                    after = httpx.get(f"http://127.0.0.1:{args.port}/metrics").text
                    (r0, n0), (r1, n1) = batch_stats(before, name), batch_stats(after, name)
                    mean_batch = (r1 - r0) / (n1 - n0) if n1 > n0 else float("nan")
                    lat.sort()
                    rows.append((name, engine, max_batch, len(lat) / elapsed,
                                 1e3 * statistics.median(lat),
                                 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], mean_batch,
                                 failed, len(lat)))
                    print(f"{name:9} {engine:12} max_batch {max_batch}: {rows[-1][3]:7.1f} req/s"
                          f"  p50 {rows[-1][4]:7.1f} ms  p99 {rows[-1][5]:7.1f} ms  mean batch "
                          f"{mean_batch:4.2f}  failed {failed}/{failed + len(lat)}", flush=True)
                    serve.delete("load")
    finally:
        serve.shutdown()
        ray.shutdown()
    print(f"\n{args.clients} clients, {args.seconds:.0f} s per row, 1 replica with {threads} "
          f"threads, binary tensors, batch 1 per request")


if __name__ == "__main__":
    main()
