"""Dynamic batching: requests for one model that arrive together are concatenated along the batch
dimension, run once, and the outputs split back per request. Pure NumPy; the replica
(lumen.serve.app) collects the requests.

A model batches when every input's first dim is symbolic (the batch dim of an export with a
dynamic batch). A model exported with a batch of 1 gets a variant whose batch dim is symbolic
(symbolic_batch_variant), used only when it answers a batch as the original answers each item.
Requests join one run when their inputs agree in everything but that dim; a request whose inputs
disagree on their batch size, or a model whose outputs do not all carry the batch, runs alone."""

import numpy as np


def batchable(model_inputs):
    """Whether a model takes a batch dim first on every input (a name or unknown, not a number)."""
    return bool(model_inputs) and all(
        i["shape"] is not None and len(i["shape"]) > 0 and not isinstance(i["shape"][0], int)
        for i in model_inputs)


def batch_size(feeds):
    """The request's batch size: the first dim all its inputs share, else None."""
    sizes = {a.shape[0] if a.ndim else None for a in feeds.values()}
    return sizes.pop() if len(sizes) == 1 else None


def signature(feeds):
    """What requests must share to run together: per input, dtype and the dims after the first."""
    return tuple(sorted((name, str(a.dtype), a.shape[1:]) for name, a in feeds.items()))


def groups(requests, max_batch):
    """Indices of `requests` (feeds dicts) in groups that may run as one batch of at most
    `max_batch` items, in arrival order; requests that cannot join others are groups of one."""
    out, open_groups = [], {}
    for i, feeds in enumerate(requests):
        n = batch_size(feeds)
        if n is None or n > max_batch:
            out.append([i])
            continue
        key = signature(feeds)
        group = open_groups.get(key)
        if group is not None and group[1] + n <= max_batch:
            group[0].append(i)
            group[1] += n
        else:
            group = open_groups[key] = [[i], n]
            out.append(group[0])
    return out


def concatenate(requests):
    """One feeds dict: each input's arrays joined along dim 0."""
    return {name: np.concatenate([r[name] for r in requests], axis=0) for name in requests[0]}


def split(outputs, sizes):
    """Per request, its slice of every output (outputs are a list of arrays with the batch first);
    None where an output does not carry the whole batch (the caller then runs them one by one)."""
    total = sum(sizes)
    if any(np.ndim(o) == 0 or o.shape[0] != total for o in outputs):
        return None
    bounds = np.cumsum([0] + list(sizes))
    return [[o[bounds[k]:bounds[k + 1]] for o in outputs] for k in range(len(sizes))]


def with_symbolic_batch(model):
    """An onnx.ModelProto like `model` (a copy) whose inputs' and outputs' dim 0 is named "batch"
    and whose Reshape shapes that fix the batch at 1 copy it instead (0), as an exporter with a
    dynamic batch writes them."""
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    for value in list(graph.input) + list(graph.output):
        dims = value.type.tensor_type.shape.dim
        if dims:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    shapes = {n.input[1] for n in graph.node if n.op_type == "Reshape" and len(n.input) > 1}
    for init in graph.initializer:
        if init.name in shapes:
            v = numpy_helper.to_array(init)
            if v.ndim == 1 and len(v) > 1 and v[0] == 1:
                init.CopyFrom(numpy_helper.from_array(np.concatenate([[0], v[1:]]), init.name))
    del graph.value_info[:]
    return model


def sample_feeds(inputs, batch, rng):
    """Feeds of `batch` items for `inputs` whose dims after the first are numbers: floats from
    `rng`, zeros for integer and bool inputs (valid ids, indices and masks)."""
    feeds = {}
    for i in inputs:
        shape = [batch, *i["shape"][1:]]
        if i["dtype"].startswith(("float", "bfloat")):
            feeds[i["name"]] = rng.standard_normal(shape).astype(i["dtype"])
        else:  # ids, indices, masks: zeros are valid for all of them
            feeds[i["name"]] = np.zeros(shape, i["dtype"])
    return feeds


def symbolic_batch_variant(path, inputs, compiled, compile_fn):
    """For a model at `path` whose `inputs` all have a fixed batch of 1 (`compiled` runs it):
    (model, compiled) of its variant with a symbolic batch dim, compiled by `compile_fn(model)`,
    when the variant runs a batch of 3 as `compiled` runs each item (otherwise, or without the onnx
    package, None: the model's graph fixes more than its inputs' dims)."""
    import lumen

    if not inputs or not all(i["shape"] and i["shape"][0] == 1 and
                             all(isinstance(d, int) for d in i["shape"]) for i in inputs):
        return None
    try:
        import onnx

        variant = lumen.load_onnx(with_symbolic_batch(onnx.load(path)).SerializeToString())
        batched = compile_fn(variant)
        feeds = sample_feeds(inputs, 3, np.random.default_rng(0))
        together = batched.run(feeds)
        alone = [compiled.run({k: v[i:i + 1] for k, v in feeds.items()}) for i in range(3)]
        for o, out in enumerate(together):
            want = np.concatenate([a[o] for a in alone])
            if out.shape != want.shape or not np.allclose(out, want, rtol=1e-4, atol=1e-5):
                return None
    except Exception:  # noqa: BLE001 - any failure: the model runs unbatched, as exported
        return None
    return variant, batched
