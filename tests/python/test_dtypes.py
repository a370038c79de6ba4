"""The narrow dtypes (float8, float4, int4, int2) through NumPy via ml_dtypes, and cast."""

import ml_dtypes
import numpy as np
import pytest

import lumen
from lumen import _ops

NARROW = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "uint4", "int4",
          "float4_e2m1fn", "float8_e8m0fnu", "uint2", "int2"]


@pytest.mark.parametrize("name", NARROW)
def test_numpy_round_trip(name):
    np_type = getattr(ml_dtypes, name)
    values = np.array([[0, 1], [1, 0]], dtype=np.float32)
    if name == "float8_e8m0fnu":
        values = np.array([[0.5, 1], [2, 4]], dtype=np.float32)
    a = values.astype(np_type)
    t = lumen.tensor(a)
    assert t.dtype == name
    assert t.shape == (2, 2)
    back = t.numpy()
    assert back.dtype == np.dtype(np_type)
    np.testing.assert_array_equal(back.view(np.uint8), a.view(np.uint8))
    # Cast to float32 reads the values.
    np.testing.assert_array_equal(np.asarray(_ops.call("cast", [t], {"to": "float32"})),
                                  a.astype(np.float32))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                                  "float8_e5m2fnuz", "float4_e2m1fn", "int4", "uint4", "int2",
                                  "uint2"])
def test_cast_matches_ml_dtypes(name):
    np_type = getattr(ml_dtypes, name)
    info = ml_dtypes.iinfo(np_type) if "int" in name else ml_dtypes.finfo(np_type)
    lo, hi = float(info.min), float(info.max)
    x = np.linspace(lo, hi, 101).astype(np.float32)
    y = _ops.call("cast", [x], {"to": name, "saturate": 1})
    np.testing.assert_array_equal(np.asarray(y).view(np.uint8), x.astype(np_type).view(np.uint8))
    back = _ops.call("cast", [y], {"to": "float32"})
    np.testing.assert_array_equal(np.asarray(back), x.astype(np_type).astype(np.float32))
