"""An onnxruntime-compatible session: code written for ``onnxruntime.InferenceSession`` runs on
Lumen by changing its import (``import lumen as ort``).

Supported: ``InferenceSession(path_or_bytes, sess_options=None, providers=None)``,
``get_inputs()`` / ``get_outputs()`` / ``get_overridable_initializers()``, ``run(output_names,
input_feed, run_options=None)``, ``get_modelmeta()``, ``get_providers()``,
``get_session_options()``, ``SessionOptions`` (``intra_op_num_threads`` and
``graph_optimization_level`` are honoured), ``GraphOptimizationLevel``, ``RunOptions``,
``get_available_providers()`` and ``get_device()``.

Differences that remain: every provider name is accepted and the model runs on Lumen's own
placement (``get_providers()`` answers ``["CPUExecutionProvider"]``); IO binding, OrtValue,
profiling (``end_profiling``), ``run_with_ort_values`` and custom-op libraries are not supported;
outputs are NumPy arrays that view Lumen's output memory (no copy), which callers own as usual;
errors are ``lumen.Error`` (a ``RuntimeError``, as onnxruntime's are) naming the input, node or op.
"""

import enum
import os

import numpy as _np

from . import _lumen
from ._onnx import load_onnx

__all__ = ["InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel",
           "ExecutionMode", "NodeArg", "ModelMetadata", "get_available_providers", "get_device"]

_PROVIDERS = ["CPUExecutionProvider"]


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """onnxruntime.SessionOptions. Lumen reads ``intra_op_num_threads`` (0: all cores) and
    ``graph_optimization_level``; the other attributes are kept so that code setting them runs."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False
        self._configs = {}

    def add_session_config_entry(self, key, value):
        self._configs[str(key)] = str(value)

    def get_session_config_entry(self, key):
        return self._configs[str(key)]


class RunOptions:
    """onnxruntime.RunOptions: accepted, not used (Lumen runs are not tagged or cancellable)."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False


class NodeArg:
    """A graph input or output as onnxruntime describes it: ``name``, ``type``
    ('tensor(float)'), ``shape`` (ints for fixed dims, the dim_param string for symbolic ones,
    None for unknown ones)."""

    def __init__(self, name, type, shape):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    def __init__(self, proto):
        self.producer_name = proto.producer_name if proto is not None else ""
        self.graph_name = proto.graph.name if proto is not None else ""
        self.domain = proto.domain if proto is not None else ""
        self.description = proto.doc_string if proto is not None else ""
        self.graph_description = proto.graph.doc_string if proto is not None else ""
        self.version = proto.model_version if proto is not None else 0
        self.custom_metadata_map = ({p.key: p.value for p in proto.metadata_props}
                                    if proto is not None else {})


def get_available_providers():
    return list(_PROVIDERS)


def get_device():
    return "CPU"


def _type_string(type_proto):
    """onnxruntime's type text: 'tensor(float)', 'seq(tensor(int64))', 'optional(...)'."""
    import onnx

    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        name = onnx.TensorProto.DataType.Name(type_proto.tensor_type.elem_type).lower()
        return f"tensor({name})"
    if kind == "sequence_type":
        return f"seq({_type_string(type_proto.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_type_string(type_proto.optional_type.elem_type)})"
    if kind == "map_type":
        key = onnx.TensorProto.DataType.Name(type_proto.map_type.key_type).lower()
        return f"map({key},{_type_string(type_proto.map_type.value_type)})"
    return "unknown"


def _shape_list(type_proto):
    if type_proto.WhichOneof("value") != "tensor_type" or not type_proto.tensor_type.HasField(
            "shape"):
        return None
    dims = []
    for d in type_proto.tensor_type.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(d.dim_value)
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def _node_args(values):
    return [NodeArg(v.name, _type_string(v.type), _shape_list(v.type)) for v in values]


class InferenceSession:
    """``onnxruntime.InferenceSession`` on Lumen: the model is loaded, optimized and compiled once
    here; ``run`` executes it (models with symbolic dims get a plan per input-shape signature)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        import onnx

        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            data = bytes(path_or_bytes)
            proto = onnx.load_model_from_string(data)
            model = load_onnx(data)
            self._model_path = None
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            proto = onnx.load(self._model_path, load_external_data=False)
            model = load_onnx(self._model_path)
        else:
            raise TypeError("InferenceSession expects a model path (str) or the serialized model "
                            f"(bytes), got {type(path_or_bytes)!r}")
        level = int(self._sess_options.graph_optimization_level)
        opt_level = 0 if level <= 0 else (1 if level == 1 else 2)
        self._compiled = model.compile(num_threads=int(self._sess_options.intra_op_num_threads),
                                       opt_level=opt_level)
        initializers = {t.name for t in proto.graph.initializer}
        self._inputs = _node_args([v for v in proto.graph.input if v.name not in initializers])
        self._outputs = _node_args(proto.graph.output)
        self._overridable = _node_args([v for v in proto.graph.input if v.name in initializers])
        self._meta = ModelMetadata(proto)
        self._output_index = {o.name: i for i, o in enumerate(self._outputs)}
        self._input_types = {i.name: i.type for i in self._inputs}

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return list(self._overridable)

    def get_modelmeta(self):
        return self._meta

    def get_providers(self):
        return list(_PROVIDERS)

    def get_provider_options(self):
        return {p: {} for p in _PROVIDERS}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        pass  # Lumen places nodes itself; accepted so that code calling it runs

    def run(self, output_names, input_feed, run_options=None):
        """Returns the outputs named in ``output_names`` (all when None or empty) as NumPy
        arrays, in that order. ``input_feed`` maps every input name to an array."""
        wanted = list(output_names) if output_names else [o.name for o in self._outputs]
        for name in wanted:
            if name not in self._output_index:
                raise _lumen.Error(f"run: invalid output name '{name}'; the model's outputs are "
                                   f"{[o.name for o in self._outputs]}")
        feeds = {}
        for name, value in input_feed.items():
            # Sequences take lists and optionals None: only plain tensors go through asarray.
            tensor_input = not self._input_types.get(name, "tensor").startswith(("seq", "opt"))
            feeds[name] = _np.asarray(value) if tensor_input and not isinstance(
                value, (_np.ndarray, _lumen.Tensor)) else value
        outputs = self._compiled.run(feeds)
        return [outputs[self._output_index[name]] for name in wanted]
