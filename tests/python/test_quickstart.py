"""The README quick start runs unchanged and computes the right thing."""

import numpy as np

import reference as ref


def test_quickstart():
    import lumen, numpy as np  # noqa: E401,F811 (exactly as in the docs)

    x = lumen.randn(1, 3, 224, 224)
    w = lumen.randn(64, 3, 3, 3)
    y = lumen.conv2d(x, w, stride=(1, 1), padding=(1, 1))
    z = lumen.relu(y)

    assert isinstance(y, lumen.Tensor) and isinstance(z, lumen.Tensor)
    assert y.shape == (1, 64, 224, 224) and z.shape == y.shape
    assert y.dtype == "float32" and y.ndim == 4 and y.size == 64 * 224 * 224
    expected = ref.conv2d(np.asarray(x), np.asarray(w), pads=(1, 1, 1, 1))
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(z), np.maximum(expected, 0), rtol=1e-4, atol=1e-4)


def test_randn_is_seeded_and_normal():
    import lumen

    a, b = lumen.randn(1000, seed=7), lumen.randn(1000, seed=7)
    assert np.array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(lumen.randn(1000)), np.asarray(lumen.randn(1000)))
    values = np.asarray(lumen.randn(100, 100, seed=1))
    assert abs(values.mean()) < 0.05 and abs(values.std() - 1) < 0.05
    assert lumen.randn((2, 3)).shape == (2, 3)
    assert np.all(np.asarray(lumen.zeros(2, 3, dtype="int32")) == 0)
    assert lumen.zeros(4, dtype=np.float64).dtype == "float64"
    assert lumen.empty(2, 2).shape == (2, 2)
