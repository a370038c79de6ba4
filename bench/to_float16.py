"""A float16 copy of a float32 ONNX model, to measure half-precision models (no converter package
needed): float32 initializers, graph inputs and outputs, Constant values and Cast targets become
float16; value_info is dropped (shape inference redoes it).

    .venv/bin/python bench/to_float16.py bench/.zoo/resnet18.torchscript.opset17.onnx /tmp/r18_f16.onnx
    PYTHONPATH=build/python .venv/bin/python -m lumen bench /tmp/r18_f16.onnx --threads 2 \\
        --compare onnxruntime --rtol 0.05 --atol 0.01
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper


def to_float16(model):
    graph = model.graph
    for i, t in enumerate(graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            graph.initializer[i].CopyFrom(
                numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for v in list(graph.input) + list(graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del graph.value_info[:]
    for node in graph.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
            if node.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    return model


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: to_float16.py IN.onnx OUT.onnx")
    onnx.save(to_float16(onnx.load(sys.argv[1])), sys.argv[2])
