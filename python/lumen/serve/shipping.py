"""A model's files travel with its deployment, so replicas on nodes without the model's path load
it too: the driver puts the ONNX file and its external data files into Ray's object store
(model_package), and a replica loads the files at the path given where that node has the same
files, else a copy written from the package into a temporary folder (local_model).

The driver owns the package: Ray keeps it as long as the driver process lives (`lumen serve` lives
as long as its application)."""

import hashlib
import os
import tempfile


def external_files(path):
    """The external data files the ONNX model at `path` names, relative to its folder (needs the
    onnx package; none without it)."""
    try:
        import onnx
    except ImportError:
        return []
    model = onnx.load(path, load_external_data=False)
    names = set()

    def in_nodes(nodes):
        for node in nodes:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t
                yield from attr.tensors
                for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    yield from in_graph(g)

    def in_graph(graph):
        yield from graph.initializer
        for s in graph.sparse_initializer:
            yield from (s.values, s.indices)
        yield from in_nodes(graph.node)

    tensors = [*in_graph(model.graph), *(t for f in model.functions for t in in_nodes(f.node))]
    for tensor in tensors:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            names.update(e.value for e in tensor.external_data if e.key == "location")
    return sorted(names)


def _digest(named_chunks):
    """sha256 over (name, byte chunks) pairs in order: what a package and a node's files are
    compared by."""
    h = hashlib.sha256()
    for name, chunks in named_chunks:
        h.update(name.encode() + b"\0")
        for chunk in chunks:
            h.update(chunk)
    return h.hexdigest()


def _chunks(file):
    with open(file, "rb") as f:
        yield from iter(lambda: f.read(1 << 20), b"")


def _check_name(name):
    """External data must stay inside the model's folder (as load_onnx requires)."""
    if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise ValueError(f"external data file '{name}' is outside the model's folder")
    return name


def model_package(path):
    """{"model": file name, "files": {name: bytes}, "digest": sha256}: the model at `path` and its
    external data files."""
    folder, model = os.path.split(os.path.abspath(path))
    names = [model] + [_check_name(n) for n in external_files(path)]
    files = {}
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            files[name] = f.read()
    return {"model": model, "files": files,
            "digest": _digest((name, [data]) for name, data in files.items())}


def local_model(path, package):
    """(path to load, temporary folder or None): `path` where this node has the package's files
    there, else the package written into a new temporary folder (the caller cleans it up once
    the model is loaded). `package` may be None: `path` as it is."""
    if package is None:
        return path, None
    names = [_check_name(n) for n in package["files"]]
    folder = os.path.dirname(os.path.abspath(path))
    files = [os.path.join(folder, name) for name in names]
    if (os.path.basename(path) == package["model"] and all(map(os.path.isfile, files)) and
            _digest(zip(names, map(_chunks, files))) == package["digest"]):
        return path, None
    tmp = tempfile.TemporaryDirectory(prefix="lumen-serve-")
    for name, data in package["files"].items():
        file = os.path.join(tmp.name, name)
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "wb") as f:
            f.write(data)
    return os.path.join(tmp.name, package["model"]), tmp
