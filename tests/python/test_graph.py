"""Graph building, compilation and execution from Python."""

import threading
import time

import numpy as np
import pytest

import lumen


def build_quickstart(weight):
    graph = lumen.Graph()
    x = graph.add_input("input", [1, 10])
    w = graph.add_constant("weight", weight)
    y = graph.add_op("matmul", [x, w])
    graph.mark_output(y)
    return graph, x, y


def test_quickstart_graph():
    weight = np.random.default_rng(0).standard_normal((10, 5)).astype(np.float32)
    graph, x, y = build_quickstart(weight)
    assert (x.name, x.dtype, x.shape) == ("input", "float32", (1, 10))
    assert y.shape == (1, 5) and y.dtype == "float32"
    assert "matmul" in str(graph)
    weight[:] = 0  # add_constant copied the array

    exe = graph.compile()
    assert [(i.name, i.dtype, i.shape) for i in exe.inputs] == [("input", "float32", (1, 10))]
    assert [(o.dtype, o.shape) for o in exe.outputs] == [("float32", (1, 5))]
    assert [s.op for s in exe.steps] == ["matmul"]
    assert exe.steps[0].input_shapes == [(1, 10), (10, 5)]
    assert exe.steps[0].output_shapes == [(1, 5)]

    weight = np.random.default_rng(0).standard_normal((10, 5)).astype(np.float32)
    data = np.random.default_rng(1).standard_normal((1, 10)).astype(np.float32)
    expected = data.astype(np.float64) @ weight
    (out,) = exe.execute(data)
    assert isinstance(out, lumen.Tensor)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5)
    (out,) = exe({"input": data})
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5)
    (out,) = exe(lumen.tensor(data))
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5)


def test_execute_with_wrong_shape_names_the_input():
    graph, _, _ = build_quickstart(np.ones((10, 5), np.float32))
    exe = graph.compile()
    with pytest.raises(lumen.Error, match="input"):
        exe.execute(np.ones((2, 10), np.float32))
    with pytest.raises(lumen.Error):
        exe.execute()


def test_graph_with_weights_attributes_and_runtime():
    graph = lumen.Graph()
    x = graph.add_input("x", [1, 3, 8, 8])
    w = graph.add_weight("w", [4, 3, 3, 3])
    y = graph.add_op("conv2d", [x, w], name="conv", strides=[1, 1], pads=[1, 1, 1, 1])
    z = graph.add_op("leaky_relu", [y], alpha=0.1)
    graph.mark_output(z)
    assert z.shape == (1, 4, 8, 8)
    graph.optimize(opt_level=2)
    runtime = lumen.Runtime(num_threads=1, backend="reference")
    exe = graph.compile(runtime)
    assert all(s.backend == "reference" for s in exe.steps)
    del runtime  # the Executable keeps its Runtime alive
    data = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (out,) = exe(data)
    assert out.shape == (1, 4, 8, 8)
    assert exe.runtime.num_threads == 1


def test_execute_from_two_threads():
    weight = np.random.default_rng(3).standard_normal((10, 5)).astype(np.float32)
    graph, _, _ = build_quickstart(weight)
    exe = graph.compile()
    inputs = [np.full((1, 10), i + 1, np.float32) for i in range(2)]
    results = [None, None]

    def work(i):
        for _ in range(50):
            (out,) = exe.execute(inputs[i])
            results[i] = np.asarray(out).copy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        np.testing.assert_allclose(results[i], inputs[i].astype(np.float64) @ weight, rtol=1e-5)


def assert_runs_without_gil(fn):
    """Runs fn on a worker while the main thread keeps running Python: had fn held the GIL, the
    main loop would record nothing while fn ran."""
    go, span = threading.Event(), {}

    def work():
        go.wait()
        span["start"] = time.perf_counter()
        fn()
        span["end"] = time.perf_counter()

    worker = threading.Thread(target=work)
    worker.start()
    ticks = []
    go.set()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    start, end = span["start"], span["end"]
    assert end - start > 0.02, "the work is too small to measure"
    inside = [start] + [t for t in ticks if start < t < end] + [end]
    assert max(np.diff(inside)) < 0.5 * (end - start)


def test_execute_releases_the_gil():
    graph = lumen.Graph()
    x = graph.add_input("x", [512, 512])
    w = graph.add_constant("w", np.eye(512, dtype=np.float32))
    y = x
    for _ in range(16):
        y = graph.add_op("matmul", [y, w])
    graph.mark_output(y)
    exe = graph.compile(lumen.Runtime(num_threads=1))
    data = np.ones((512, 512), np.float32)
    assert_runs_without_gil(lambda: exe.execute(data))


def test_eager_ops_release_the_gil():
    a = np.ones((384, 384), np.float32)
    assert_runs_without_gil(lambda: lumen.matmul(a, a, backend="reference"))
