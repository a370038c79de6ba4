"""Serving Lumen models over HTTP on Ray Serve (``pip install "ray[serve]"``).

* ``lumen serve MODEL`` (see lumen.cli): one machine, a local Ray instance started on loopback, or
  an existing Ray cluster with ``--address``/``RAY_ADDRESS``; KServe's Open Inference Protocol v2
  (``/v2/health/ready``, ``/v2/models/{name}``, ``/v2/models/{name}/infer`` with JSON or binary
  tensors) and Prometheus ``/metrics``.
* ``lumen.serve.deployment(path, **compile_options)``: the model as a Ray Serve application to
  compose into one's own (``handle.infer.remote({"x": array})`` answers ``{"outputs": [...]}``).

Requests to one model that arrive within the batch timeout run as one batch along the batch dim
(lumen.serve.batching); each replica holds one compiled model."""

import os

__all__ = ["deployment", "application", "serve_forever"]


# What a model's entry in a config file (lumen serve --config) may set, besides "path".
MODEL_KEYS = ("max_batch", "batch_timeout_ms", "num_threads", "num_replicas", "num_gpus",
              "backend", "opt_level")


def _replica_options(num_replicas, num_threads, num_gpus, ray_actor_options):
    options = dict(ray_actor_options or {})
    # Ray reserves a CPU per replica by default; a replica using several threads says so, and one
    # on a GPU asks for it (Ray places it on a node that has one).
    options.setdefault("num_cpus", max(1, num_threads) if num_threads else 1)
    if num_gpus:
        options.setdefault("num_gpus", num_gpus)
    return {"num_replicas": num_replicas, "ray_actor_options": options,
            "max_ongoing_requests": 256}


def deployment(path, *, name=None, max_batch=8, batch_timeout_ms=5.0, num_threads=0,
               num_replicas=1, num_gpus=0, ray_actor_options=None, ship_model=None,
               **compile_options):
    """A Ray Serve application (a bound deployment) serving the ONNX model at `path`, compiled in
    each replica with ``compile(num_threads=num_threads, **compile_options)``. `max_batch`
    requests arriving within `batch_timeout_ms` run as one batch (models whose inputs all have a
    symbolic first dim; others run one request at a time). `num_gpus`: GPUs each replica reserves
    (with backend="cuda" or "vulkan": Ray places replicas on nodes with GPUs). Pass it to
    ``serve.run`` or bind it
    into another deployment, whose handle's ``infer.remote(feeds)`` returns ``{"outputs": [arrays],
    "batch": size, ...}`` or ``{"error": message}``; ``metadata.remote()`` gives the inputs and
    outputs.

    `ship_model`: whether the model's files (with external data) go to the replicas through Ray's
    object store, for nodes that do not have `path` (they load a temporary copy); None: when Ray
    is initialized already (`lumen serve` ships). The process calling this owns the copy: Ray
    keeps it while that process lives."""
    import ray
    from ray import serve

    from .app import ModelReplica
    from .shipping import model_package

    name = name or os.path.splitext(os.path.basename(path))[0]
    options = _replica_options(num_replicas, num_threads, num_gpus, ray_actor_options)
    if ship_model is None:
        ship_model = ray.is_initialized()
    # In a list: the replica gets the reference and fetches the files itself.
    shipped = [ray.put(model_package(path))] if ship_model else None
    return serve.deployment(ModelReplica, name=f"model_{name}", **options).bind(
        name, os.path.abspath(path), max_batch, batch_timeout_ms, num_threads, compile_options,
        shipped)


def model_specs(models, **defaults):
    """name -> ONNX path, or -> {"path": ..., and any of MODEL_KEYS}: name -> the keyword
    arguments of deployment() for it, `defaults` filling what an entry leaves out."""
    specs = {}
    for name, entry in models.items():
        entry = {"path": entry} if isinstance(entry, str) else dict(entry)
        unknown = sorted(set(entry) - {"path", *MODEL_KEYS})
        if unknown or "path" not in entry:
            raise ValueError(f"model '{name}': " + (f"unknown keys {', '.join(unknown)}; allowed: "
                                                    f"path, {', '.join(MODEL_KEYS)}" if unknown
                                                    else "no path"))
        specs[name] = {**defaults, **entry}
    return specs


def application(models, *, max_body_bytes=64 << 20, **model_options):
    """The HTTP application for `models` (see model_specs): an ingress and a deployment per
    model, each made by deployment(path, name=name, **options)."""
    from ray import serve

    from .app import Ingress

    handles = {}
    for name, spec in model_specs(models, **model_options).items():
        spec = dict(spec)
        handles[name] = deployment(spec.pop("path"), name=name, **spec)
    # The ingress only parses and forwards (async): it reserves no CPU of the replicas'.
    return serve.deployment(Ingress, name="ingress", max_ongoing_requests=1024,
                            ray_actor_options={"num_cpus": 0}).bind(handles, max_body_bytes)


def serve_forever(models, *, host="127.0.0.1", port=8000, address=None, on_ready=print,
                  **options):
    """Starts Ray (a local instance on loopback unless `address` or RAY_ADDRESS names a
    cluster), serves `models` on host:port until SIGINT or SIGTERM, then shuts down gracefully:
    requests under way are answered first."""
    import signal
    import sys
    import threading

    address = address or os.environ.get("RAY_ADDRESS")
    if not address and "ray" not in sys.modules and not os.environ.get("RAY_AUTH_MODE"):
        # Ray's own processes listen beyond loopback (GCS, raylet, workers, agents): the local
        # instance refuses every process without this random token (Ray reads it on import; the
        # processes it starts inherit it).
        import secrets

        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    import ray
    from ray import serve

    if address:
        # A cluster on loopback (nodes started with --node-ip-address=127.0.0.1) is joined from
        # loopback too; Ray would otherwise look for it at this machine's network address.
        local = address.split("://")[-1].split(":")[0] in ("127.0.0.1", "localhost")
        ray.init(address=address, logging_level="ERROR",
                 **({"_node_ip_address": "127.0.0.1"} if local else {}))
    else:
        # Ray Serve gives its HTTP proxy 5 s to start, which a loaded small machine can miss.
        os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
        # A local instance on loopback, with as many CPUs as the replicas reserve (each its
        # threads) when that is more than the cores: the user chose to oversubscribe.
        option_keys = set(options) & set(MODEL_KEYS)
        specs = model_specs(models, **{k: options[k] for k in option_keys})
        wanted = sum((s.get("num_threads") or 1) * s.get("num_replicas", 1)
                     for s in specs.values())
        ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, logging_level="ERROR",
                 num_cpus=max(os.cpu_count() or 1, wanted))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        # One HTTP proxy, on the head node: the address given is the one that listens (a proxy
        # per node would also take host:port on every other node).
        serve.start(proxy_location="HeadOnly", http_options={"host": host, "port": port})
        serve.run(application(models, **options), name="lumen", route_prefix="/")
        for name in models:
            on_ready(f"serving '{name}' at http://{host}:{port}/v2/models/{name}")
        stop.wait()
    finally:
        serve.shutdown()
        ray.shutdown()
