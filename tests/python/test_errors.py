"""Bad input raises lumen.Error (a RuntimeError) whose message names the op and the shapes."""

import numpy as np
import pytest

import lumen


def f32(*shape):
    return np.ones(shape, np.float32)


def test_error_is_a_runtime_error():
    assert issubclass(lumen.Error, RuntimeError)


def test_wrong_rank():
    with pytest.raises(lumen.Error) as info:
        lumen.conv2d(f32(3, 8, 8), f32(4, 3, 3, 3))
    message = str(info.value)
    assert "conv2d" in message and "[3, 8, 8]" in message


def test_mismatched_shapes():
    with pytest.raises(lumen.Error) as info:
        lumen.add(f32(2, 3), f32(4, 5))
    message = str(info.value)
    assert "add" in message and "[2, 3]" in message and "[4, 5]" in message

    with pytest.raises(RuntimeError) as info:
        lumen.matmul(f32(2, 3), f32(4, 5))
    message = str(info.value)
    assert "matmul" in message and "[2, 3]" in message and "[4, 5]" in message

    with pytest.raises(lumen.Error, match="conv2d"):
        lumen.conv2d(f32(1, 3, 8, 8), f32(4, 2, 3, 3))  # 3 channels, weight expects 2


def test_unknown_op():
    with pytest.raises(lumen.Error, match="no_such_op"):
        lumen.call_op("no_such_op", [f32(2)])
    graph = lumen.Graph()
    x = graph.add_input("x", [2])
    with pytest.raises(lumen.Error, match="no_such_op"):
        graph.add_op("no_such_op", [x])


def test_graph_shape_errors_name_the_op():
    graph = lumen.Graph()
    x = graph.add_input("x", [1, 10])
    w = graph.add_constant("w", f32(7, 5))
    with pytest.raises(lumen.Error) as info:
        graph.add_op("matmul", [x, w])
    message = str(info.value)
    assert "matmul" in message and "[1, 10]" in message and "[7, 5]" in message


def test_unknown_backend():
    with pytest.raises(lumen.Error, match="no_such_backend"):
        lumen.relu(f32(2), backend="no_such_backend")


def test_conversion_errors_are_type_errors():
    with pytest.raises(TypeError, match="complex"):
        lumen.tensor(np.zeros(3, np.complex64))
    assert lumen.tensor(np.array(["a", "b"])).dtype == "string"
    with pytest.raises(TypeError, match="object arrays must hold str"):
        lumen.tensor(np.array([1, "b", None], dtype=object))
    with pytest.raises(TypeError, match="alpha"):
        lumen.call_op("leaky_relu", [f32(2)], {"alpha": object()})
    with pytest.raises(TypeError):
        lumen.from_numpy([1.0, 2.0])
