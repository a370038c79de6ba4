"""Dynamic batching: requests for one model that arrive together are concatenated along the batch
dimension, run once, and the outputs split back per request. Pure NumPy; the replica
(lumen.serve.app) collects the requests with Ray Serve's @serve.batch.

A model batches when every input's first dim is symbolic (the batch dim of an export with a
dynamic batch). Requests join one run when their inputs agree in everything but that dim; a
request whose inputs disagree on their batch size, or a model whose outputs do not all carry the
batch, runs alone."""

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
