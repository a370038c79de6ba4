"""Benchmarking one ONNX model with Lumen, alone or side by side with onnxruntime.

``benchmark(path, ...)`` returns a :class:`BenchResult` (``dataclasses.asdict`` gives its JSON
form); ``lumen bench`` and ``bench/suite.py`` are thin layers over it. How the figures are taken:

* Inputs are random with a fixed seed, built from the model's input dtypes and shapes (symbolic
  dimensions are 1 unless given); integer inputs that index an embedding table (a Gather on an
  initializer) get ids below the table's row count, other integer inputs are ones. Both engines
  get the same arrays.
* Compile time is ``load_onnx`` + ``compile`` for Lumen and ``InferenceSession`` creation for
  onnxruntime (both read the file); first-run time is the first run after that.
* After warm-up the timed runs alternate Lumen, onnxruntime, Lumen, ... so machine drift (other
  processes, clock changes) hits both engines alike. onnxruntime runs with intra-op threads =
  ``threads``, inter-op 1, sequential execution, all graph optimizations, and its workers stop
  spinning when a run ends (see _OrtEngine).
* Peak memory is measured per engine in a child process (see ``measure_peak_memory``), because two
  engines in one process cannot be told apart by RSS.
* GFLOP counts 2 x the multiply-accumulates of Conv, ConvTranspose, MatMul and Gemm only.
"""

import collections
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BenchResult", "EngineResult", "Latency", "OutputCheck", "Profile", "benchmark",
           "make_inputs", "count_gflop", "compare_outputs", "profile_lumen", "chrome_trace",
           "measure_peak_memory", "format_result", "format_profile", "default_threads",
           "RTOL", "ATOL"]

# Output agreement: |lumen - ort| <= ATOL * scale + RTOL * |ort| element-wise, where scale is the
# largest magnitude of the onnxruntime output (so atol follows the output's units).
RTOL = 1e-3
ATOL = 1e-4

_MIB = float(1 << 20)


def default_threads():
    """The cores this process may run on (what ``num_threads=0`` means to both engines)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# --- Results ---------------------------------------------------------------------------------

@dataclass
class Latency:
    """Statistics of the timed runs, in milliseconds; throughput is inferences per second over
    back-to-back single runs (1000 / mean)."""
    runs: int
    min_ms: float
    median_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    throughput: float

    @classmethod
    def from_seconds(cls, times):
        ms = np.asarray(times, dtype=np.float64) * 1e3
        return cls(runs=len(ms), min_ms=float(ms.min()), median_ms=float(np.median(ms)),
                   p90_ms=float(np.percentile(ms, 90)), p99_ms=float(np.percentile(ms, 99)),
                   mean_ms=float(ms.mean()), throughput=float(1e3 / ms.mean()))


@dataclass
class EngineResult:
    engine: str
    version: str
    compile_ms: float
    first_run_ms: float
    latency: Latency = None
    peak_memory_mib: float = None  # peak RSS over the baseline of a child process; None if off


@dataclass
class OutputCheck:
    """One output compared between the engines; max_rel is max_abs over the output's scale."""
    name: str
    shape: list
    dtype: str
    max_abs: float
    max_rel: float
    ok: bool
    problem: str = ""  # a shape/dtype mismatch, NaNs in one engine only
    lumen_name: str = ""  # set when Lumen names this output differently (paired by position)
    tied_rows: int = 0  # rows that agree in another order, among tied scores (match_tied_rows)


@dataclass
class Profile:
    """Lumen's per-step times over ``runs`` profiled runs: each node's time in a run (all its
    calls), the median over the runs; ``mean_ms`` is that per call."""
    runs: int
    total_ms: float  # median of the profiled runs' totals
    nodes: list  # dicts: node, op, backend, ms, percent, count, mean_ms; slowest first
    ops: list  # dicts: op, ms, percent, count, mean_ms; slowest first
    trace_file: str = ""  # where the Chrome trace was written, if it was
    chrome_trace: dict = field(default=None, repr=False)  # see chrome_trace(); not in to_json()


@dataclass
class BenchResult:
    model: str
    path: str
    threads: int
    backend: str
    opt_level: int
    warmup: int
    runs: int
    gflop: float  # 2 x MACs of Conv/ConvTranspose/MatMul/Gemm; None when shapes are unknown
    inputs: list  # dicts: name, dtype, shape (the shapes actually fed)
    lumen: EngineResult
    onnxruntime: EngineResult = None
    ratios: dict = field(default_factory=dict)  # figure -> lumen / onnxruntime
    outputs: list = field(default_factory=list)  # OutputChecks (with --compare)
    outputs_agree: bool = None
    # The same against OpenVINO (compare="openvino" or "onnxruntime,openvino").
    openvino: EngineResult = None
    openvino_ratios: dict = field(default_factory=dict)  # figure -> lumen / openvino
    openvino_outputs: list = field(default_factory=list)
    openvino_outputs_agree: bool = None
    # Lumen alternates with one peer at a time; its latency in the OpenVINO session (`lumen` holds
    # the first session's, against onnxruntime when that is compared too).
    openvino_session_lumen: Latency = None
    tolerance: dict = field(default_factory=lambda: {"rtol": RTOL, "atol": ATOL})
    arena: dict = None  # Lumen's planned intermediates (MiB): planned, naive, lower_bound
    # Lumen's compiled steps per backend ("executor" for control flow run by the executor).
    steps_per_backend: dict = field(default_factory=dict)
    profile: Profile = None
    machine: dict = field(default_factory=dict)

    def to_json(self):
        data = dataclasses.asdict(self)
        if data["profile"]:
            del data["profile"]["chrome_trace"]
        return data


# --- Inputs ----------------------------------------------------------------------------------

def _load_proto(path):
    """The ONNX model without external weight data, or None without the onnx package (or when
    it cannot parse what Lumen could): it only serves GFLOP counting and embedding sizes."""
    try:
        import onnx

        return onnx.load(path, load_external_data=False)
    except Exception:
        return None


def _embedding_rows(proto):
    """input name -> rows of the initializer table it indexes through a Gather."""
    if proto is None:
        return {}
    tables = {t.name: list(t.dims) for t in proto.graph.initializer}
    rows = {}
    for node in proto.graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[0] in tables:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            dims = tables[node.input[0]]
            rows[node.input[1]] = dims[axis] if dims else 1
    return rows


def make_inputs(inputs, seed=0, dims=None, proto=None):
    """Random arrays for ``inputs`` (Lumen's input dicts: name, dtype, shape).

    A symbolic dimension takes its value from ``dims`` (name -> int), else 1; float inputs are
    standard normal, integer inputs indexing an embedding are uniform below its row count, other
    integer inputs are ones, bool inputs are random."""
    dims = dims or {}
    rng = np.random.default_rng(seed)
    rows = _embedding_rows(proto)
    feeds = {}
    for info in inputs:
        shape = tuple(d if isinstance(d, int) else dims.get(d, 1) for d in info["shape"] or ())
        dtype = np.dtype(info["dtype"])
        if dtype.kind == "f":
            value = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu" and info["name"] in rows:
            value = rng.integers(0, rows[info["name"]], size=shape).astype(dtype)
        elif dtype.kind in "iu":
            value = np.ones(shape, dtype)
        elif dtype.kind == "b":
            value = rng.random(shape) < 0.5
        else:
            raise ValueError(f"input {info['name']}: cannot generate dtype {dtype}")
        feeds[info["name"]] = value
    return feeds


# --- GFLOP -----------------------------------------------------------------------------------

def _shape_only_model(proto, input_shapes):
    """A copy of ``proto`` for shape inference: inputs get concrete shapes, and initializers over
    64 KiB become typed inputs (shape inference needs their shapes, not their data; small ones
    stay, as Reshape and ConstantOfShape read theirs)."""
    from onnx import helper

    def nbytes(t):
        itemsize = helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        return math.prod(t.dims) * itemsize

    graph = proto.graph
    init_names = {t.name for t in graph.initializer}
    small = [t for t in graph.initializer if nbytes(t) <= 1 << 16]
    inputs = []
    for value in graph.input:
        if value.name in init_names:
            continue
        elem = value.type.tensor_type.elem_type
        shape = input_shapes.get(value.name)
        inputs.append(helper.make_tensor_value_info(value.name, elem, shape) if shape is not None
                      else value)
    inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
               for t in graph.initializer if nbytes(t) > 1 << 16]
    shaped = helper.make_model(
        helper.make_graph(graph.node, graph.name, inputs, graph.output, small),
        opset_imports=proto.opset_import)
    # IR 4 lets initializers stand without a matching graph input (the small ones above).
    shaped.ir_version = max(proto.ir_version, 4)
    shaped.functions.extend(proto.functions)
    return shaped


def count_gflop(proto, input_shapes=None):
    """2 x multiply-accumulates of the Conv, ConvTranspose, MatMul and Gemm nodes, in GFLOP.

    Returns (gflop, uncounted): nodes of those ops whose shapes shape inference could not tell are
    listed in ``uncounted`` and left out. ``input_shapes`` (name -> shape) fixes symbolic dims."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(_shape_only_model(proto, input_shapes or {}))
    shapes = {}
    for value in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        dims = value.type.tensor_type.shape.dim
        if value.type.tensor_type.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    for t in inferred.graph.initializer:
        shapes[t.name] = list(t.dims)

    def known(*names):
        found = [shapes.get(n) for n in names]
        return found if all(s is not None and None not in s for s in found) else None

    macs, uncounted = 0, []
    for node in proto.graph.node:
        if node.op_type not in ("Conv", "ConvTranspose", "MatMul", "Gemm"):
            continue
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Conv":
            s = known(node.output[0], node.input[1])
            count = s and math.prod(s[0]) * math.prod(s[1][1:])
        elif node.op_type == "ConvTranspose":
            s = known(node.input[0], node.input[1])
            count = s and math.prod(s[0]) * math.prod(s[1][1:])
        elif node.op_type == "MatMul":
            s = known(node.input[0], node.output[0])
            count = s and math.prod(s[1]) * s[0][-1]
        else:
            s = known(node.input[0], node.output[0])
            trans_a = "transA" in attrs and attrs["transA"].i
            count = s and math.prod(s[1]) * s[0][0 if trans_a else 1]
        if count is None:
            uncounted.append(node.name or node.output[0])
        else:
            macs += count
    return 2 * macs / 1e9, uncounted


# --- Output agreement ------------------------------------------------------------------------

def _close(got, want, rtol, atol):
    """Elementwise agreement as compare_outputs defines it (scale: max |want|, 1 if zero)."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind not in "fc":
        return got == want
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(want64)
    scale = float(np.abs(want64[finite]).max()) if finite.any() else 0.0
    scale = scale if scale > 0 else 1.0
    return (np.abs(got64 - want64) <= atol * scale + rtol * np.abs(want64)) | (
        np.isnan(got64) & np.isnan(want64)) | (got64 == want64)


def match_tied_rows(lumen_outputs, ref_outputs, rtol=RTOL, atol=ATOL):
    """Lumen's outputs with rows reordered where they differ from the reference only in the order
    of rows whose scores tie, how many rows moved, and the indices of the outputs reordered.

    A detector sorts its detections by score; two whose scores agree within the tolerance (a few
    ulps apart, from a different summation order) come in whichever order the last rounding gives,
    and every output with that row axis (boxes, labels, scores) follows. The scores are a 1-D
    float output of the reference sorted in descending order; rows tie when each is within the
    tolerance of the next. Within each run of tied rows, every reference row must find its own
    Lumen row that agrees on every output sharing the row axis; otherwise nothing moves (and the
    comparison reports the difference)."""
    ref = [np.asarray(o) for o in ref_outputs]
    got = [np.asarray(o) for o in lumen_outputs]
    unchanged = list(lumen_outputs), 0, []
    if len(got) != len(ref):
        return unchanged
    scores = next((r for r in ref if r.ndim == 1 and r.dtype.kind == "f" and r.size > 1
                   and np.all(np.diff(r.astype(np.float64)) <= 0)), None)
    if scores is None:
        return unchanged
    n = scores.shape[0]
    rows = [i for i, (g, r) in enumerate(zip(got, ref))
            if r.ndim >= 1 and r.shape[0] == n and g.shape == r.shape]
    ties = _close(scores[1:], scores[:-1], rtol, atol)  # row i ties with row i + 1
    order = np.arange(n)
    moved = 0
    start = 0
    while start < n:
        end = start + 1
        while end < n and ties[end - 1]:
            end += 1
        if end - start > 1:
            free = list(range(start, end))
            for want_row in range(start, end):
                match = next((g for g in free if all(
                    np.all(_close(got[i][g], ref[i][want_row], rtol, atol)) for i in rows)), None)
                if match is None:
                    return unchanged
                free.remove(match)
                order[want_row] = match
                moved += int(match != want_row)
        start = end
    if not moved:
        return unchanged
    return [g[order] if i in rows else g for i, g in enumerate(got)], moved, rows


def compare_outputs(names, lumen_outputs, ort_outputs, rtol=RTOL, atol=ATOL):
    """OutputChecks of Lumen's outputs against onnxruntime's (the reference).

    Floats agree when |l - o| <= atol * scale + rtol * |o| everywhere, scale being max |o| (1 for
    an all-zero output), and NaNs sit at the same places; other dtypes must be equal. Rows that
    agree in another order among tied scores (match_tied_rows) agree, and their count is kept."""
    lumen_outputs, tied, reordered = match_tied_rows(lumen_outputs, ort_outputs, rtol, atol)
    checks = []
    for index, (name, got, want) in enumerate(zip(names, lumen_outputs, ort_outputs)):
        got, want = np.asarray(got), np.asarray(want)
        check = OutputCheck(name=name, shape=list(want.shape), dtype=str(want.dtype),
                            max_abs=0.0, max_rel=0.0, ok=True,
                            tied_rows=tied if index in reordered else 0)
        checks.append(check)
        if got.shape != want.shape:
            check.ok, check.problem = False, f"shape {list(got.shape)} vs {list(want.shape)}"
            continue
        if want.size == 0:
            continue
        if want.dtype.kind not in "fc":
            mismatches = int(np.count_nonzero(got != want))
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            check.max_abs = check.max_rel = float(diff.max())
            if mismatches:
                check.ok, check.problem = False, f"{mismatches} elements differ"
            continue
        got64, want64 = got.astype(np.float64), want.astype(np.float64)
        nan_got, nan_want = np.isnan(got64), np.isnan(want64)
        finite = ~(nan_got | nan_want)
        scale = float(np.abs(want64[finite]).max()) if finite.any() else 0.0
        scale = scale if scale > 0 and math.isfinite(scale) else 1.0
        diff = np.abs(got64 - want64)[finite]
        diff = np.where(np.isnan(diff), 0.0, diff)  # inf - inf at the same place agrees
        if diff.size:
            check.max_abs = float(diff.max())
            check.max_rel = check.max_abs / scale
            bound = atol * scale + rtol * np.abs(want64[finite])
            bad = int(np.count_nonzero(diff > bound))
            if bad:
                check.ok, check.problem = False, f"{bad} of {want.size} elements out of tolerance"
        if (nan_got != nan_want).any():
            check.ok = False
            check.problem = (check.problem + "; " if check.problem else "") + "NaNs differ"
    return checks


# --- Engines ---------------------------------------------------------------------------------

class _LumenEngine:
    name = "lumen"

    def __init__(self, path, threads, backend, opt_level):
        from . import __version__, _onnx

        self.version = __version__
        start = time.perf_counter()
        self.model = _onnx.load_onnx(path)
        self.compiled = self.model.compile(backend=backend, num_threads=threads,
                                           opt_level=opt_level)
        self.compile_s = time.perf_counter() - start
        self.exe = self.compiled.executable
        self.output_names = [o.name for o in self.exe.outputs]
        self.args = None

    def bind(self, feeds):
        missing = [i.name for i in self.exe.inputs if i.name not in feeds]
        if missing:
            raise ValueError(f"no value for input(s) {', '.join(missing)}")
        self.args = [feeds[i.name] for i in self.exe.inputs]

    def run(self):
        return self.exe(*self.args)

    def outputs(self, results):
        return [np.array(t) for t in results]


class _OrtEngine:
    name = "onnxruntime"

    def __init__(self, path, threads):
        try:
            import onnxruntime as ort
        except ImportError:
            raise ValueError("--compare onnxruntime needs the onnxruntime package "
                             "(pip install onnxruntime)") from None
        self.version = ort.__version__
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # errors only: no warnings about unused initializers
        # Workers still spin during a run, but not for the ~50 ms after it that they would by
        # default: that would take a core from the Lumen run that follows (alone it makes no
        # measurable difference to onnxruntime's own times).
        options.add_session_config_entry("session.force_spinning_stop", "1")
        start = time.perf_counter()
        try:
            self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own exception types
            raise ValueError(f"onnxruntime cannot load the model: {e}") from None
        self.compile_s = time.perf_counter() - start
        self.output_names = [o.name for o in self.session.get_outputs()]
        self.feeds = None

    def bind(self, feeds):
        self.feeds = {i.name: feeds[i.name] for i in self.session.get_inputs() if i.name in feeds}

    def run(self):
        return self.session.run(None, self.feeds)

    def outputs(self, results):
        return list(results)


class _OpenVinoEngine:
    """OpenVINO's CPU plugin: the same thread count, the latency hint, float32 inference (it may
    pick bf16 or f16 on CPUs that have them otherwise), the model reshaped to the fed shapes."""
    name = "openvino"

    def __init__(self, path, threads):
        try:
            import openvino as ov
        except ImportError:
            raise ValueError("--compare openvino needs the openvino package "
                             "(pip install openvino)") from None
        self.version = ov.__version__
        self.core = ov.Core()
        self.threads = threads
        try:
            self.model = self.core.read_model(path)
        except Exception as e:  # OpenVINO raises its own exception types
            raise ValueError(f"openvino cannot load the model: {e}") from None
        self.compile_s = 0.0
        self.output_names = [o.get_any_name() for o in self.model.outputs]
        self.request = None
        self.inputs = None

    def bind(self, feeds):
        names = [i.get_any_name() for i in self.model.inputs]
        start = time.perf_counter()
        try:
            self.model.reshape({n: list(feeds[n].shape) for n in names if n in feeds})
            compiled = self.core.compile_model(self.model, "CPU", {
                "INFERENCE_NUM_THREADS": str(self.threads), "PERFORMANCE_HINT": "LATENCY",
                "INFERENCE_PRECISION_HINT": "f32"})
        except Exception as e:
            raise ValueError(f"openvino cannot compile the model: {e}") from None
        self.compile_s = time.perf_counter() - start
        self.request = compiled.create_infer_request()
        self.inputs = {n: feeds[n] for n in names if n in feeds}

    def run(self):
        self.request.infer(self.inputs)
        return [self.request.get_output_tensor(i).data for i in range(len(self.output_names))]

    def outputs(self, results):
        return [np.array(r) for r in results]


PEERS = {"onnxruntime": _OrtEngine, "openvino": _OpenVinoEngine}


def _peers(compare):
    """["onnxruntime", "openvino"] from "onnxruntime,openvino" (or a list); [] for None."""
    names = compare.split(",") if isinstance(compare, str) else list(compare or [])
    names = [n.strip() for n in names if n.strip()]
    unknown = [n for n in names if n not in PEERS]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"cannot compare with {compare!r}; the peers are "
                         f"{', '.join(PEERS)} (comma-separated)")
    return names


def _first_run(engine):
    start = time.perf_counter()
    results = engine.run()
    return time.perf_counter() - start, engine.outputs(results)


def _timed(engine):
    start = time.perf_counter()
    engine.run()
    return time.perf_counter() - start


class _ProgressBar:
    """A one-line progress bar on stderr, drawn only on a terminal and erased when done."""

    def __init__(self, total, label, enabled):
        self.total, self.label, self.done = total, label, 0
        self.enabled = enabled and total > 0 and sys.stderr.isatty()
        self.start = self.last = time.monotonic()

    def advance(self):
        self.done += 1
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.1 or self.done == self.total):
            self.last = now
            width = 30
            filled = width * self.done // self.total
            eta = (now - self.start) / self.done * (self.total - self.done)
            sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                             f"{self.done}/{self.total}  {eta:4.0f}s left ")
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _auto_runs(per_round_s, target_s=5.0):
    """Timed runs for about ``target_s`` seconds in all, between 10 and 1000."""
    return int(min(1000, max(10, math.ceil(target_s / max(per_round_s, 1e-6)))))


def benchmark(path, threads=None, backend="", opt_level=2, runs=None, warmup=3, compare=None,
              memory=True, profile_runs=0, inputs=None, dims=None, seed=0, rtol=RTOL, atol=ATOL,
              progress=True):
    """Benchmarks the ONNX model at ``path`` and returns a BenchResult.

    ``compare="onnxruntime"`` runs onnxruntime alongside (same inputs and thread count, runs
    alternating) and checks the outputs agree; ``runs=None`` picks enough timed runs for about
    five seconds (10 to 1000); ``memory`` measures each engine's peak RSS in a child process;
    ``profile_runs`` > 0 adds a per-step profile of that many extra Lumen runs; ``inputs`` (name ->
    array) replaces the generated inputs. Raises ValueError for unusable arguments or models,
    lumen.Error when Lumen cannot compile or run the model."""
    threads = threads or default_threads()
    peers = _peers(compare)
    lumen_engine = _LumenEngine(path, threads, backend, opt_level)
    proto = _load_proto(path)
    input_infos = lumen_engine.model.inputs  # symbolic dims by name, for ``dims``
    named = {d for info in input_infos for d in info["shape"] or () if isinstance(d, str)}
    unknown_dims = sorted(set(dims or {}) - named)
    if unknown_dims:
        raise ValueError(f"the model's inputs have no symbolic dim(s) {', '.join(unknown_dims)}; "
                         f"they have {', '.join(sorted(named)) or 'none'}")
    feeds = make_inputs(input_infos, seed=seed, dims=dims, proto=proto)
    if inputs:
        unknown = sorted(set(inputs) - set(feeds))
        if unknown:
            raise ValueError(f"the model has no input(s) {', '.join(unknown)}")
        feeds.update({k: np.asarray(v) for k, v in inputs.items()})
    lumen_engine.bind(feeds)
    first_s, lumen_outputs = _first_run(lumen_engine)
    result = BenchResult(
        model=os.path.splitext(os.path.basename(path))[0], path=os.path.abspath(path),
        threads=threads, backend=backend or "auto", opt_level=opt_level, warmup=warmup, runs=0,
        gflop=None,
        inputs=[{"name": k, "dtype": str(v.dtype), "shape": list(v.shape)}
                for k, v in feeds.items()],
        lumen=EngineResult("lumen", lumen_engine.version, lumen_engine.compile_s * 1e3,
                           first_s * 1e3),
        machine=_machine())
    result.arena = _arena(lumen_engine.exe.memory)
    result.steps_per_backend = dict(collections.Counter(s.backend for s in lumen_engine.exe.steps))
    if proto is not None:
        try:
            gflop, uncounted = count_gflop(proto, {k: list(v.shape) for k, v in feeds.items()})
            result.gflop = None if uncounted else gflop
        except Exception:  # shape inference rejects some valid models; GFLOP is optional
            result.gflop = None

    engines = [lumen_engine]
    for peer in peers:
        engine = PEERS[peer](path, threads)
        engine.bind(feeds)
        first_s, peer_outputs = _first_run(engine)
        engine_result = EngineResult(peer, engine.version, engine.compile_s * 1e3, first_s * 1e3)
        pairs = _pair_outputs(lumen_engine.output_names, engine.output_names, peer)
        checks = compare_outputs(engine.output_names, [lumen_outputs[i] for i in pairs],
                                 peer_outputs, rtol, atol)
        for check, i in zip(checks, pairs):
            if lumen_engine.output_names[i] != check.name:
                check.lumen_name = lumen_engine.output_names[i]
        result.tolerance = {"rtol": rtol, "atol": atol}
        if peer == "onnxruntime":
            result.onnxruntime, result.outputs = engine_result, checks
            result.outputs_agree = all(c.ok for c in checks)
        else:
            result.openvino, result.openvino_outputs = engine_result, checks
            result.openvino_outputs_agree = all(c.ok for c in checks)
        engines.append(engine)

    # Lumen alternates with one peer at a time: a peer whose threads keep spinning after its run
    # (OpenVINO's do) slows only the Lumen runs of its own session, not the other peer's.
    peer_results = [getattr(result, peer) for peer in peers]
    lumen_latencies = []
    for session in ([[lumen_engine, e] for e in engines[1:]] or [[lumen_engine]]):
        first_runs_s = (result.lumen.first_run_ms + sum(
            r.first_run_ms for r in peer_results[len(lumen_latencies):][:len(session) - 1])) / 1e3
        lumen_samples, peer_samples = _alternate(session, runs, warmup, result.model, progress,
                                                 first_runs_s)
        result.runs = len(lumen_samples)
        lumen_latencies.append(Latency.from_seconds(lumen_samples))
        if peer_samples:
            peer_results[len(lumen_latencies) - 1].latency = Latency.from_seconds(peer_samples)
    result.lumen.latency = lumen_latencies[0]

    if memory:
        result.lumen.peak_memory_mib = measure_peak_memory(
            "lumen", path, feeds, threads, backend=backend, opt_level=opt_level)
        for peer, engine_result in zip(peers, peer_results):
            engine_result.peak_memory_mib = measure_peak_memory(peer, path, feeds, threads)
    for peer, engine_result, latency in zip(peers, peer_results, lumen_latencies):
        ratios = _ratios(dataclasses.replace(result.lumen, latency=latency), engine_result)
        if peer == "onnxruntime":
            result.ratios = ratios
        else:
            result.openvino_ratios, result.openvino_session_lumen = ratios, latency
    if profile_runs:
        result.profile = profile_lumen(lumen_engine.exe, lumen_engine.args, profile_runs,
                                       result.model)
    return result


def _alternate(engines, runs, warmup, label, progress, first_runs_s):
    """Warm-up then timed runs of `engines` in turn; the times (seconds) of the first and of the
    second (empty without one). runs=None: about five seconds' worth, judged from the warm-up
    (without one, from the first runs, `first_runs_s` a round)."""
    warm = np.array([[_timed(e) for e in engines] for _ in range(warmup)])
    per_round = float(np.median(warm, axis=0).sum()) if warmup else first_runs_s
    runs = runs or _auto_runs(per_round)
    bar = _ProgressBar(runs, label, progress and runs * per_round > 1.0)
    times = [[] for _ in engines]
    try:
        for _ in range(runs):
            for engine, samples in zip(engines, times):
                samples.append(_timed(engine))
            bar.advance()
    finally:
        bar.close()
    return times[0], times[1] if len(times) > 1 else []


def _pair_outputs(lumen_names, peer_names, peer="onnxruntime"):
    """For each of the peer's outputs, the index of Lumen's: by name, else by position."""
    if sorted(lumen_names) == sorted(peer_names):
        return [lumen_names.index(n) for n in peer_names]
    if len(lumen_names) == len(peer_names):
        return list(range(len(peer_names)))
    raise ValueError(f"lumen has outputs {lumen_names}, {peer} {peer_names}")


def _ratios(lumen, ort):
    figures = {
        "compile_ms": (lumen.compile_ms, ort.compile_ms),
        "first_run_ms": (lumen.first_run_ms, ort.first_run_ms),
        "peak_memory_mib": (lumen.peak_memory_mib, ort.peak_memory_mib),
    }
    for key in ("min_ms", "median_ms", "p90_ms", "p99_ms", "mean_ms", "throughput"):
        figures[key] = (getattr(lumen.latency, key), getattr(ort.latency, key))
    return {k: (a / b if a is not None and b else None) for k, (a, b) in figures.items()}


def _arena(memory):
    if not memory.planned:
        return None
    return {"planned_mib": sum(s.planned_bytes for s in memory.spaces) / _MIB,
            "naive_mib": sum(s.naive_bytes for s in memory.spaces) / _MIB,
            "lower_bound_mib": sum(s.lower_bound_bytes for s in memory.spaces) / _MIB}


def _machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), "")
    except OSError:
        pass
    import platform

    return {"cpu": cpu or platform.processor(), "cores": default_threads(),
            "python": platform.python_version()}


# --- Peak memory -----------------------------------------------------------------------------

def _rss_kib(field_name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field_name} in /proc/self/status")


def _memory_probe(spec_json):
    """Child side of measure_peak_memory: prints the peak RSS growth in bytes."""
    spec = json.loads(spec_json)
    with np.load(spec["inputs"]) as data:
        feeds = {k: data[k] for k in data.files}
    try:
        import onnxruntime  # noqa: F401  (imported by both probes so the baselines match)
    except ImportError:
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux 4.0+)
    except OSError:
        pass
    baseline = _rss_kib("VmRSS")
    if spec["engine"] == "lumen":
        engine = _LumenEngine(spec["path"], spec["threads"], spec["backend"], spec["opt_level"])
    else:
        engine = PEERS[spec["engine"]](spec["path"], spec["threads"])
    engine.bind(feeds)
    for _ in range(spec["runs"]):
        engine.run()
    print(json.dumps({"peak_bytes": (_rss_kib("VmHWM") - baseline) * 1024}))


def measure_peak_memory(engine, path, feeds, threads, backend="", opt_level=2, runs=3):
    """Peak resident memory (MiB) that loading, compiling and running ``path`` ``runs`` times
    adds to a fresh Python process with Lumen, onnxruntime and the inputs already loaded: VmHWM
    at the end minus the RSS before loading. It covers weights, the engine's working memory and
    the outputs, not the interpreter. Returns None where /proc/self/status is missing
    (non-Linux) or the child fails (with a warning on stderr)."""
    if not os.path.exists("/proc/self/status"):
        return None
    with tempfile.TemporaryDirectory(prefix="lumen-bench-") as tmp:
        inputs = os.path.join(tmp, "inputs.npz")
        np.savez(inputs, **feeds)
        spec = {"engine": engine, "path": os.path.abspath(path), "inputs": inputs,
                "threads": threads, "backend": backend, "opt_level": opt_level, "runs": runs}
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root,
                                                          env.get("PYTHONPATH")]))
        code = "import sys; from lumen._bench import _memory_probe; _memory_probe(sys.argv[1])"
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], env=env,
                              capture_output=True, text=True)
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        print(f"warning: peak memory of {engine} not measured: {reason}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["peak_bytes"] / _MIB


# --- Profile ---------------------------------------------------------------------------------

def profile_lumen(exe, args, runs, model_name):
    """Runs ``exe`` ``runs`` times with per-step timing; aggregates per node and per op type and
    builds the Chrome trace of the runs."""
    # Warm again first: the peak-memory children ran since the timed runs, and cold caches and
    # clocks made a small model's profiled steps up to 1.7x slower than its timed runs.
    for _ in range(max(3, runs // 2)):
        exe(*args)
    profiles = [exe.execute_profiled(*args)[1] for _ in range(runs)]
    steps = profiles[0].plan_steps  # a dynamic model: the plan for these shapes (real shapes)
    totals = np.array([p.total_us for p in profiles], dtype=np.float64)
    # Per node, its time in each run (a step in a loop runs several times). Medians over the runs,
    # not means: on a shared machine one slow run tripled some nodes' means.
    per_node, calls = {}, {}
    for r, p in enumerate(profiles):
        for timing in p.steps:
            per_node.setdefault(timing.step, np.zeros(runs))[r] += timing.duration_us
            calls[timing.step] = calls.get(timing.step, 0) + 1
    run_ms = float(np.median(totals)) / 1e3

    def share(ms):
        return 100.0 * ms / run_ms if run_ms else 0.0

    nodes, ops = [], {}
    for index, per_run_us in per_node.items():
        step = steps[index]
        ms = float(np.median(per_run_us)) / 1e3  # per run
        count = calls[index] / runs
        nodes.append({"node": step.node, "op": step.op, "backend": step.backend, "ms": ms,
                      "percent": share(ms), "count": count, "mean_ms": ms / count,
                      "shapes": _shapes_text(step), "algorithm": step.algorithm})
        entry = ops.setdefault(step.op, {"op": step.op, "ms": 0.0, "count": 0})
        entry["ms"] += ms
        entry["count"] += count
    for entry in ops.values():
        entry["percent"] = share(entry["ms"])
        entry["mean_ms"] = entry["ms"] / entry["count"]
    return Profile(runs=runs, total_ms=float(np.median(totals)) / 1e3,
                   nodes=sorted(nodes, key=lambda n: -n["ms"]),
                   ops=sorted(ops.values(), key=lambda o: -o["ms"]),
                   chrome_trace=chrome_trace(steps, profiles, model_name))


def _shapes_text(step):
    """'1x3x224x224, 64x3x3x3 -> 1x64x112x112': a step's input and output shapes (? for an
    unknown dim, - for an absent optional input)."""
    def text(shape):
        return "x".join("?" if d is None else str(d) for d in shape) if shape else "-"
    return (", ".join(map(text, step.input_shapes)) + " -> " +
            ", ".join(map(text, step.output_shapes)))


def chrome_trace(steps, profiles, model_name):
    """RunProfiles as a Chrome trace (chrome://tracing, ui.perfetto.dev): one lane per run, each
    starting at 0 and holding one event per step (name = node, category = op, args.backend = its
    device); copies between memory spaces go to a lane of their own beside their run's."""
    median = int(np.argsort([p.total_us for p in profiles])[len(profiles) // 2])
    events = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
               "args": {"name": f"lumen: {model_name}"}}]
    copy_lanes = set()
    for run, p in enumerate(profiles):
        label = f"run {run + 1}" + (" (median)" if run == median else "")
        lane, copy_lane = run, len(profiles) + run
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": lane,
                       "args": {"name": label}})
        events.append({"name": "run", "cat": "run", "ph": "X", "pid": 1, "tid": lane, "ts": 0,
                       "dur": p.total_us, "args": {"total_ms": p.total_us / 1e3}})
        for timing in p.steps:
            step = (p.plan_steps or steps)[timing.step]
            tid = copy_lane if step.op == "copy" else lane
            if tid == copy_lane and copy_lane not in copy_lanes:
                copy_lanes.add(copy_lane)
                events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": copy_lane,
                               "args": {"name": f"{label}: copies"}})
            events.append({"name": step.node, "cat": step.op, "ph": "X", "pid": 1, "tid": tid,
                           "ts": timing.start_us, "dur": timing.duration_us,
                           "args": {"op": step.op, "backend": step.backend, "dtype": step.dtype,
                                    "shapes": _shapes_text(step),
                                    "attributes": step.attributes, "step": timing.step}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"model": model_name, "runs": len(profiles)}}


# --- Text ------------------------------------------------------------------------------------

def _fmt(value):
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.2f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2g}"


def _peer_columns(r):
    """(name, EngineResult, ratios, (output checks, agree)) for each peer the result has."""
    out = []
    if r.onnxruntime:
        out.append(("onnxruntime", r.onnxruntime, r.ratios, (r.outputs, r.outputs_agree)))
    if r.openvino:
        out.append(("openvino", r.openvino, r.openvino_ratios,
                    (r.openvino_outputs, r.openvino_outputs_agree)))
    return out


def format_result(r):
    """The human-readable report of a BenchResult."""
    shapes = ", ".join(f"{i['name']} {i['dtype']}{i['shape']}" for i in r.inputs)
    gflop = ("GFLOP unknown" if r.gflop is None
             else f"{r.gflop:.3g} GFLOP (Conv/ConvTranspose/MatMul/Gemm only)")
    peers = _peer_columns(r)
    names = [p for p, _, _, _ in peers]
    lines = [f"{r.model}: {shapes}; {gflop}",
             f"threads {r.threads}, backend {r.backend}, opt_level {r.opt_level}; "
             f"{r.warmup} warm-up + {r.runs} timed runs"
             + (", alternating " + ", then ".join(f"lumen / {n}" for n in names) if names
                else ""), ""]
    rows = [("compile (ms)", "compile_ms"), ("first run (ms)", "first_run_ms"),
            ("min (ms)", "min_ms"), ("median (ms)", "median_ms"), ("p90 (ms)", "p90_ms"),
            ("p99 (ms)", "p99_ms"), ("throughput (inf/s)", "throughput"),
            ("peak memory (MiB)", "peak_memory_mib")]

    def value(engine, key):
        if hasattr(engine, key):
            return getattr(engine, key)
        return getattr(engine.latency, key)

    header = f"{'':20s}{'lumen':>12s}" + "".join(f"{p:>14s}{'ratio':>9s}" for p, _, _, _ in peers)
    lines.append(header)
    for label, key in rows:
        line = f"{label:20s}{_fmt(value(r.lumen, key)):>12s}"
        for _, engine, ratios, _ in peers:
            line += f"{_fmt(value(engine, key)):>14s}{_fmt(ratios.get(key)):>9s}"
        lines.append(line)
    if peers:
        lines.append(f"ratio = lumen / {' or '.join(names)}: below 1 is better for times and "
                     "memory, above 1 for throughput")
    if r.openvino and r.onnxruntime and r.openvino_session_lumen:
        lines.append(f"(lumen alternated with each peer in turn; its median in the openvino "
                     f"session: {r.openvino_session_lumen.median_ms:.3f} ms)")
    if r.gflop:
        lines.append(f"lumen: {r.gflop / (r.lumen.latency.median_ms / 1e3):.1f} GFLOP/s at the "
                     "median")
    if r.arena:
        a = r.arena
        lines.append(f"lumen arena (intermediates): planned {a['planned_mib']:.2f} MiB, naive "
                     f"{a['naive_mib']:.2f}, lower bound {a['lower_bound_mib']:.2f}")
    if r.steps_per_backend:
        lines.append("lumen steps by backend: " + ", ".join(
            f"{name} {count}" for name, count in sorted(r.steps_per_backend.items())))
    for peer, _, _, (checks, agree) in peers:
        tol = r.tolerance
        verdict = "agree" if agree else "DISAGREE"
        lines.append(f"outputs {verdict} with {peer} (|lumen - {peer}| <= {tol['atol']:g} x scale + "
                     f"{tol['rtol']:g} x |{peer}|, scale = max |{peer}|):")
        for c in checks:
            lines.append(f"  {c.name:24s} {c.dtype}{c.shape}  max abs {c.max_abs:.3g}, max rel "
                         f"{c.max_rel:.3g}  {'ok' if c.ok else 'FAIL: ' + c.problem}"
                         + (f"  (lumen names it {c.lumen_name})" if c.lumen_name else "")
                         + (f"  ({c.tied_rows} rows with tied scores in another order)"
                            if c.tied_rows else ""))
    return "\n".join(lines) + "\n"


def format_profile(profile, top=20):
    """Per-node (slowest ``top``) and per-op-type tables of a Profile."""
    lines = [f"profile: {profile.runs} profiled runs, median total {profile.total_ms:.3f} ms; "
             "times per run are medians over them", "",
             f"{'node':32s} {'op':20s} {'backend':9s} {'ms':>9s} {'%':>6s}  shapes"]
    for n in profile.nodes[:top]:
        lines.append(f"{n['node'][:32]:32s} {n['op'][:20]:20s} {n['backend']:9s} "
                     f"{n['ms']:9.3f} {n['percent']:6.1f}  {n.get('shapes', '')}"
                     + (f"  [{n['algorithm'].split(':')[0]}]" if n.get("algorithm") else ""))
    if len(profile.nodes) > top:
        rest = profile.nodes[top:]
        lines.append(f"{f'({len(rest)} more nodes)':63s} {sum(n['ms'] for n in rest):9.3f} "
                     f"{sum(n['percent'] for n in rest):6.1f}")
    lines += ["", f"{'op type':32s} {'nodes':>6s} {'ms':>9s} {'%':>6s} {'ms/node':>9s}"]
    for o in profile.ops:
        lines.append(f"{o['op'][:32]:32s} {o['count']:6g} {o['ms']:9.3f} {o['percent']:6.1f} "
                     f"{o['mean_ms']:9.4f}")
    return "\n".join(lines) + "\n"
