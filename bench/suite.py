"""Lumen vs onnxruntime on the benchmark suite (bench/models.py), at each thread count.

    PYTHONPATH=build/python .venv/bin/python bench/suite.py [--threads 1,2] [--models REGEX,...]
        [--runs N] [--quick] [--json FILE] [--peak-gflops G[,G2]] [--check] [--zoo [DIR]]

With --zoo the rows are the model zoo's exported models instead (bench/zoo.py export: public
architectures, their saved inputs), each with the op type that takes most of Lumen's time.

Every model runs in this process through lumen._bench.benchmark: same random inputs for both
engines, warm-up, then timed runs alternating Lumen / onnxruntime; the outputs must agree. The
table has the median latencies, their ratio, Lumen's GFLOP/s and its share of the machine's FP32
peak, measured by build/tools/lumen_peak_flops for the row's thread count (FMA chains in registers,
widest ISA, best of 5 trials). Below each table: the geometric mean of the ratios and the
element-wise chain's time per node (dispatch overhead).

Exit status 1 when a model fails in either engine or the outputs disagree; with --check also when
an acceptance target is missed (at the largest thread count: outputs agree, no step on the reference
backend, geomean ratio <= 1, no model above 1.3, gemm4096 >= 85% of peak, chain time per node <=
onnxruntime's).
"""

import argparse
import gc
import json
import math
import os
import re
import subprocess
import sys
import time

import lumen
from lumen import _bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402  (bench/models.py, next to this file)

ZOO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".zoo")


class ZooEntry:
    """A zoo model as a suite entry: its file, and the inputs zoo.py saved beside it."""

    def __init__(self, path):
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.path = path
        self.nodes = None
        self.heavy = False

    def inputs(self):
        import numpy as np

        saved = np.load(os.path.splitext(self.path)[0] + ".npz")
        return {k[len("in:"):]: saved[k] for k in saved.files if k.startswith("in:")}


def zoo_entries(directory, patterns):
    import glob

    entries = [ZooEntry(p) for p in sorted(glob.glob(os.path.join(directory, "*.onnx")))]
    if patterns:
        regexes = [re.compile(p) for p in patterns.split(",")]
        entries = [e for e in entries if any(r.search(e.name) for r in regexes)]
    return entries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEAK_TOOL = os.path.join(ROOT, "build", "tools", "lumen_peak_flops")
GEMM_TARGET = 0.85  # of peak, for gemm4096
MAX_RATIO = 1.3  # no model slower than this times onnxruntime


def measure_peak(tool, threads):
    """{threads: GFLOP/s} and the ISA from lumen_peak_flops, or None if it cannot run. One
    thread is always measured too, to tell a busy machine (see busy_warning)."""
    if not os.path.exists(tool):
        return None
    counts = sorted({1, *threads})
    proc = subprocess.run([tool, "--threads", ",".join(map(str, counts))], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        print(f"suite: {tool} failed: {proc.stderr.strip()}", file=sys.stderr)
        return None
    data = json.loads(proc.stdout)
    return {"isa": data["isa"], "source": tool,
            "gflops": {r["threads"]: r["gflops"] for r in data["results"]}}


def busy_warning(peak):
    """A warning when the peak does not grow with the threads as it should on idle cores: other
    processes then take CPU time and every figure of this run is suspect."""
    one = peak["gflops"].get(1)
    for threads, gflops in peak["gflops"].items():
        if threads > 1 and one and gflops < 0.8 * threads * one:
            return (f"warning: the peak at {threads} threads is only {gflops / one:.2f}x the "
                    f"1-thread peak: the machine looks busy (load average "
                    f"{os.getloadavg()[0]:.1f}); pass --peak-gflops to set the peak")
    return None


def select(patterns, quick):
    chosen = [m for m in models.SUITE.values() if not (quick and m.heavy)]
    if patterns:
        regexes = [re.compile(p) for p in patterns.split(",")]
        chosen = [m for m in chosen if any(r.search(m.name) for r in regexes)]
    return chosen


def run_one(entry, path, threads, args):
    """One table row: the benchmark's figures, or the error that stopped it."""
    row = {"model": entry.name, "threads": threads, "error": None}
    zoo = isinstance(entry, ZooEntry)
    try:
        peers = "onnxruntime,openvino" if args.openvino else "onnxruntime"
        result = _bench.benchmark(path, threads=threads, compare=peers, runs=args.runs,
                                  warmup=args.warmup, memory=False, progress=True,
                                  inputs=entry.inputs() if zoo else None,
                                  profile_runs=5 if zoo else 0)
    except Exception as e:  # a failing model is a row, not the end of the suite
        row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
        return row
    lumen_ms = result.lumen.latency.median_ms
    ort_ms = result.onnxruntime.latency.median_ms
    row.update(gflop=result.gflop, lumen_ms=lumen_ms, ort_ms=ort_ms, ratio=lumen_ms / ort_ms,
               lumen_gflops=result.gflop / (lumen_ms / 1e3) if result.gflop else None,
               outputs_agree=result.outputs_agree,
               reference_steps=result.steps_per_backend.get("reference", 0),
               max_rel=max((c.max_rel for c in result.outputs), default=None),
               result=result.to_json())
    if result.openvino:
        ov_ms = result.openvino.latency.median_ms
        row.update(ov_ms=ov_ms, ov_ratio=lumen_ms / ov_ms,
                   ov_outputs_agree=result.openvino_outputs_agree)
    if result.profile and result.profile.ops:
        top = result.profile.ops[0]
        row["slowest_op"] = f"{top['op']} {top['percent']:.0f}%"
    if entry.nodes:
        row["lumen_us_per_node"] = lumen_ms * 1e3 / entry.nodes
        row["ort_us_per_node"] = ort_ms * 1e3 / entry.nodes
    return row


def _num(value, spec):
    """``value`` formatted by ``spec``, or a dash as wide as the spec asks."""
    width = re.match(r"\d*", spec).group()
    return f"{'-':>{width or 1}s}" if value is None else format(value, spec)


NAME_WIDTH = 14  # zoo names (resnet50.dynamo.opset18) are wider: see main


def header():
    return (f"{'model':{NAME_WIDTH}s} {'GFLOP':>7s} {'lumen ms':>9s} {'ort ms':>9s} "
            f"{'ratio':>6s} {'GFLOP/s':>8s} {'% peak':>6s}  outputs")


def format_row(row, peak):
    if row["error"]:
        return f"{row['model']:{NAME_WIDTH}s} ERROR {row['error']}"
    percent = 100 * row["lumen_gflops"] / peak if row["lumen_gflops"] and peak else None
    agree = "ok" if row["outputs_agree"] else "DISAGREE"
    if row["reference_steps"]:
        agree += f", {row['reference_steps']} steps on the reference backend"
    slowest = f"  slowest: {row['slowest_op']}" if row.get("slowest_op") else ""
    openvino = ""
    if "ov_ms" in row:
        openvino = (f"  openvino {row['ov_ms']:.3f} ms, ratio {row['ov_ratio']:.2f}"
                    f"{'' if row['ov_outputs_agree'] else ' DISAGREE'}")
    return (f"{row['model']:{NAME_WIDTH}s} {_num(row['gflop'], '7.2f')} {row['lumen_ms']:9.3f} "
            f"{row['ort_ms']:9.3f} {row['ratio']:6.2f} {_num(row['lumen_gflops'], '8.1f')} "
            f"{_num(percent, '6.1f')}  {agree} (max rel {_num(row['max_rel'], '.1e')}){slowest}"
            f"{openvino}")


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summarize(rows, threads, peak):
    """The lines under a table and the figures the acceptance targets read."""
    ok = [r for r in rows if not r["error"]]
    summary = {"geomean_ratio": geomean([r["ratio"] for r in ok]),
               "worst": max(((r["ratio"], r["model"]) for r in ok), default=None),
               "all_agree": bool(rows) and len(ok) == len(rows) and
               all(r["outputs_agree"] for r in ok),
               "no_reference": bool(ok) and not any(r["reference_steps"] for r in ok)}
    lines = [f"geometric mean of ratios (lumen / onnxruntime, {len(ok)} models): "
             f"{_num(summary['geomean_ratio'], '.3f')}"]
    with_ov = [r for r in ok if "ov_ratio" in r]
    if with_ov:
        summary["geomean_ratio_openvino"] = geomean([r["ov_ratio"] for r in with_ov])
        summary["worst_openvino"] = max((r["ov_ratio"], r["model"]) for r in with_ov)
        summary["all_agree_openvino"] = all(r["ov_outputs_agree"] for r in with_ov)
        lines.append(f"geometric mean of ratios (lumen / openvino, {len(with_ov)} models): "
                     f"{_num(summary['geomean_ratio_openvino'], '.3f')}")
    for r in ok:
        if "lumen_us_per_node" in r:
            summary["chain_us_per_node"] = (r["lumen_us_per_node"], r["ort_us_per_node"])
            lines.append(f"{r['model']}: {r['lumen_us_per_node']:.3f} us per node (onnxruntime "
                         f"{r['ort_us_per_node']:.3f})")
        if r["model"] == "gemm4096" and peak and r["lumen_gflops"]:
            summary["gemm4096_peak"] = r["lumen_gflops"] / peak
            lines.append(f"gemm4096: {r['lumen_gflops']:.1f} GFLOP/s = "
                         f"{100 * r['lumen_gflops'] / peak:.1f}% of the {peak:.1f} GFLOP/s "
                         f"peak at {threads} threads (target {100 * GEMM_TARGET:.0f}%)")
    return lines, summary


def acceptance(summary):
    """(description, passed or None when not measured) for the suite's targets."""
    g = summary.get("geomean_ratio")
    chain = summary.get("chain_us_per_node")
    gemm = summary.get("gemm4096_peak")
    worst = summary.get("worst")
    return [("outputs agree with onnxruntime on every model", summary.get("all_agree")),
            ("no step on the reference backend (a test oracle, never placed automatically)",
             summary.get("no_reference")),
            ("geometric-mean ratio <= 1.0", None if g is None else g <= 1.0),
            (f"no model above {MAX_RATIO}" +
             ("" if worst is None else f" (slowest: {worst[1]} at {worst[0]:.2f})"),
             None if worst is None else worst[0] <= MAX_RATIO),
            (f"gemm4096 >= {100 * GEMM_TARGET:.0f}% of peak",
             None if gemm is None else gemm >= GEMM_TARGET),
            ("chain dispatch per node <= onnxruntime's",
             None if chain is None else chain[0] <= chain[1])]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="models: " + ", ".join(models.SUITE))
    p.add_argument("--threads", default="1,2",
                   help="comma-separated thread counts (default: 1,2)")
    p.add_argument("--models", metavar="REGEX,...",
                   help="only models whose name matches one of these regular expressions")
    p.add_argument("--runs", type=int, default=None,
                   help="timed runs per engine and model (default: about 5 s worth, 10 to 1000)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up runs per engine (default: 3)")
    p.add_argument("--quick", action="store_true",
                   help="3 runs, 1 warm-up, and without the heavy models (vgg19, bert_base, "
                        "gemm4096)")
    p.add_argument("--json", metavar="FILE", help="write every row and summary as JSON")
    p.add_argument("--peak-gflops", metavar="G[,G2...]",
                   help="the FP32 peak per thread count, in --threads order (default: measured "
                        f"by {os.path.relpath(PEAK_TOOL, ROOT)})")
    p.add_argument("--peak-tool", default=PEAK_TOOL, help="the peak-FLOPS program to run")
    p.add_argument("--check", action="store_true",
                   help="exit 1 as well when an acceptance target is missed")
    p.add_argument("--zoo", nargs="?", const=ZOO_DIR, metavar="DIR",
                   help="benchmark the model zoo's models (default folder: bench/.zoo, made by "
                        "bench/zoo.py export) instead of the suite")
    p.add_argument("--openvino", action="store_true",
                   help="run OpenVINO's CPU plugin too (same threads, latency hint, float32): a "
                        "ratio and geometric mean against it beside onnxruntime's")
    p.add_argument("--cache", default=models.CACHE_DIR,
                   help="where generated models are cached (default: bench/.models)")
    args = p.parse_args(argv)
    try:
        thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        p.error(f"--threads: expected comma-separated integers, got {args.threads!r}")
    if args.quick:
        args.runs, args.warmup = args.runs or 3, min(args.warmup, 1)
    global NAME_WIDTH
    chosen = zoo_entries(args.zoo, args.models) if args.zoo else select(args.models, args.quick)
    NAME_WIDTH = max([NAME_WIDTH] + [len(m.name) for m in chosen])
    if not chosen:
        p.error(f"no {'zoo' if args.zoo else 'suite'} model matches {args.models!r}")

    if args.peak_gflops:
        try:
            values = [float(v) for v in args.peak_gflops.split(",")]
        except ValueError:
            p.error(f"--peak-gflops: expected comma-separated numbers, got {args.peak_gflops!r}")
        if len(values) != len(thread_counts):
            p.error("--peak-gflops needs one value per --threads entry")
        peak = {"isa": "given", "source": "--peak-gflops",
                "gflops": dict(zip(thread_counts, values))}
    else:
        peak = measure_peak(args.peak_tool, thread_counts)
    if peak:
        print("FP32 peak (" + peak["source"] + ", " + peak["isa"] + "): " +
              ", ".join(f"{t} threads {g:.1f} GFLOP/s" for t, g in peak["gflops"].items()))
        warning = busy_warning(peak)
        if warning:
            print(warning)
    else:
        print("FP32 peak unknown: build lumen_peak_flops or pass --peak-gflops")

    paths = {}
    for entry in chosen:
        try:
            start = time.perf_counter()
            paths[entry.name] = (entry.path if isinstance(entry, ZooEntry) else
                                 models.model_path(entry, args.cache))
            if time.perf_counter() - start > 1:
                print(f"built {paths[entry.name]} ({time.perf_counter() - start:.0f} s)",
                      file=sys.stderr)
        except Exception as e:
            paths[entry.name] = e

    report = {"machine": {**_bench._machine(), "load_average": os.getloadavg()}, "peak": peak, "lumen": lumen.__version__,
              "settings": {"runs": args.runs, "warmup": args.warmup, "models": [m.name for m in
                                                                                 chosen]},
              "threads": {}}
    failed = False
    for threads in thread_counts:
        peak_gflops = peak["gflops"].get(threads) if peak else None
        print(f"\n{threads} thread{'s' if threads > 1 else ''}: median latency; GFLOP counts Conv, "
              "ConvTranspose, MatMul and Gemm only; ratio = lumen / onnxruntime")
        print(header())
        rows = []
        for entry in chosen:
            path = paths[entry.name]
            if isinstance(path, Exception):
                row = {"model": entry.name, "threads": threads,
                       "error": f"cannot build the model: {path}"}
            else:
                row = run_one(entry, path, threads, args)
            gc.collect()
            rows.append(row)
            failed |= bool(row["error"]) or not row.get("outputs_agree", False)
            print(format_row(row, peak_gflops), flush=True)
        lines, summary = summarize(rows, threads, peak_gflops)
        print("\n".join(lines))
        report["threads"][str(threads)] = {"rows": rows, "summary": summary,
                                           "peak_gflops": peak_gflops}

    final = report["threads"][str(max(thread_counts))]["summary"]
    targets = acceptance(final)
    print(f"\nacceptance at {max(thread_counts)} threads:")
    for text, passed in targets:
        print(f"  {'not measured' if passed is None else 'PASS' if passed else 'FAIL':12s} {text}")
    report["acceptance"] = [{"target": t, "passed": ok} for t, ok in targets]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        print(f"wrote {args.json}")
    if args.check and any(passed is False for _, passed in targets):
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
