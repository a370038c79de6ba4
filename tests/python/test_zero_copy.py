"""NumPy <-> lumen memory sharing: what is shared, what is copied, and lifetimes."""

import gc
import weakref

import numpy as np
import pytest

import lumen

DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]


def ptr(a):
    return np.asarray(a).__array_interface__["data"][0]


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = lumen.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == "float32" and t.ndim == 2 and t.size == 12
    assert ptr(t) == a.__array_interface__["data"][0] == a.ctypes.data
    a[1, 2] = 100.0
    assert np.asarray(t)[1, 2] == 100.0
    np.asarray(t)[0, 0] = -5.0
    assert a[0, 0] == -5.0
    t.numpy()[2, 3] = 7.0
    assert a[2, 3] == 7.0
    assert lumen.tensor(a).numpy().ctypes.data == a.ctypes.data
    assert lumen.Tensor(a).numpy().ctypes.data == a.ctypes.data


def test_tensor_keeps_the_array_alive():
    a = np.arange(6, dtype=np.float32)
    ref = weakref.ref(a)
    t = lumen.from_numpy(a)
    del a
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal(np.asarray(t), np.arange(6))
    del t
    gc.collect()
    assert ref() is None


def test_numpy_view_keeps_the_tensor_alive():
    view = np.asarray(lumen.randn(1000, seed=3))
    gc.collect()
    np.testing.assert_array_equal(view, np.asarray(lumen.randn(1000, seed=3)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_zero_copy(dtype):
    a = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
    t = lumen.from_numpy(a)
    assert t.dtype == dtype == np.dtype(t.dtype).name
    back = np.asarray(t)
    assert back.dtype == a.dtype and ptr(back) == a.ctypes.data
    np.testing.assert_array_equal(back, a)
    assert np.from_dlpack(t).ctypes.data == a.ctypes.data
    assert memoryview(t).nbytes == a.nbytes


def test_dlpack_round_trip():
    a = np.arange(10, dtype=np.float32)
    t = lumen.from_dlpack(a)
    assert ptr(t) == a.ctypes.data
    b = np.from_dlpack(t)
    assert b.ctypes.data == a.ctypes.data
    b[3] = 42
    assert a[3] == 42
    assert t.__dlpack_device__() == (1, 0)
    u = lumen.from_dlpack(t)
    assert ptr(u) == a.ctypes.data
    # A strided tensor exports its strides.
    s = lumen.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1::2])
    np.testing.assert_array_equal(np.from_dlpack(s), np.arange(12).reshape(3, 4)[:, 1::2])


def test_op_outputs_are_zero_copy():
    t = lumen.relu(np.arange(-3, 3, dtype=np.float32))
    assert ptr(t) == ptr(t) == t.numpy().ctypes.data
    np.asarray(t)[0] = 9
    assert np.asarray(t)[0] == 9


def test_non_contiguous_views_are_wrapped_with_strides():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = lumen.from_numpy(a[:, ::2])
    assert t.strides == (6, 2) and not t.is_contiguous()
    assert ptr(t) == a.ctypes.data
    a[1, 2] = -1
    assert np.asarray(t)[1, 1] == -1
    np.testing.assert_array_equal(np.asarray(t), a[:, ::2])
    np.testing.assert_array_equal(np.asarray(lumen.relu(a[:, ::2])), np.maximum(a[:, ::2], 0))
    tt = lumen.from_numpy(a.T)
    assert tt.strides == (1, 6) and ptr(tt) == a.ctypes.data
    np.testing.assert_array_equal(np.asarray(lumen.neg(a.T)), -a.T)
    np.testing.assert_array_equal(np.asarray(tt.contiguous()), a.T)
    # Broadcast views (stride 0) are read-only: wrapped as op inputs, copied otherwise.
    row = np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3))
    np.testing.assert_array_equal(np.asarray(lumen.add(row, row)), row * 2)
    assert lumen.tensor(row).is_contiguous()


def test_copies_where_lumen_cannot_view():
    a = np.arange(12, dtype=np.float32)
    rev = lumen.tensor(a[::-1])  # negative stride
    np.testing.assert_array_equal(np.asarray(rev), a[::-1])
    assert rev.is_contiguous()
    raw = np.zeros(4 * 5 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32)
    assert misaligned.ctypes.data % 4 != 0
    m = lumen.tensor(misaligned)
    assert ptr(m) % 4 == 0
    record = np.zeros(3, dtype=[("x", np.uint8), ("y", np.float32)])  # stride 5: not a multiple of 4
    record["y"] = [1, 2, 3]
    np.testing.assert_array_equal(np.asarray(lumen.tensor(record["y"])), [1, 2, 3])
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    f = lumen.from_numpy(frozen)
    assert ptr(f) != frozen.ctypes.data
    np.asarray(f)[0] = 1  # the copy is writable
    assert frozen[0] == 0
    big_endian = np.arange(3, dtype=">f4")
    assert np.asarray(lumen.tensor(big_endian)).tolist() == [0, 1, 2]


def test_python_values_are_copied_with_lumen_defaults():
    assert lumen.tensor([1.5, 2.0]).dtype == "float32"
    assert lumen.tensor([[1, 2]]).dtype == "int64"
    assert lumen.tensor(True).dtype == "bool"
    assert lumen.tensor(3.0).shape == ()
    assert lumen.tensor(np.arange(3, dtype=np.uint16)).dtype == "uint16"
    assert lumen.tensor(np.float64(2)).dtype == "float64"


def test_array_protocol_copy_keyword():
    t = lumen.tensor(np.arange(4, dtype=np.float32))
    assert ptr(np.array(t, copy=False)) == ptr(t)
    assert ptr(np.array(t, copy=True)) != ptr(t)
    assert ptr(np.asarray(t)) == ptr(t)
    converted = np.asarray(t, dtype=np.float64)
    assert converted.dtype == np.float64 and converted.tolist() == [0, 1, 2, 3]
    assert t.__array__().ctypes.data == ptr(t)
    assert t.__array__(copy=True).ctypes.data != ptr(t)
    with pytest.raises(ValueError):
        t.__array__(dtype=np.float64, copy=False)


def test_repr_and_len():
    t = lumen.zeros(2, 3)
    assert "float32" in repr(t) and "[2, 3]" in repr(t)
    assert len(t) == 2
    assert t.nbytes == 24 and t.device.startswith("cpu")
