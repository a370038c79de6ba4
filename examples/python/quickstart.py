"""The Python quickstart from the README: eager ops on Lumen tensors, checked against NumPy."""
import time

import numpy as np

import lumen

x = lumen.randn(1, 3, 224, 224)
w = lumen.randn(64, 3, 3, 3)
y = lumen.conv2d(x, w, stride=(1, 1), padding=(1, 1))
z = lumen.relu(y)

# Zero-copy: NumPy sees Lumen's memory directly.
out = np.asarray(z)
print(f"conv2d + relu: {x.shape} -> {z.shape}, mean {out.mean():.4f}, max {out.max():.4f}")

# Check against a NumPy reference (im2col + matmul).
xp = np.pad(np.asarray(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # 1,3,224,224,3,3
ref = np.einsum("nchwij,ocij->nohw", cols, np.asarray(w), optimize=True)
ref = np.maximum(ref, 0)
err = np.abs(out - ref).max()
print(f"max |lumen - numpy| = {err:.2e}")
assert err < 1e-3, err

start = time.perf_counter()
for _ in range(10):
    lumen.relu(lumen.conv2d(x, w, stride=(1, 1), padding=(1, 1)))
print(f"conv2d + relu latency: {(time.perf_counter() - start) / 10 * 1e3:.2f} ms (mean of 10)")
