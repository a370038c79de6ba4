"""The Ray Serve deployments behind `lumen serve`: a replica per compiled model (ModelReplica, with
its own dynamic batcher) and one HTTP ingress (FastAPI) speaking the Open Inference Protocol v2 and
exposing /metrics."""

import asyncio
import time

import numpy as np

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from ray import serve

from . import batching, protocol, shipping
from .metrics import ServeMetrics


class ModelReplica:
    """One compiled model. infer(feeds) -> {"outputs": [arrays], "batch", "leader", "queue_s",
    "run_s"} or {"error": message}; requests arriving within the batch timeout run together."""

    def __init__(self, name, path, max_batch=8, batch_timeout_ms=5.0, num_threads=0,
                 compile_options=None, shipped=None):
        import ray

        package = ray.get(shipped[0]) if shipped else None
        path, copy = shipping.local_model(path, package)
        del package
        try:
            self._load(name, path, max_batch, batch_timeout_ms, num_threads, compile_options)
        finally:
            if copy is not None:  # the model is in memory now
                copy.cleanup()
        self._warm_up()

    def _load(self, name, path, max_batch, batch_timeout_ms, num_threads, compile_options):
        import lumen

        model = lumen.load_onnx(path)
        self.name = name
        options = dict(compile_options or {})
        # A plan per batch size a batch may have (Lumen plans each input-shape signature).
        options.setdefault("shape_cache_capacity", max(8, int(max_batch) + 1))
        self.compiled = self._compile(model, path, num_threads, options)
        if max_batch > 1 and not batching.batchable(model.inputs):
            # Exported with a batch of 1: a variant with a symbolic batch dim, where it gives the
            # same answers.
            variant = batching.symbolic_batch_variant(
                path, model.inputs, self.compiled,
                lambda m: self._compile(m, path, num_threads, options))
            if variant:
                model, self.compiled = variant
        self.inputs, self.outputs = model.inputs, model.outputs
        self.max_batch = max(1, int(max_batch)) if batching.batchable(self.inputs) else 1
        self._timeout = max(0.0, batch_timeout_ms) / 1000
        self._queue = None

    def _compile(self, model, path, num_threads, compile_options):
        """What runs the requests: run(feeds) -> list of arrays (an engine to compare against
        overrides it; bench/serve_load.py)."""
        return model.compile(num_threads=num_threads, **compile_options)

    def _warm_up(self):
        """Runs each batch size up to 16 twice on sample inputs, where every other dim is known:
        the plans for them are made before the first request, not during it."""
        if not self.inputs or any(not i["shape"] or not all(isinstance(n, int) for n in
                                                            i["shape"][1:]) for i in self.inputs):
            return
        rng = np.random.default_rng(0)
        try:
            for size in range(1, min(self.max_batch, 16) + 1):
                feeds = batching.sample_feeds(self.inputs, size, rng)
                for _ in range(2):
                    self.compiled.run(feeds)
        except Exception:  # noqa: BLE001 - samples may be invalid input: requests will tell
            return

    def metadata(self):
        return {"inputs": self.inputs, "outputs": self.outputs, "max_batch": self.max_batch}

    async def infer(self, feeds):
        loop = asyncio.get_running_loop()
        if self._queue is None:  # made on the loop requests arrive on
            self._queue = asyncio.Queue()
            self._consumer = loop.create_task(self._batches())
        future = loop.create_future()
        self._queue.put_nowait((time.perf_counter(), feeds, future))
        return await future

    # The batcher: the first waiting request starts a batch, which takes every request queued
    # meanwhile and those arriving within the timeout, up to max_batch; the next batch starts when
    # this one has run, with everything that queued during the run. (Ray Serve's @serve.batch was
    # measured here first: under load it ran batches of 1.6 requests while requests waited 1.4 s
    # in the replica; this one runs full batches.)
    async def _batches(self):
        while True:
            items = [await self._queue.get()]
            deadline = time.perf_counter() + self._timeout
            while len(items) < self.max_batch:
                if not self._queue.empty():
                    items.append(self._queue.get_nowait())
                    continue
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    items.append(await asyncio.wait_for(self._queue.get(), remaining))
                except asyncio.TimeoutError:
                    break
            try:
                # Off the event loop (Lumen releases the GIL while it runs): requests go on queueing.
                results = await asyncio.to_thread(self._run_items, [(t, f) for t, f, _ in items])
            except Exception as e:  # noqa: BLE001 - a bug here must not leave requests hanging
                results = [{"error": f"{type(e).__name__}: {e}"}] * len(items)
            for (_, _, future), result in zip(items, results):
                if not future.done():  # a request whose client went away is cancelled
                    future.set_result(result)

    def _run_items(self, items):
        requests = [feeds for _, feeds in items]
        results = [None] * len(items)
        for group in batching.groups(requests, self.max_batch):
            start = time.perf_counter()
            parts = None
            if len(group) > 1:
                try:
                    outputs = self.compiled.run(batching.concatenate([requests[i] for i in group]))
                    parts = batching.split(outputs, [batching.batch_size(requests[i])
                                                     for i in group])
                except Exception:  # noqa: BLE001 - run them one by one: each gets its own error
                    parts = None
            if parts is None:
                parts = [self._run_one(requests[i]) for i in group]
            run_s = time.perf_counter() - start
            for k, i in enumerate(group):
                if isinstance(parts[k], str):
                    results[i] = {"error": parts[k]}
                else:
                    # Copies: a slice of a batch's output (or a view of Lumen's memory) would
                    # carry all of it along to the ingress.
                    outputs = [p.copy() if isinstance(p, np.ndarray) else p for p in parts[k]]
                    results[i] = {"outputs": outputs, "batch": len(group),
                                  "leader": k == 0, "queue_s": start - items[i][0],
                                  "run_s": run_s}
        return results

    def _run_one(self, feeds):
        try:
            return self.compiled.run(feeds)
        except Exception as e:  # noqa: BLE001 - answered as a 500 naming the error
            return f"{type(e).__name__}: {e}"


def _error(status, message):
    return JSONResponse({"error": message}, status_code=status)


http = FastAPI(title="lumen serve")


@serve.ingress(http)
class Ingress:
    """The HTTP front: routes requests to the model replicas' handles."""

    def __init__(self, handles, max_body_bytes=64 << 20):
        self.handles = handles
        self.max_body_bytes = max_body_bytes
        self.meta = {}
        self.metrics = ServeMetrics()

    async def _metadata(self, name):
        if name not in self.meta:
            self.meta[name] = await self.handles[name].metadata.remote()
        return self.meta[name]

    def _unknown(self, name):
        return _error(404, f"unknown model '{name}'; served: {', '.join(sorted(self.handles))}")

    @http.get("/v2")
    async def server_metadata(self):
        import lumen

        return {"name": "lumen", "version": lumen.__version__,
                "extensions": ["binary_tensor_data"]}

    @http.get("/v2/health/live")
    async def live(self):
        return {"live": True}

    @http.get("/v2/health/ready")
    async def ready(self):
        for name in self.handles:
            await self._metadata(name)
        return {"ready": True}

    @http.get("/v2/models/{name}")
    async def model_metadata(self, name: str):
        if name not in self.handles:
            return self._unknown(name)
        meta = await self._metadata(name)
        return protocol.model_metadata(name, meta["inputs"], meta["outputs"])

    @http.get("/v2/models/{name}/ready")
    async def model_ready(self, name: str):
        if name not in self.handles:
            return self._unknown(name)
        await self._metadata(name)
        return {"name": name, "ready": True}

    @http.post("/v2/models/{name}/infer")
    async def infer(self, name: str, request: Request):
        start = time.perf_counter()
        if name not in self.handles:
            return self._unknown(name)
        try:
            meta = await self._metadata(name)
            body = await self._body(request)
            request_id, feeds, wanted, binary = protocol.decode_infer_request(
                body, request.headers.get(protocol.HEADER_LENGTH), meta["inputs"])
            names = [o["name"] for o in meta["outputs"]]
            for o in wanted or []:
                if o not in names:
                    raise protocol.RequestError(f"unknown output '{o}'; the model's outputs: "
                                                f"{', '.join(names)}")
        except protocol.RequestError as e:
            self.metrics.answered(name, e.status, time.perf_counter() - start, "bad_request")
            return _error(e.status, str(e))
        try:
            result = await self.handles[name].infer.remote(feeds)
        except Exception as e:  # noqa: BLE001 - a replica lost mid-request: retrying is safe
            self.metrics.answered(name, 503, time.perf_counter() - start, "replica")
            return _error(503, f"model '{name}': the replica running the request was lost "
                               f"({type(e).__name__}); retry")
        if "error" in result:
            self.metrics.answered(name, 500, time.perf_counter() - start, "run")
            return _error(500, f"model '{name}' failed: {result['error']}")
        if result["leader"]:
            self.metrics.ran(name, result["batch"], result["queue_s"], result["run_s"])
        selected = [(n, a) for n, a in zip(names, result["outputs"]) if wanted is None or
                    n in wanted]
        content, headers = protocol.encode_infer_response(name, request_id, selected, binary)
        self.metrics.answered(name, 200, time.perf_counter() - start)
        return Response(content, headers=headers)

    @http.get("/metrics")
    async def metrics(self):
        return Response(self.metrics.text(), media_type="text/plain; version=0.0.4")

    async def _body(self, request):
        """The body, refused with a 413 past the limit (before reading when the length says so)."""
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            raise protocol.RequestError(f"the body is {length} bytes, over the limit of "
                                        f"{self.max_body_bytes}", status=413)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise protocol.RequestError(f"the body is over the limit of {self.max_body_bytes} "
                                            "bytes", status=413)
            chunks.append(chunk)
        return b"".join(chunks)
