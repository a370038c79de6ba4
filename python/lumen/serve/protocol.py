"""KServe's Open Inference Protocol (v2) for Lumen models: request decoding with every check a
client can fail named, response encoding, model metadata. Pure Python and NumPy: the HTTP layer
(lumen.serve.app) calls these and turns RequestError into a 4xx.

JSON tensors: ``{"name", "shape", "datatype", "data"}`` with data flat or nested, row-major.
Binary tensors (the protocol's binary data extension): the body is the JSON header, whose length
the ``Inference-Header-Content-Length`` HTTP header gives, followed by each binary input's bytes
in the order of ``inputs``, an input saying how many in ``parameters.binary_data_size``. Outputs
are returned as binary when the request asks (``parameters.binary_data_output`` or an output's
``parameters.binary_data``)."""

import json

import numpy as np

# The protocol's datatypes and NumPy's (bfloat16 comes through ml_dtypes, as onnx uses it).
DATATYPES = {"BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32",
             "UINT64": "uint64", "INT8": "int8", "INT16": "int16", "INT32": "int32",
             "INT64": "int64", "FP16": "float16", "FP32": "float32", "FP64": "float64",
             "BF16": "bfloat16"}
DTYPE_TO_DATATYPE = {v: k for k, v in DATATYPES.items()}
HEADER_LENGTH = "inference-header-content-length"


class RequestError(Exception):
    """A request the client got wrong: the HTTP status to answer and a message naming what."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def _numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def tensor_metadata(info):
    """One input or output as the metadata endpoint lists it: symbolic and unknown dims are -1."""
    shape = info["shape"]
    dims = [-1] if shape is None else [d if isinstance(d, int) else -1 for d in shape]
    return {"name": info["name"], "datatype": DTYPE_TO_DATATYPE.get(info["dtype"], info["dtype"]),
            "shape": dims}


def model_metadata(name, inputs, outputs):
    return {"name": name, "versions": ["1"], "platform": "lumen",
            "inputs": [tensor_metadata(i) for i in inputs],
            "outputs": [tensor_metadata(o) for o in outputs]}


def _fits(shape, declared):
    """Whether a request's shape fits the model's (a name or None matches any size)."""
    if declared is None:
        return True
    return len(shape) == len(declared) and all(
        not isinstance(d, int) or d == s for s, d in zip(shape, declared))


def _declared(shape):
    return "any shape" if shape is None else "[" + ", ".join(
        str(d) if d is not None else "?" for d in shape) + "]"


def decode_infer_request(body, header_length, model_inputs, max_elements=1 << 28):
    """(request id, {input name: ndarray}, output names or None for all, binary outputs?) from an
    infer request's body; `header_length` is the Inference-Header-Content-Length value (None for a
    JSON-only body). Raises RequestError naming the input and what was expected."""
    if header_length is not None:
        try:
            header_length = int(header_length)
        except ValueError:
            raise RequestError(f"{HEADER_LENGTH}: not a number: {header_length!r}") from None
        if not 0 <= header_length <= len(body):
            raise RequestError(f"{HEADER_LENGTH} {header_length} is outside the body's "
                               f"{len(body)} bytes")
        header, binary = body[:header_length], memoryview(body)[header_length:]
    else:
        header, binary = body, memoryview(b"")
    try:
        request = json.loads(header)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RequestError(f"the request is not valid JSON: {e}") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise RequestError('the request must be a JSON object with an "inputs" list')
    expected = {i["name"]: i for i in model_inputs}
    feeds, offset = {}, 0
    for item in request["inputs"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise RequestError('each of "inputs" must be an object with a "name"')
        name = item["name"]
        if name not in expected:
            raise RequestError(f"unknown input '{name}'; the model's inputs: "
                               f"{', '.join(expected)}")
        if name in feeds:
            raise RequestError(f"input '{name}' is given twice")
        want = expected[name]
        datatype = item.get("datatype")
        if datatype not in DATATYPES:
            raise RequestError(f"input '{name}': unknown datatype {datatype!r}; one of "
                               f"{', '.join(DATATYPES)}")
        if DATATYPES[datatype] != want["dtype"]:
            raise RequestError(f"input '{name}': datatype {datatype}, the model takes "
                               f"{DTYPE_TO_DATATYPE.get(want['dtype'], want['dtype'])}")
        shape = item.get("shape")
        if (not isinstance(shape, list) or
                not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise RequestError(f"input '{name}': shape must be a list of non-negative integers")
        if not _fits(shape, want["shape"]):
            raise RequestError(f"input '{name}': shape {shape} does not fit the model's "
                               f"{_declared(want['shape'])}")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count > max_elements:
            raise RequestError(f"input '{name}': {count} elements, over the limit of "
                               f"{max_elements}", status=413)
        dtype = _numpy_dtype(want["dtype"])
        size = (item.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or size != count * dtype.itemsize:
                raise RequestError(f"input '{name}': binary_data_size {size!r}, but shape {shape} "
                                   f"of {datatype} takes {count * dtype.itemsize} bytes")
            if offset + size > len(binary):
                raise RequestError(f"input '{name}': {size} bytes of binary data, "
                                   f"{len(binary) - offset} left in the body")
            array = np.frombuffer(binary[offset:offset + size], dtype=dtype).reshape(shape)
            offset += size
        else:
            if "data" not in item:
                raise RequestError(f"input '{name}': no \"data\" and no binary_data_size")
            try:
                array = np.asarray(item["data"], dtype=dtype)
            except (TypeError, ValueError, OverflowError) as e:
                raise RequestError(f"input '{name}': data is not {datatype}: {e}") from None
            if array.size != count:
                raise RequestError(f"input '{name}': {array.size} values for shape {shape} "
                                   f"({count})")
            array = array.reshape(shape)
        feeds[name] = array
    if offset != len(binary):
        raise RequestError(f"{len(binary) - offset} bytes of binary data that no input claims")
    missing = [n for n in expected if n not in feeds]
    if missing:
        raise RequestError(f"missing input{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(repr(n) for n in missing)}")
    outputs, binary_outputs = None, bool((request.get("parameters") or {}).get(
        "binary_data_output", False))
    if request.get("outputs") is not None:
        if not isinstance(request["outputs"], list):
            raise RequestError('"outputs" must be a list')
        outputs = []
        for o in request["outputs"]:
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise RequestError('each of "outputs" must be an object with a "name"')
            outputs.append(o["name"])
            binary_outputs |= bool((o.get("parameters") or {}).get("binary_data", False))
    request_id = request.get("id")
    return (request_id if isinstance(request_id, str) else None), feeds, outputs, binary_outputs


def encode_infer_response(model_name, request_id, outputs, binary):
    """(body bytes, extra headers) for named output arrays, as JSON or with binary data."""
    header = {"model_name": model_name, "model_version": "1", "outputs": []}
    if request_id is not None:
        header["id"] = request_id
    blobs = []
    for name, array in outputs:
        array = np.ascontiguousarray(array)
        entry = {"name": name, "shape": list(array.shape),
                 "datatype": DTYPE_TO_DATATYPE.get(str(array.dtype), str(array.dtype))}
        if binary:
            blobs.append(array.tobytes())
            entry["parameters"] = {"binary_data_size": len(blobs[-1])}
        else:
            flat = array.reshape(-1)
            entry["data"] = (flat.astype(np.float32) if str(array.dtype) == "bfloat16"
                             else flat).tolist()
        header["outputs"].append(entry)
    text = json.dumps(header).encode()
    if not binary:
        return text, {"content-type": "application/json"}
    return text + b"".join(blobs), {"content-type": "application/octet-stream",
                                   HEADER_LENGTH: str(len(text))}
