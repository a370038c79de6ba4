"""ONNX models: ``lumen.load_onnx(path_or_bytes)`` -> Model; ``model.compile()`` -> CompiledModel."""

import os

import numpy as _np

from . import _lumen

__all__ = ["load_onnx", "Model", "CompiledModel"]


def _info(v):
    """name, dtype and shape; a symbolic dim shows its ONNX name ("batch") or the expression of
    the inputs' dims that inference found ("past+seq"; else the name the file declares: exporters
    write names such as "Concatpresent_k_0_dim_2"), an unknown one None."""
    shape = v.shape
    names = v.dim_names
    if shape is None:  # known only at run time: the inferred, else the declared symbolic dims
        shape = v.symbolic_shape
        if shape is None and names:
            shape = tuple(n or None for n in names)
        elif shape is not None and len(names) == len(shape):  # declared names fill the gaps
            shape = tuple(n or None if d is None else d for d, n in zip(shape, names))
    elif len(names) == len(shape):
        shape = tuple(d if d is not None or not n else n for d, n in zip(shape, names))
    # Sequences and optionals show their items' type: "seq(float32)".
    return {"name": v.name, "dtype": v.type, "shape": shape}


class Model:
    """An imported ONNX model: its Lumen graph plus input/output descriptions.

    ``inputs`` / ``outputs`` are lists of dicts with ``name``, ``dtype`` and ``shape`` (a tuple; a
    symbolic dimension shows its name, e.g. ``("N", 3, 224, 224)``, an unknown one None)."""

    def __init__(self, graph, max_memory=0):
        self.graph = graph
        self.max_memory = max_memory  # bytes; 0: the default budget
        self._default = None

    @property
    def inputs(self):
        return [_info(v) for v in self.graph.inputs]

    @property
    def outputs(self):
        return [_info(v) for v in self.graph.outputs]

    def compile(self, backend="auto", num_threads=0, opt_level=2, runtime=None, dump_passes="",
                shape_cache_capacity=8, max_memory=None, adaptive=False, input_device=None,
                output_device=None):
        """Optimizes a copy of the graph and compiles it. ``backend="auto"`` (or empty) lets the
        router place each node where the whole graph is estimated fastest, copies between devices
        counted (``routing()`` says why); a backend's name ("cpu", "reference", ...) pins every
        node to it, and a node it has no kernel for fails the compile.
        ``dump_passes``: a folder that gets the graph after each pass that changed it ("-" for
        stderr; default $LUMEN_DUMP_GRAPH). A model with symbolic or unknown input dims compiles
        once; from the second run at a given set of input shapes on, it runs a plan made for them
        (shapes resolved, memory planned, as fast as a fixed-shape export), and the
        ``shape_cache_capacity`` most recently used plans are kept. ``max_memory`` (bytes, or a
        string such as "2G"; default: the one given to load_onnx) bounds the memory plan's arena
        and every tensor a run makes: over it, a lumen.Error names the node and the size.
        ``adaptive``: the second and third runs are timed step by step, and where a step that
        matters took over twice or under half the router's estimate, the timings are kept and
        the graph is placed again between runs (at most 3 times; ``replans()`` says why).
        ``input_device`` / ``output_device``: the backend ("vulkan", "cuda") whose memory the
        caller's inputs are in (``lumen.to_device(x, "vulkan")``; CUDA tensors of PyTorch or CuPy
        are read in place through DLPack) and the outputs are returned in (as lumen.Tensor;
        ``t.to("cpu")`` reads them, ``torch.from_dlpack(t)`` a CUDA one in place); the plan copies
        only what other devices need. Default: host memory (NumPy)."""
        graph = self.graph.clone()
        report = graph.optimize(opt_level, dump_passes, backend)
        if runtime is None:
            runtime = _lumen.Runtime(num_threads=num_threads, backend=backend)
        budget = self.max_memory if max_memory is None else _memory_size(max_memory)
        exe = graph.compile(runtime, opt_level=opt_level, shape_cache_capacity=shape_cache_capacity,
                            max_memory=budget, adaptive=adaptive,
                            input_device=input_device or "", output_device=output_device or "")
        return CompiledModel(exe, graph, report)

    def summary(self, opt_level=2, backend=""):
        """A readable report of what compiling at ``opt_level`` does: op counts before/after,
        every pass and its rewrites, fused groups, the memory plan and each step's backend and
        kernel dtype."""
        return self.compile(backend=backend, opt_level=opt_level).summary()

    def report(self, opt_level=2, backend=""):
        """The data of summary() as a JSON-serializable dict."""
        return self.compile(backend=backend, opt_level=opt_level).report()

    def save_optimized(self, path, opt_level=2):
        """Writes the graph optimized at ``opt_level`` as an ONNX model. Ops identical to an ONNX
        op use the default domain; fused and other Lumen-only ops use the "lumen" domain, which
        lumen.load_onnx reads back. Returns the onnx.ModelProto."""
        from ._export import save_graph

        graph = self.graph.clone()
        graph.optimize(opt_level, "")
        return save_graph(graph, path)

    def __call__(self, *args, **feeds):
        if self._default is None:
            self._default = self.compile()
        return self._default(*args, **feeds)

    def run(self, feeds):
        if self._default is None:
            self._default = self.compile()
        return self._default.run(feeds)


def _to_numpy(value):
    """An output as NumPy: arrays for tensors, lists for sequences, None for empty optionals; a
    tensor in a device's memory (compile(output_device=...)) stays a lumen.Tensor there."""
    if isinstance(value, list):
        return [_to_numpy(v) for v in value]
    if value is None or isinstance(value, _np.ndarray):
        return value
    if isinstance(value, _lumen.Tensor) and value.device != "cpu":
        return value
    return _np.asarray(value)


class CompiledModel:
    """A compiled model. ``run(feeds)`` returns a list of NumPy arrays (views of Lumen's output
    memory, no copy); ``model(x)`` for a single input or ``model(**feeds)`` returns one array when
    the model has one output, else the list."""

    def __init__(self, executable, graph, optimize_report=None):
        self.executable = executable
        self.graph = graph  # the optimized graph that was compiled
        self.optimize_report = optimize_report  # a lumen.OptimizeReport, None if unknown

    @property
    def inputs(self):
        """name, dtype and shape of each input; shape None for an input the model gives no shape
        (not even a rank: any shape is accepted)."""
        unshaped = {v.name for v in self.graph.inputs
                    if v.shape is None and v.symbolic_shape is None and not v.dim_names}
        return [{"name": i.name, "dtype": i.type,
                 "shape": None if i.name in unshaped else i.shape}
                for i in self.executable.inputs]

    @property
    def outputs(self):
        return [{"name": o.name, "dtype": o.type, "shape": o.shape}
                for o in self.executable.outputs]

    def run(self, feeds, timeout=None):
        """Runs on ``feeds`` (name -> array). ``timeout`` (seconds): the run stops between steps
        once it has passed, with a lumen.Error naming the node (the step running finishes)."""
        if timeout is None:
            return [_to_numpy(t) for t in self.executable.execute(dict(feeds))]
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        with _lumen.RunTimeout(float(timeout)):
            return [_to_numpy(t) for t in self.executable.execute(dict(feeds))]

    def summary(self):
        """A readable multi-line report: op counts before/after optimization, passes, fused
        groups, memory plan, and each step's backend and kernel dtype."""
        from ._inspect import format_summary

        return format_summary(self.report())

    def report(self):
        """The data of summary() as a JSON-serializable dict."""
        from ._inspect import build_report

        return build_report(self)

    def routing(self):
        """Where each step runs and why: a list of dicts (node, op, backend, dtype, algorithm,
        reason, estimates_us, copies_us), in execution order, copy steps between memory spaces
        included (op "copy"). ``reason`` is one line from the place stage of compiling ("sim:
        172.8 us vs cpu 1.35 ms + copy 85.5 us", or "cpu: the only device placed automatically
        with a float32 kernel" where there was nothing to weigh); ``estimates_us`` maps each
        candidate backend to its estimated time where devices were weighed."""
        return [{"node": s.node, "op": s.op, "backend": s.backend, "dtype": s.dtype,
                 "algorithm": s.algorithm, "reason": s.placement,
                 "estimates_us": dict(s.estimates_us), "copies_us": s.copies_us}
                for s in self.executable.steps]

    def replans(self):
        """compile(adaptive=True): one line per time the plan was redone because runs disagreed
        with the router's estimates ("replan 1: 1 step off the estimates (mm0 on vulkan: 1.20 ms
        measured, 0.31 ms estimated); 3 steps moved"). routing() shows the plan in use."""
        return list(self.executable.replans)

    def save_optimized(self, path):
        """Writes the compiled (optimized) graph as an ONNX model; see Model.save_optimized."""
        from ._export import save_graph

        return save_graph(self.graph, path)

    def __call__(self, *args, **feeds):
        if args and feeds:
            raise TypeError("pass inputs either positionally or by name, not both")
        if args:
            outs = [_to_numpy(t) for t in self.executable.execute(*args)]
        else:
            outs = self.run(feeds)
        return outs[0] if len(outs) == 1 else outs


def _memory_size(value):
    """max_memory as bytes: an int, or a string such as "512M" or "2G" (powers of 1024)."""
    if isinstance(value, str):
        return _lumen.parse_memory_size(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_memory must be a byte count or a string such as '2G', got {value!r}")
    return value


def load_onnx(model, max_memory=None):
    """Loads an ONNX model from a path (str or os.PathLike) or from serialized bytes.

    External data files are read relative to the model's folder and must stay inside it. Every
    unsupported op is listed in one lumen.Error. ``max_memory`` (bytes, or a string such as "2G";
    default: $LUMEN_MAX_MEMORY, else the machine's memory) bounds every tensor the model
    materializes while loading and, by default, the compiled model's arena and runs: a model
    asking for more gets a lumen.Error naming the size before anything is allocated."""
    if not _lumen.has_onnx:
        raise _lumen.Error("this lumen build has no ONNX importer (built without Protobuf/onnx)")
    budget = 0 if max_memory is None else _memory_size(max_memory)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return Model(_lumen.load_onnx_bytes(bytes(model), max_memory=budget), budget)
    if isinstance(model, (str, os.PathLike)):
        return Model(_lumen.load_onnx_path(os.fspath(model), max_memory=budget), budget)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        return Model(_lumen.load_onnx_bytes(model.SerializeToString(), max_memory=budget), budget)
    raise TypeError(f"load_onnx expects a path, bytes or an onnx.ModelProto, got {type(model)!r}")
