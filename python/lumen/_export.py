"""A lumen.Graph as an ONNX model (``Model.save_optimized``).

Lumen ops that compute exactly what an ONNX op computes, with the same inputs and attributes,
become that op in the default domain at ``OPSET``. Every other op (fused_conv, fused_gemm, ...)
is written in the "lumen" domain (version 1) under its Lumen name with its Lumen attributes;
lumen.load_onnx reads it back and onnx.checker accepts it (custom domains are not checked
against schemas), and Netron shows it as a custom op."""

import numpy as np

from . import _lumen

__all__ = ["OPSET", "LUMEN_DOMAIN", "graph_to_onnx", "save_graph"]

OPSET = 17
LUMEN_DOMAIN = "lumen"
LUMEN_DOMAIN_VERSION = 1

# Lumen op -> ONNX op whose inputs and attributes are the same (checked against each Lumen op's
# ONNX converter, which passes them through or resolves them to this explicit form). Reshape's
# "shape" attribute becomes its second input.
ONNX_OPS = {
    "conv2d": "Conv",
    "max_pool2d": "MaxPool",
    "avg_pool2d": "AveragePool",
    "global_avg_pool": "GlobalAveragePool",
    "global_max_pool": "GlobalMaxPool",
    "gemm": "Gemm",
    "matmul": "MatMul",
    "batch_norm": "BatchNormalization",
    "layer_norm": "LayerNormalization",
    "lrn": "LRN",
    "softmax": "Softmax",
    "log_softmax": "LogSoftmax",
    "reshape": "Reshape",
    "flatten": "Flatten",
    "transpose": "Transpose",
    "concat": "Concat",
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "leaky_relu": "LeakyRelu",
    "elu": "Elu",
    "softplus": "Softplus",
    "hard_sigmoid": "HardSigmoid",
    "hard_swish": "HardSwish",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "neg": "Neg",
    "abs": "Abs",
    "erf": "Erf",
    "reciprocal": "Reciprocal",
    "floor": "Floor",
    "ceil": "Ceil",
}


def _elem_type(dtype):
    from onnx import TensorProto, helper

    special = {"bfloat16": TensorProto.BFLOAT16, "bool": TensorProto.BOOL}
    if dtype in special:
        return special[dtype]
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _value_info(value):
    """A ValueInfoProto with the value's dtype and (symbolic where named) shape."""
    from onnx import helper

    from ._onnx import _info

    shape = _info(value)["shape"]
    return helper.make_tensor_value_info(value.name, _elem_type(value.dtype),
                                         None if shape is None else list(shape))


def _attribute(name, value, kind):
    from onnx import AttributeProto, helper, numpy_helper

    kinds = {"ints": AttributeProto.INTS, "floats": AttributeProto.FLOATS,
             "strings": AttributeProto.STRINGS}
    if kind == "tensor":
        return helper.make_attribute(name, numpy_helper.from_array(np.asarray(value)))
    if kind == "float":
        return helper.make_attribute(name, float(value))
    if kind in kinds:  # typed explicitly: an empty list does not say what it holds
        return helper.make_attribute(name, list(value), attr_type=kinds[kind])
    return helper.make_attribute(name, value)


def _onnx_op(node):
    """The default-domain op for `node`, or None when it must stay a Lumen op."""
    import onnx.defs

    op_type = ONNX_OPS.get(node.op)
    if op_type is None:
        return None
    try:
        schema = onnx.defs.get_schema(op_type, OPSET, "")
    except onnx.defs.SchemaError:
        return None
    attributes = set(node.attributes)
    if node.op == "reshape":
        attributes.discard("shape")
    # An attribute a pass added that ONNX does not know means the node is no longer that op.
    if not attributes <= set(schema.attributes):
        return None
    if node.op == "layer_norm" and (len(node.inputs) < 2 or node.inputs[1] is None):
        return None
    return op_type


def graph_to_onnx(graph, name="lumen_optimized"):
    """An onnx.ModelProto computing what `graph` computes (see the module docstring)."""
    from onnx import helper, numpy_helper

    nodes, initializers, used_lumen = [], [], False
    initialized, taken = set(), set()

    def initializer(value):
        if value.name not in initialized:
            initialized.add(value.name)
            initializers.append(numpy_helper.from_array(value.constant, value.name))

    graph_outputs = {v.name for v in graph.outputs}
    onnx_nodes = graph.nodes()
    for node in onnx_nodes:
        for v in list(node.inputs) + list(node.outputs):
            if v is not None:
                taken.add(v.name)
    for node in onnx_nodes:
        if "graph" in node.attribute_kinds.values():
            raise _lumen.Error(f"save_optimized: node '{node.name}' ({node.op}) holds subgraphs; "
                               "graphs with control flow cannot be written as ONNX yet")
        for v in node.outputs:
            if v.dtype in ("sequence", "optional", "string"):
                raise _lumen.Error(f"save_optimized: node '{node.name}' ({node.op}) makes a "
                                   f"{v.dtype}; sequences, optionals and strings cannot be "
                                   "written as ONNX yet")
        op_type = _onnx_op(node)
        attrs = node.attributes
        kinds = node.attribute_kinds
        inputs = []
        for v in node.inputs:
            if v is None:
                inputs.append("")  # an omitted optional input
                continue
            if v.is_constant:
                initializer(v)
            inputs.append(v.name)
        outputs = [v.name for v in node.outputs]
        if op_type == "Reshape" and "shape" in attrs:
            shape_name = f"{node.name}/shape"
            while shape_name in taken or shape_name in initialized:
                shape_name += "_"
            initialized.add(shape_name)
            initializers.append(numpy_helper.from_array(
                np.asarray(attrs.pop("shape"), dtype=np.int64), shape_name))
            inputs = inputs[:1] + [shape_name]
        if op_type is not None and len(outputs) > 1:
            # Unused optional outputs (LayerNormalization's mean/inv_std_dev) are left out.
            outputs = [v.name if v.users or v.name in graph_outputs else "" for v in node.outputs]
            while outputs and not outputs[-1]:
                outputs.pop()
        onnx_attrs = [_attribute(k, v, kinds[k]) for k, v in sorted(attrs.items())]
        if op_type is None:
            used_lumen = True
            proto = helper.make_node(node.op, inputs, outputs, name=node.name,
                                     domain=LUMEN_DOMAIN)
        else:
            proto = helper.make_node(op_type, inputs, outputs, name=node.name)
        proto.attribute.extend(onnx_attrs)
        nodes.append(proto)

    for v in graph.outputs:  # outputs that are constants need their value too
        if v.is_constant:
            initializer(v)
    inputs = [_value_info(v) for v in graph.inputs]
    outputs = [_value_info(v) for v in graph.outputs]
    known = {v.name for v in graph.inputs} | graph_outputs | initialized
    value_info = []
    for node in onnx_nodes:
        for v in node.outputs:
            if v.name not in known and (v.shape is not None or v.symbolic_shape is not None):
                value_info.append(_value_info(v))
                known.add(v.name)

    onnx_graph = helper.make_graph(nodes, name, inputs, outputs, initializers,
                                   value_info=value_info)
    opsets = [helper.make_opsetid("", OPSET)]
    if used_lumen:
        opsets.append(helper.make_opsetid(LUMEN_DOMAIN, LUMEN_DOMAIN_VERSION))
    model = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="lumen",
                              ir_version=helper.find_min_ir_version_for(opsets,
                                                                        ignore_unknown=True))
    return model


def save_graph(graph, path, name="lumen_optimized"):
    """Writes graph_to_onnx(graph) to `path` and returns the ModelProto."""
    import onnx

    model = graph_to_onnx(graph, name)
    onnx.save(model, path)
    return model
