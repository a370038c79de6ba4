"""The main job: load a real-architecture ONNX model, run it on Lumen, check it, time it.

    python examples/python/onnx_demo.py [MODEL.onnx] [--runs N]

Default model: ResNet-50 from the onnx package's light models (real architecture, weights made by
ConstantOfShape so the file is small). Its input is made as ONNX's test runner makes it and the
output is checked against the stored reference output (and onnxruntime when installed).
"""
import argparse
import os
import statistics
import time

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.runner import Runner

import lumen


def default_model():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        "light_resnet50.onnx")


def median_ms(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", nargs="?", default=default_model())
    p.add_argument("--runs", type=int, default=10)
    args = p.parse_args()

    proto = onnx.load(args.model)
    start = time.perf_counter()
    model = lumen.load_onnx(args.model)
    compiled = model.compile()
    compile_s = time.perf_counter() - start
    info = model.inputs[0]
    memory = compiled.executable.memory
    print(f"model: {os.path.basename(args.model)}  ({model.graph.num_nodes} Lumen nodes, "
          f"{compiled.graph.num_nodes} after optimization; loaded and compiled in "
          f"{compile_s:.2f} s)")
    for space in memory.spaces:
        print(f"memory plan ({space.space}): naive {space.naive_bytes / 2**20:.1f} MiB, planned "
              f"{space.planned_bytes / 2**20:.1f} MiB, lower bound "
              f"{space.lower_bound_bytes / 2**20:.1f} MiB")
    print(f"input: {info['name']} {info['dtype']} {info['shape']}")

    inits = {i.name for i in proto.graph.initializer}
    x_info = next(x for x in proto.graph.input if x.name not in inits)
    x = Runner.generate_dummy_data(x_info, seed=0, name="demo", random=False)
    y = compiled(x)

    reference = args.model[:-len(".onnx")] + "_output_0.pb"
    if os.path.exists(reference):
        t = onnx.TensorProto()
        with open(reference, "rb") as f:
            t.ParseFromString(f.read())
        expected = numpy_helper.to_array(t)
        err = float(np.abs(y - expected).max())
        print(f"check vs stored reference output: max |diff| = {err:.3g}")
        np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-5)

    flat = y.reshape(-1)
    top = np.argsort(flat)[::-1][:5]
    print("top-5 outputs: " + ", ".join(f"#{i}: {flat[i]:.5f}" for i in top))
    lumen_ms = median_ms(lambda: compiled(x), args.runs)
    print(f"Lumen latency: {lumen_ms:.1f} ms (median of {args.runs})")
    try:
        import onnxruntime as ort
    except ImportError:
        return
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {x_info.name: x})[0]
    print(f"check vs onnxruntime: max |diff| = {float(np.abs(y - ref).max()):.3g}")
    ort_ms = median_ms(lambda: sess.run(None, {x_info.name: x}), args.runs)
    print(f"onnxruntime latency: {ort_ms:.1f} ms (median of {args.runs}); "
          f"Lumen/onnxruntime = {lumen_ms / ort_ms:.2f}")


if __name__ == "__main__":
    main()
