"""The ``lumen`` command line:

* ``lumen inspect MODEL [--opt-level N] [--json] [--routing] [--dump-passes DIR]``
* ``lumen bench MODEL [--runs N] [--threads N] [--compare onnxruntime[,openvino]] [--profile] [--json FILE]``
* ``lumen serve [MODEL] [--model NAME=PATH ...] [--host H] [--port P] [--replicas N] [--max-batch B]
  [--batch-timeout-ms T] [--address RAY_ADDRESS]``

Subcommands are argparse subparsers, each with a ``run(args)`` function returning the exit status.
Errors a user can cause (missing file, invalid model) print one line to stderr and exit 1, without
a traceback."""

import argparse
import json
import os
import sys

__all__ = ["main"]


class CommandError(Exception):
    """An error to report as one line, without a traceback."""


def _check_model_path(path):
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a directory, not an ONNX model")


def _load(path):
    from . import _onnx

    _check_model_path(path)
    return _onnx.load_onnx(path)


def run_inspect(args):
    model = _load(args.model)
    dump = args.dump_passes or ""
    if dump and dump != "-":
        os.makedirs(dump, exist_ok=True)
    compiled = model.compile(opt_level=args.opt_level, backend=args.backend, dump_passes=dump)
    if args.json:
        json.dump(compiled.report(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.routing:
        from ._inspect import format_routing

        sys.stdout.write(format_routing(compiled.report()))
    else:
        sys.stdout.write(compiled.summary())
    return 0


def _dims(text):
    name, sep, value = text.partition("=")
    if not sep or not name or not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=SIZE with SIZE >= 1, got {text!r}")
    return name, int(value)


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _count(text):
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return int(text)


def _write_json(path, data):
    text = json.dumps(data, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    with open(path, "w") as f:
        f.write(text)


def run_bench(args):
    import numpy as np

    from . import _bench

    _check_model_path(args.model)  # invalid models fail in benchmark(), reported by main()
    inputs = None
    if args.inputs:
        if not os.path.exists(args.inputs):
            raise CommandError(f"{args.inputs}: no such file")
        with np.load(args.inputs) as data:
            inputs = {k: data[k] for k in data.files}
    result = _bench.benchmark(
        args.model, threads=args.threads, backend=args.backend, opt_level=args.opt_level,
        runs=args.runs, warmup=args.warmup, compare=args.compare, memory=not args.no_memory,
        profile_runs=args.profile_runs if args.profile else 0, inputs=inputs,
        dims=dict(args.dim), seed=args.seed, rtol=args.rtol, atol=args.atol,
        progress=not args.no_progress)
    # With --json - the JSON owns stdout and the text report goes to stderr.
    text = sys.stderr if args.json == "-" else sys.stdout
    text.write(_bench.format_result(result))
    if result.profile:
        result.profile.trace_file = os.path.abspath(args.trace)
        with open(args.trace, "w") as f:
            json.dump(result.profile.chrome_trace, f)
        text.write("\n" + _bench.format_profile(result.profile, top=args.top))
        text.write(f"Chrome trace: {args.trace} (open in ui.perfetto.dev or chrome://tracing)\n")
    if args.json:
        _write_json(args.json, result.to_json())
    for peer, checks, agree in (("onnxruntime", result.outputs, result.outputs_agree),
                                ("openvino", result.openvino_outputs,
                                 result.openvino_outputs_agree)):
        if agree is False:
            failed = ", ".join(c.name for c in checks if not c.ok)
            raise CommandError(f"outputs disagree with {peer}: {failed}")
    return 0


def _named_model(text):
    name, sep, path = text.partition("=")
    if not sep or not name or not path or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, path


def run_serve(args):
    import importlib.util

    from . import serve

    # Found, not imported: serve_forever sets Ray's authentication up before Ray is imported.
    if importlib.util.find_spec("ray") is None:
        raise CommandError("serving needs Ray Serve: pip install 'ray[serve]'")
    models = {}
    if args.config:
        try:
            with open(args.config) as f:
                config = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise CommandError(f"{args.config}: {e}") from None
        if not isinstance(config, dict) or not isinstance(config.get("models"), dict):
            raise CommandError(f'{args.config}: expected {{"models": {{NAME: PATH or '
                               f'{{"path": PATH, ...}}}}}}')
        base = os.path.dirname(os.path.abspath(args.config))
        for name, entry in config["models"].items():
            entry = {"path": entry} if isinstance(entry, str) else dict(entry)
            if isinstance(entry.get("path"), str):  # relative to the config file
                entry["path"] = os.path.join(base, entry["path"])
            models[name] = entry
    models.update(dict(args.named or []))
    if args.model:
        models.setdefault(os.path.splitext(os.path.basename(args.model))[0], args.model)
    if not models:
        raise CommandError("no model: give MODEL, --model NAME=PATH or --config FILE")
    cores = os.cpu_count() or 1
    defaults = {"max_batch": args.max_batch, "batch_timeout_ms": args.batch_timeout_ms,
                "num_threads": args.threads or max(1, cores // args.replicas),
                "num_replicas": args.replicas, "num_gpus": args.gpus_per_replica}
    if args.backend:
        defaults["backend"] = args.backend
    try:
        specs = serve.model_specs(models, **defaults)
    except ValueError as e:
        raise CommandError(str(e)) from None
    for spec in specs.values():
        _check_model_path(spec["path"])
        spec["path"] = os.path.abspath(spec["path"])
    serve.serve_forever(specs, host=args.host, port=args.port, address=args.address,
                        max_body_bytes=args.max_body_mb << 20,
                        on_ready=lambda line: print(line, flush=True))
    return 0


def build_parser():
    from ._bench import ATOL, RTOL

    parser = argparse.ArgumentParser(prog="lumen", description="Lumen inference runtime tools.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    inspect = commands.add_parser(
        "inspect", help="show what optimizing and compiling a model does",
        description="Optimize and compile an ONNX model, then print op counts before/after, "
                    "each pass and its rewrites, fused groups, the memory plan and the backend "
                    "and kernel dtype of every step.")
    inspect.add_argument("model", metavar="MODEL", help="path to an .onnx file")
    inspect.add_argument("--opt-level", type=int, default=2, choices=(0, 1, 2),
                         help="optimization level (default: 2)")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.add_argument("--dump-passes", metavar="DIR",
                         help="write the graph after each pass that changed it into DIR "
                              "('-' for stderr)")
    inspect.add_argument("--backend", default="",
                         help="force every node onto one backend (cpu, reference)")
    inspect.add_argument("--routing", action="store_true",
                         help="print only where each step runs and why")
    inspect.set_defaults(run=run_inspect)

    bench = commands.add_parser(
        "bench", help="time a model, optionally against onnxruntime",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compile an ONNX model, warm it up, then time it and print min / median / "
                    "p90 / p99 latency, throughput, compile time, first-run time and peak "
                    "memory.",
        epilog="""\
Figures:
  compile     lumen: load_onnx + compile; onnxruntime: InferenceSession creation
  first run   the first run after compiling
  throughput  inferences per second, one run at a time (1000 / mean ms)
  peak memory what loading, compiling and 3 runs add to a fresh Python process that
              has already imported both engines and the inputs (VmHWM minus the RSS
              before loading), measured for each engine in its own child process
              (Linux only); the planned arena of intermediates is printed too
  GFLOP       2 x multiply-accumulates of Conv, ConvTranspose, MatMul and Gemm only

Inputs are random with a fixed seed (float: standard normal; integer ids that index
an embedding: below its row count; other integers: ones); symbolic dims are 1 unless
set with --dim. With --compare the timed runs alternate lumen / onnxruntime (same
inputs, intra-op threads = --threads, inter-op 1, all graph optimizations) and every
output must satisfy |lumen - ort| <= atol * max|ort| + rtol * |ort|. --compare openvino
(or onnxruntime,openvino) adds OpenVINO's CPU plugin: same threads, latency hint, float32.

Exit status: 0, or 1 on an error or when the outputs disagree.""")
    bench.add_argument("model", metavar="MODEL", help="path to an .onnx file")
    bench.add_argument("--runs", type=_positive, default=None,
                       help="timed runs per engine (default: about 5 s worth, 10 to 1000)")
    bench.add_argument("--warmup", type=_count, default=3,
                       help="untimed runs per engine before timing (default: 3)")
    bench.add_argument("--threads", type=_positive, default=None,
                       help="threads for both engines (default: all cores)")
    bench.add_argument("--backend", default="",
                       help="force every node onto one lumen backend (cpu, reference)")
    bench.add_argument("--opt-level", type=int, default=2, choices=(0, 1, 2),
                       help="lumen optimization level (default: 2)")
    bench.add_argument("--compare", metavar="ENGINE[,ENGINE]",
                       help="also run the model with onnxruntime and/or openvino (comma-separated), "
                            "alternating runs, and check that the outputs agree")
    bench.add_argument("--rtol", type=float, default=RTOL,
                       help="relative tolerance of the output check (default: %(default)g)")
    bench.add_argument("--atol", type=float, default=ATOL,
                       help="absolute tolerance, times the output's largest magnitude "
                            "(default: %(default)g)")
    bench.add_argument("--no-memory", action="store_true",
                       help="skip the peak-memory child processes")
    bench.add_argument("--json", metavar="FILE",
                       help="also write the results as JSON ('-' for stdout; the text report "
                            "then goes to stderr)")
    bench.add_argument("--profile", action="store_true",
                       help="time every lumen step over extra runs: print the slowest nodes and "
                            "the time per op type, and write a Chrome trace")
    bench.add_argument("--profile-runs", type=_positive, default=10,
                       help="profiled runs (default: 10)")
    bench.add_argument("--trace", metavar="FILE", default="lumen_trace.json",
                       help="where --profile writes the Chrome trace (default: %(default)s)")
    bench.add_argument("--top", type=_positive, default=20,
                       help="nodes in the --profile table (default: 20)")
    bench.add_argument("--inputs", metavar="NPZ",
                       help="an .npz file of input arrays by name, used instead of random ones")
    bench.add_argument("--dim", type=_dims, action="append", default=[], metavar="NAME=SIZE",
                       help="size of a symbolic input dimension (repeatable; default 1)")
    bench.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    bench.add_argument("--no-progress", action="store_true",
                       help="no progress bar (it is only drawn on a terminal anyway)")
    bench.set_defaults(run=run_bench)

    serve = commands.add_parser(
        "serve", help="serve models over HTTP (Open Inference Protocol v2) on Ray Serve",
        description="Serve ONNX models over HTTP with KServe's Open Inference Protocol v2 "
                    "(GET /v2/health/ready, GET /v2/models/NAME, POST /v2/models/NAME/infer with "
                    "JSON or binary tensors) and Prometheus metrics at /metrics, on Ray Serve: a "
                    "local Ray instance on loopback, or the cluster --address or RAY_ADDRESS "
                    "names. Requests arriving within the batch timeout run as one batch. Stops "
                    "on SIGINT/SIGTERM after answering the requests under way.")
    serve.add_argument("model", metavar="MODEL", nargs="?",
                       help="path to an .onnx file, served under its file name's stem")
    serve.add_argument("--model", dest="named", type=_named_model, action="append",
                       metavar="NAME=PATH", help="a model to serve under NAME (repeatable)")
    serve.add_argument("--config", metavar="FILE",
                       help='a JSON file {"models": {NAME: {"path": PATH, "max_batch": 16, '
                            '"batch_timeout_ms": 2, "num_replicas": 2, "num_threads": 1, '
                            '"num_gpus": 0, "backend": "cpu", "opt_level": 2}}}: per-model '
                            "settings; the options below fill what an entry leaves out")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default: %(default)s, loopback only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: %(default)s)")
    serve.add_argument("--replicas", type=_positive, default=1,
                       help="replicas per model, each holding a compiled copy (default: 1)")
    serve.add_argument("--threads", type=_positive, default=None,
                       help="CPU threads per replica (default: the cores / replicas)")
    serve.add_argument("--max-batch", type=_positive, default=8,
                       help="requests per batch at most (default: %(default)s; 1: no batching)")
    serve.add_argument("--batch-timeout-ms", type=float, default=5.0,
                       help="how long a batch waits for more requests (default: %(default)s)")
    serve.add_argument("--gpus-per-replica", type=float, default=0,
                       help="GPUs each replica reserves: Ray places it on a node with them")
    serve.add_argument("--backend", default="",
                       help="lumen backend (default: auto; cpu, vulkan, ... pin one)")
    serve.add_argument("--max-body-mb", type=_positive, default=64,
                       help="largest request body in MiB; larger ones get a 413 (default: 64)")
    serve.add_argument("--address", default=None,
                       help="a Ray cluster to deploy onto (ray://HOST:PORT or HOST:PORT; default: "
                            "RAY_ADDRESS, else a local instance)")
    serve.set_defaults(run=run_serve)
    return parser



def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CommandError as e:
        print(f"lumen {args.command}: error: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"lumen {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `lumen inspect m.onnx | head`: stop quietly; point stdout at devnull so the
        # interpreter's final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RuntimeError, OSError, ValueError, TypeError) as e:
        # lumen.Error is a RuntimeError: invalid or unsupported models land here.
        message = str(e).strip() or type(e).__name__
        subject = getattr(args, "model", None)
        prefix = f"{subject}: " if subject and subject not in message else ""
        print(f"lumen {args.command}: error: {prefix}{message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
