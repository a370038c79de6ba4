"""Graph compiler report for the ONNX light models: node counts before/after optimization and the
memory plan (naive / planned / lower bound) at opt_level 0 and 2; every model also runs once.

    PYTHONPATH=build/python .venv/bin/python tools/compiler_report.py [--json out.json]
"""

import argparse
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import lumen


def light_models():
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    return sorted(glob.glob(os.path.join(data, "light_*.onnx")))


def report_model(path):
    model = lumen.load_onnx(path)
    expected = numpy_helper.to_array(onnx.load_tensor(path[: -len(".onnx")] + "_output_0.pb"))
    rng = np.random.default_rng(0)
    row = {"model": os.path.basename(path)[len("light_"):-len(".onnx")]}
    for level in (0, 2):
        compiled = model.compile(opt_level=level)
        r = compiled.report()
        space = r["memory"]["spaces"][0] if r["memory"]["planned"] else None
        row[f"nodes_opt{level}"] = sum(r["ops"]["after"].values())
        row[f"nodes_input"] = sum(r["ops"]["before"].values())
        if space:
            row[f"naive_opt{level}"] = space["naive_bytes"]
            row[f"planned_opt{level}"] = space["planned_bytes"]
            row[f"bound_opt{level}"] = space["lower_bound_bytes"]
        # Only the output shape is checked here: the conformance suite compares the numerics
        # with the stored output at both levels (run.sh test).
        feeds = {i["name"]: rng.standard_normal(i["shape"]).astype(np.float32)
                 for i in compiled.inputs}
        out = compiled.run(feeds)[0]
        row[f"shape_ok_opt{level}"] = tuple(out.shape) == tuple(expected.shape)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args(argv)
    mib = 1 << 20
    rows = [report_model(path) for path in light_models()]
    print(f"{'model':14s} {'nodes in':>8s} {'opt2':>5s} | {'naive':>8s} {'planned':>8s} "
          f"{'bound':>8s} {'plan/naive':>10s} {'plan/bound':>10s}  (MiB, opt_level 2; "
          f"opt_level 0 in brackets)")
    for r in rows:
        print(f"{r['model']:14s} {r['nodes_input']:8d} {r['nodes_opt2']:5d} | "
              f"{r['naive_opt2'] / mib:8.2f} {r['planned_opt2'] / mib:8.2f} "
              f"{r['bound_opt2'] / mib:8.2f} {r['planned_opt2'] / r['naive_opt2']:10.3f} "
              f"{r['planned_opt2'] / r['bound_opt2']:10.3f}  "
              f"[{r['naive_opt0'] / mib:.2f} {r['planned_opt0'] / mib:.2f} "
              f"{r['bound_opt0'] / mib:.2f}]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["shape_ok_opt0"] and r["shape_ok_opt2"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
