"""Writes the fuzz targets' seed corpora and dictionary (tools/fuzz.sh runs it at build time).

    python tests/fuzz/make_corpus.py OUT_DIR

OUT_DIR/seeds/fuzz_model (written afresh each time): the ONNX node-test models of the installed onnx package (every op,
every opset, small), its other stored test models under 256 KB but the light CNNs (too slow
under ASan), and reproducers of the defects fuzzing found
before (they must stay fixed); OUT_DIR/corpus/TARGET is where each target's corpus grows.
OUT_DIR/onnx.dict: libFuzzer's dictionary of the strings ONNX
models hold (op types, attribute names, domains). The other targets read fuzzed numbers, so their
corpora start empty.
"""
import hashlib
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_SEED_BYTES = 256 * 1024
TARGETS = ("fuzz_model", "fuzz_memory_planner", "fuzz_shape_inference", "fuzz_external_data")


def regression_models():
    """Models that once crashed or ran away (issue 24): int64 Clip without max (UBSan: a double
    bound converted back out of range) and a ConstantOfShape of 2^40 elements (materialized at
    load)."""
    clip = helper.make_graph(
        [helper.make_node("Clip", ["x", "lo"], ["y"])], "clip_int64",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [4])],
        [numpy_helper.from_array(np.array(-3, np.int64), "lo")])
    huge = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["c"]),
         helper.make_node("Add", ["x", "c"], ["y"])], "huge_constant_of_shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1 << 20, 1 << 20], np.int64), "shape")])
    for graph in (clip, huge):
        yield graph.name, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def seed_models():
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in node.collect_testcases():
            yield case.model.SerializeToString()
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for root, _, files in os.walk(data):
        if os.path.basename(root) == "light":
            continue  # whole CNNs (VGG-19: 20 GFLOP), minutes a run under ASan
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".onnx") and os.path.getsize(path) <= MAX_SEED_BYTES:
                with open(path, "rb") as f:
                    yield f.read()
    for _, model in regression_models():
        yield model.SerializeToString()


def dictionary():
    words = set()
    for schema in onnx.defs.get_all_schemas_with_history():
        words.add(schema.name)
        words.update(schema.attributes)
        if schema.domain:
            words.add(schema.domain)
    return sorted(w for w in words if w.isprintable() and '"' not in w and "\\" not in w)


def main(out):
    for target in TARGETS:
        os.makedirs(os.path.join(out, "corpus", target), exist_ok=True)
    seed_dir = os.path.join(out, "seeds", "fuzz_model")
    shutil.rmtree(seed_dir, ignore_errors=True)
    os.makedirs(seed_dir)
    seeds = 0
    for blob in seed_models():
        name = hashlib.sha1(blob).hexdigest()
        with open(os.path.join(seed_dir, name), "wb") as f:
            f.write(blob)
        seeds += 1
    with open(os.path.join(out, "onnx.dict"), "w") as f:
        for word in dictionary():
            f.write(f'"{word}"\n')
    print(f"{seeds} seed models, dictionary of {len(dictionary())} words in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
