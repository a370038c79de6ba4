"""ONNX conformance: runs the installed ``onnx`` package's backend tests on Lumen.

    python -m lumen.conformance [--filter REGEX] [--json FILE] [--expect FILE] [--backend cpu]

Node tests come from ``onnx.backend.test.case.node`` (the cases the ONNX project generates its
``data/node`` folders from; a package that ships those folders has them read too). Light models
are ``onnx/backend/test/data/light/*.onnx``: inputs are made as ONNX's own test runner makes them
and compared with the stored ``*_output_0.pb`` (else with ``onnx.reference``). Outputs are checked
with the ONNX runner's own comparison and tolerances.

A test is *skipped* only when Lumen reports something unsupported (an op, a dtype, a non-tensor
input); any other error or a wrong result is a *failure*. ``--expect FILE`` lists tests that must
pass: the exit status is 1 if any of them does not.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
import time
import warnings

import numpy as np

import lumen

_UNSUPPORTED = re.compile(r"unsupported|not supported|no backend has a kernel|has no kernel")


class Case:
    def __init__(self, name, category, op, model, data_sets, rtol, atol):
        self.name, self.category, self.op = name, category, op
        self.model, self.data_sets, self.rtol, self.atol = model, data_sets, rtol, atol


def _onnx_dir():
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def _load_pb(path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def node_cases():
    import onnx
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collected = node.collect_testcases()
    cases = {}
    for c in collected:
        op = c.model.graph.node[0].op_type if c.model.graph.node else "?"
        cases[c.name] = Case(c.name, "node", op, c.model, c.data_sets, c.rtol, c.atol)
    # Older onnx packages ship the generated folders; read any the collector did not produce.
    for d in sorted(glob.glob(os.path.join(_onnx_dir(), "node", "*"))):
        name = os.path.basename(d)
        if name in cases or not os.path.exists(os.path.join(d, "model.onnx")):
            continue
        model = onnx.load(os.path.join(d, "model.onnx"))
        data_sets = []
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            ins = [_load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")))]
            outs = [_load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")))]
            data_sets.append((ins, outs))
        op = model.graph.node[0].op_type if model.graph.node else "?"
        cases[name] = Case(name, "node", op, model, data_sets, 1e-3, 1e-7)
    return list(cases.values())


def light_cases():
    import onnx
    from onnx.backend.test.case import model as model_cases
    from onnx.backend.test.runner import Runner

    tolerances = {c.model_name: (c.rtol, c.atol) for c in model_cases.collect_testcases()
                  if c.kind == "real"}
    cases = []
    for path in sorted(glob.glob(os.path.join(_onnx_dir(), "light", "light_*.onnx"))):
        model_name = os.path.basename(path)[len("light_"):-len(".onnx")]
        model = onnx.load(path)
        inits = {i.name for i in model.graph.initializer}
        inputs = [Runner.generate_dummy_data(x, seed=0, name=model_name, random=False)
                  for x in model.graph.input if x.name not in inits]
        prefix = path[:-len(".onnx")]
        expected_paths = [f"{prefix}_output_{i}.pb" for i in range(len(model.graph.output))]
        if all(os.path.exists(p) for p in expected_paths):
            outputs = [_load_pb(p) for p in expected_paths]
        else:
            from onnx.reference import ReferenceEvaluator

            feeds = {x.name: v for x, v in zip(
                [x for x in model.graph.input if x.name not in inits], inputs)}
            outputs = ReferenceEvaluator(model).run(None, feeds)
        rtol, atol = tolerances.get(model_name, (1e-3, 1e-7))
        cases.append(Case(f"test_{model_name}", "light", "model", model, [(inputs, outputs)],
                          rtol, atol))
    return cases


def _as_array(x):
    from onnx import numpy_helper
    import onnx

    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    if isinstance(x, np.generic):  # a NumPy scalar is a rank-0 tensor
        return np.asarray(x)
    if isinstance(x, onnx.SequenceProto):
        return _as_array(numpy_helper.to_list(x))
    if isinstance(x, onnx.OptionalProto):
        return _as_array(numpy_helper.to_optional(x))
    if isinstance(x, list):  # a sequence
        return [_as_array(v) for v in x]
    return x


def _assert_similar(expected, outs, rtol, atol):
    """onnx's Runner.assert_similar_outputs, item by item for sequences (it calls len() on
    each item, which fails for 0-d ones) and with None for empty optionals."""
    from onnx.backend.test.runner import Runner

    assert len(outs) == len(expected), f"{len(outs)} outputs, expected {len(expected)}"
    for e, o in zip(expected, outs):
        if e is None or o is None:
            assert e is None and o is None, f"expected {e!r}, got {o!r}"
        elif isinstance(e, list):
            assert isinstance(o, list), f"expected a sequence, got {type(o)}"
            _assert_similar(e, o, rtol, atol)
        else:
            Runner.assert_similar_outputs([e], [o], rtol=rtol, atol=atol)


def run_case(case, backend, opt_level):
    """Returns (status, message)."""

    try:
        model = lumen.load_onnx(case.model.SerializeToString())
        compiled = model.compile(backend=backend, opt_level=opt_level)
        names = [i["name"] for i in compiled.inputs]
        for inputs, expected in case.data_sets:
            inputs = [_as_array(x) for x in inputs]
            if any(isinstance(x, dict) for x in inputs):
                return "skipped", "map inputs are not supported"
            outs = compiled.run(dict(zip(names, inputs)))
            expected = [_as_array(x) for x in expected]
            _assert_similar(expected, outs, case.rtol, case.atol)
        return "passed", ""
    except lumen.Error as e:
        msg = str(e)
        return ("skipped" if _UNSUPPORTED.search(msg) else "failed"), msg
    except AssertionError as e:
        return "failed", "wrong result: " + str(e).strip()[:2000]
    except Exception as e:  # a bug in Lumen's Python layer, reported as a failure
        return "failed", f"{type(e).__name__}: {e}"


def _check_backend(backend):
    """Exits naming the reason where `backend` cannot run here (not built, no device), instead of
    counting every case as failed."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    try:
        lumen.load_onnx(helper.make_model(graph)).compile(backend=backend)
    except lumen.Error as e:
        if "not available" in str(e) or "unknown backend" in str(e):
            sys.exit(f"--backend {backend}: {e}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m lumen.conformance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--filter", help="only tests whose name matches this regular expression")
    p.add_argument("--json", help="write every test's status and message to this file")
    p.add_argument("--expect", help="file listing tests that must pass (one name per line)")
    p.add_argument("--backend", default="", help="force one backend (cpu, vulkan, cuda, reference)")
    p.add_argument("--opt-level", type=int, default=2)
    p.add_argument("--also-opt-level", type=int, default=None,
                   help="run every case at this level too; fail when the two levels disagree "
                        "on any test's status (the passes must not change what passes)")
    p.add_argument("--no-light", action="store_true", help="skip the light models")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = p.parse_args(argv)

    import onnx

    if args.backend:
        _check_backend(args.backend)
    cases = node_cases() + ([] if args.no_light else light_cases())
    if args.filter:
        rx = re.compile(args.filter)
        cases = [c for c in cases if rx.search(c.name)]
    results = []
    mismatches = []
    by_category = collections.defaultdict(collections.Counter)
    start = time.perf_counter()
    for case in cases:
        t0 = time.perf_counter()
        status, message = run_case(case, args.backend, args.opt_level)
        results.append({"name": case.name, "category": case.category, "op": case.op,
                        "status": status, "message": message,
                        "seconds": round(time.perf_counter() - t0, 4)})
        by_category[case.category][status] += 1
        if args.also_opt_level is not None:
            other, other_message = run_case(case, args.backend, args.also_opt_level)
            if other != status:
                mismatches.append(f"OPT-LEVEL MISMATCH {case.name}: {status} at opt_level "
                                  f"{args.opt_level}, {other} at opt_level {args.also_opt_level}: "
                                  f"{(message or other_message)[:300]}")
        if args.verbose and status == "failed":
            print(f"FAIL {case.name}: {message[:300]}")

    print(f"ONNX conformance on onnx {onnx.__version__} ({time.perf_counter() - start:.1f} s)")
    for category, counts in sorted(by_category.items()):
        total = sum(counts.values())
        print(f"  {category:6s} {counts['passed']:5d} passed, {counts['failed']:5d} failed, "
              f"{counts['skipped']:5d} skipped of {total}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"onnx_version": onnx.__version__, "results": results}, f, indent=1)

    exit_code = 0
    if args.also_opt_level is not None:
        for line in mismatches:
            print(line)
        print(f"opt_level {args.opt_level} vs {args.also_opt_level}: {len(mismatches)} tests "
              "differ in status")
        exit_code = 1 if mismatches else 0
    if args.expect:
        with open(args.expect) as f:
            must_pass = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        status_of = {r["name"]: r for r in results}
        regressions = sorted(n for n in must_pass if n in status_of
                             and status_of[n]["status"] != "passed")
        missing = sorted(n for n in must_pass if n not in status_of and not args.filter)
        for name in regressions:
            print(f"REGRESSION {name}: {status_of[name]['status']}: "
                  f"{status_of[name]['message'][:300]}")
        for name in missing:
            print(f"MISSING {name}: expected to pass but not collected")
        if regressions or missing:
            exit_code = 1
    totals = collections.Counter(r["status"] for r in results)
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
