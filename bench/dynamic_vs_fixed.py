"""A model with symbolic input dims against the same model with those dims fixed, run at the same
shape with `lumen bench`'s engine and timer, the two variants' runs alternating one by one in one
process; then a stream of random shapes for correctness and bounded memory.

    PYTHONPATH=build/python .venv/bin/python bench/dynamic_vs_fixed.py [--threads 2] [--runs 100]

Models: the ONNX package's light ResNet-50 (batch made symbolic) and, when bench/.zoo holds it,
the zoo's BERT (batch and sequence symbolic). Prints median latencies and the ratio dynamic /
fixed per model; then 200 calls of the dynamic BERT (or ResNet-50) at random shapes, each output
checked against onnxruntime, with the process's peak RSS before and after.
"""

import argparse
import os
import resource
import statistics
import sys
import tempfile

import numpy as np
import onnx

import lumen
from lumen import _bench

HERE = os.path.dirname(os.path.abspath(__file__))


def with_dims(proto, dims):
    """A copy of `proto` whose graph inputs have `dims` (input name -> list of int or str)."""
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    for value in model.graph.input:
        if value.name not in dims:
            continue
        shape = value.type.tensor_type.shape
        for d, v in zip(shape.dim, dims[value.name]):
            d.Clear()
            if isinstance(v, str):
                d.dim_param = v
            else:
                d.dim_value = v
    return model


def variants():
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                         "light_resnet50.onnx")
    resnet = onnx.load(light)
    name = resnet.graph.input[0].name
    yield "resnet50", with_dims(resnet, {name: ["N", 3, 224, 224]}), \
        with_dims(resnet, {name: [1, 3, 224, 224]}), {"N": 1}
    bert_path = os.path.join(HERE, ".zoo", "bert.torchscript.opset17.onnx")
    if os.path.exists(bert_path):
        bert = onnx.load(bert_path)
        dims = {"input_ids": ["batch", "seq"], "attention_mask": ["batch", "seq"]}
        fixed = {"input_ids": [1, 128], "attention_mask": [1, 128]}
        yield "bert (zoo)", with_dims(bert, dims), with_dims(bert, fixed), {"batch": 1, "seq": 128}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--stream", type=int, default=200)
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp()
    stream_model = None
    for name, dynamic, fixed, dims in variants():
        paths = {}
        for kind, proto in (("dynamic", dynamic), ("fixed", fixed)):
            paths[kind] = os.path.join(tmp, f"{name.split()[0]}_{kind}.onnx")
            onnx.save(proto, paths[kind])
        # Both compiled in this process with lumen bench's engine and timer, on the same inputs,
        # runs alternating one by one: this machine's speed drifts by up to 30% over seconds,
        # which alternating rounds of many runs each would read as a difference.
        engines = {kind: _bench._LumenEngine(paths[kind], args.threads, "", 2)
                   for kind in paths}
        feeds = _bench.make_inputs(engines["dynamic"].model.inputs, seed=0, dims=dims)
        times = {kind: [] for kind in engines}
        for kind, engine in engines.items():
            engine.bind(feeds)
            for _ in range(args.warmup):
                engine.run()
        for _ in range(args.runs):
            for kind, engine in engines.items():
                times[kind].append(_bench._timed(engine) * 1e3)
        d, f = statistics.median(times["dynamic"]), statistics.median(times["fixed"])
        print(f"{name:<12} dynamic {d:8.3f} ms  fixed {f:8.3f} ms  ratio {d / f:.3f}  "
              f"(medians of {args.runs} alternating runs each, {args.threads} threads)",
              flush=True)
        stream_model = (name, paths["dynamic"], dynamic)

    import onnxruntime as ort

    name, path, proto = stream_model
    compiled = lumen.load_onnx(path).compile(num_threads=args.threads)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    rss = []
    worst = 0.0
    for i in range(args.stream):
        if name.startswith("bert"):
            batch, seq = int(rng.integers(1, 4)), int(rng.integers(1, 257))
            ids = rng.integers(0, 1000, size=(batch, seq)).astype(np.int64)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        else:
            feeds = {proto.graph.input[0].name:
                     rng.standard_normal((int(rng.integers(1, 4)), 3, 224, 224)).astype(np.float32)}
        got = compiled.run(feeds)
        want = session.run(None, feeds)
        for g, w in zip(got, want):
            err = float(np.abs(g - w).max()) / max(1e-6, float(np.abs(w).max()))
            worst = max(worst, err)
            if err > 1e-4:
                print(f"call {i}: relative error {err:.2e}")
                return 1
        if i in (9, args.stream // 2, args.stream - 1):
            rss.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(f"{name}: {args.stream} calls at random shapes, all match onnxruntime (worst relative "
          f"error {worst:.1e}); peak RSS after 10 / {args.stream // 2} / {args.stream} calls: "
          + " / ".join(f"{m:.0f}" for m in rss) + " MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
