"""What compiling a model did: ``CompiledModel.report()`` (a JSON-serializable dict) and
``CompiledModel.summary()`` (the same data as readable text). ``lumen inspect`` prints them."""

__all__ = ["build_report", "format_summary", "FUSED_OPS"]

MIB = 1024.0 * 1024.0

# Ops that stand for a group of original nodes: pattern recognition builds layer_norm and gelu
# from several element-wise nodes, like the fused_* ops.
FUSED_OPS = ("layer_norm", "gelu")


def is_fused(op):
    return op.startswith("fused_") or op in FUSED_OPS


def _ratio(numerator, denominator):
    return round(numerator / denominator, 4) if denominator else None


def _io(values):
    """Name, dtype and shape of graph inputs/outputs; symbolic dims by name, unknown ones None."""
    from ._onnx import _info

    infos = [_info(v) for v in values]
    return [{"name": i["name"], "dtype": i["dtype"],
             "shape": None if i["shape"] is None else list(i["shape"])} for i in infos]


def _memory(report):
    spaces = []
    for s in report.spaces:
        spaces.append({
            "space": s.space,
            "naive_bytes": s.naive_bytes,
            "planned_bytes": s.planned_bytes,
            "lower_bound_bytes": s.lower_bound_bytes,
            "num_values": s.num_values,
            "in_place": s.in_place,
            "planned_over_naive": _ratio(s.planned_bytes, s.naive_bytes),
            "planned_over_bound": _ratio(s.planned_bytes, s.lower_bound_bytes),
        })
    return {"planned": bool(report.planned), "spaces": spaces}


def build_report(compiled):
    """The report dict of a lumen.CompiledModel (see the keys below; byte counts are ints)."""
    opt = compiled.optimize_report
    after = dict(compiled.graph.op_counts())
    before = dict(opt.ops_before) if opt is not None else dict(after)
    if opt is not None and opt.ops_after:
        after = dict(opt.ops_after)
    passes = [] if opt is None else [{
        "name": p.name,
        "nodes_before": p.nodes_before,
        "nodes_after": p.nodes_after,
        "changes": list(p.changes),
        "milliseconds": p.milliseconds,
    } for p in opt.passes]

    # Step names are graph node names; the graph gives a fused node's inputs.
    nodes = {n.name: n for n in compiled.graph.nodes()}
    steps = [{"node": s.node, "op": s.op, "backend": s.backend, "dtype": s.dtype,
              "attributes": s.attributes, "algorithm": s.algorithm, "placement": s.placement,
              "estimates_us": dict(s.estimates_us), "copies_us": s.copies_us}
             for s in compiled.executable.steps]
    fused = []
    for step in steps:
        if not is_fused(step["op"]):
            continue
        node = nodes.get(step["node"])
        inputs = [] if node is None else [None if v is None else v.name for v in node.inputs]
        fused.append(dict(step, inputs=inputs))

    return {
        "opt_level": None if opt is None else opt.opt_level,
        "inputs": _io(compiled.graph.inputs),
        "outputs": _io(compiled.graph.outputs),
        "ops": {
            "before": before,
            "after": after,
            "total_before": sum(before.values()),
            "total_after": sum(after.values()),
        },
        "passes": passes,
        "fused": fused,
        "memory": _memory(compiled.executable.memory),
        "steps": steps,
    }


def _table(header, rows, right_from=1):
    """Rows of strings as aligned columns; columns from `right_from` on are right-aligned."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(row):
        cells = [str(c).rjust(w) if i >= right_from else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        return "  " + "  ".join(cells).rstrip()

    return [line(header)] + [line(r) for r in rows]


def _shape(shape):
    return "?" if shape is None else "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _mib(n):
    return f"{n / MIB:.2f}"


def _fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def format_summary(report):
    """The text form of a report dict."""
    out = []
    level = report["opt_level"]
    out.append("Lumen model summary" + ("" if level is None else f" (opt_level {level})"))
    for title, key in (("Inputs", "inputs"), ("Outputs", "outputs")):
        out.append(f"{title}:")
        for i in report[key]:
            out.append(f"  {i['name']}  {i['dtype']}  {_shape(i['shape'])}")

    ops = report["ops"]
    out += ["", "Op counts"]
    names = sorted(set(ops["before"]) | set(ops["after"]))
    rows = [[op, ops["before"].get(op, 0), ops["after"].get(op, 0)] for op in names]
    rows.append(["total", ops["total_before"], ops["total_after"]])
    out += _table(["op", "before", "after"], rows)

    out += ["", "Passes"]
    if not report["passes"]:
        out.append("  (none ran)")
    for p in report["passes"]:
        changed = len(p["changes"])
        out.append(f"  {p['name']}: {p['nodes_before']} -> {p['nodes_after']} nodes, "
                   f"{changed} change{'' if changed == 1 else 's'}, {p['milliseconds']:.2f} ms")
        out += [f"    {c}" for c in p["changes"]]

    out += ["", "Fused groups"]
    if not report["fused"]:
        out.append("  (none)")
    for f in report["fused"]:
        inputs = ", ".join("-" if v is None else v for v in f["inputs"])
        out.append(f"  {f['node']}: {f['op']}({inputs}) on {f['backend']} {f['dtype']}")
        if f["attributes"]:
            out.append(f"    {f['attributes']}")

    mem = report["memory"]
    out += ["", "Memory plan" + ("" if mem["planned"] else
                                 " (not planned: some shapes are known only at run time)")]
    if not mem["spaces"]:
        out.append("  (no intermediates planned)")
    else:
        rows = [[s["space"], _mib(s["naive_bytes"]), _mib(s["planned_bytes"]),
                 _mib(s["lower_bound_bytes"]), _fmt_ratio(s["planned_over_naive"]),
                 _fmt_ratio(s["planned_over_bound"]), s["num_values"], s["in_place"]]
                for s in mem["spaces"]]
        out += _table(["space", "naive MiB", "planned MiB", "bound MiB", "planned/naive",
                       "planned/bound", "values", "in place"], rows)

    out += ["", "Steps"]
    rows = [[str(k), s["node"], s["op"], s["backend"], s["dtype"], s.get("algorithm", "")]
            for k, s in enumerate(report["steps"])]
    out += _table(["#", "node", "op", "backend", "dtype", "algorithm"], rows, right_from=6)
    return "\n".join(out) + "\n"


def format_routing(report):
    """Each step's backend and the one-line reason the place stage gave for it (where devices
    were weighed: the estimate on every candidate and the copies paid); copy steps between
    memory spaces appear where they run, with the bytes they move."""
    rows = [[str(k), s["node"], s["op"], s["backend"], s["dtype"], s["placement"]]
            for k, s in enumerate(report["steps"])]
    return "\n".join(_table(["#", "node", "op", "backend", "dtype", "reason"], rows,
                            right_from=6)) + "\n"
