"""Per-op times of CPU kernels against the reference kernels they replace, on shapes from real
models: one process, lumen._lumen.call_op, median of runs (the reference is a test oracle; this
shows what a model paid when an op fell to it). Micro-benchmark; not part of the headline suite.

    PYTHONPATH=build/python .venv/bin/python bench/reference_vs_cpu.py
"""
import time, statistics, numpy as np
from lumen import _lumen
rng = np.random.default_rng(0)
f = lambda *s: rng.standard_normal(s).astype(np.float32)
i64 = lambda *v: np.array(v, np.int64)
u8 = lambda *s: rng.integers(0, 256, s).astype(np.uint8)
i8 = lambda *s: rng.integers(-128, 128, s).astype(np.int8)
cases = [
  ("tile", [f(1, 128, 768), i64(4, 1, 1)], {}),
  ("argmax", [f(64, 32000)], {"axis": -1}),
  ("cumsum", [rng.integers(0, 2, (8, 4096)).astype(np.int64), i64(1)], {}),
  ("trilu", [f(12, 512, 512)], {"upper": 0}),
  ("depth_to_space", [f(1, 64, 80, 80)], {"blocksize": 2}),
  ("one_hot", [rng.integers(0, 1000, (64, 128)).astype(np.int64), i64(1000), np.array([0, 1], np.float32)], {}),
  ("max_pool_nd", [f(8, 64, 16000)], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
  ("avg_pool_nd", [f(1, 32, 16, 56, 56)], {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
  ("quantize_linear", [f(128, 3072), np.array(0.05, np.float32), np.array(3, np.uint8)], {}),
  ("dequantize_linear", [u8(128, 3072), np.array(0.05, np.float32), np.array(3, np.uint8)], {}),
  ("dynamic_quantize_linear", [f(128, 3072)], {}),
  ("matmul_integer", [u8(128, 768), i8(768, 768), np.array(7, np.uint8), np.array(0, np.int8)], {}),
  ("einsum", [f(12, 128, 64), f(12, 128, 64)], {"equation": "hqd,hkd->hqk"}),
  ("prelu", [f(1, 64, 112, 112), f(64, 1, 1)], {}),
  ("where", [rng.random((1, 1, 128, 128)) > 0.5, f(1, 12, 1, 128), f(1, 1, 128, 1)], {}),
  ("grid_sample", [f(1, 32, 64, 64), np.clip(f(1, 64, 64, 2), -1, 1)], {"mode": "linear"}),
  ("dft", [f(16, 400, 1)], {"axis": 1, "onesided": 1}),
  ("stft", [f(1, 16000, 1), i64(160), np.hanning(400).astype(np.float32)], {}),
  ("rotary_embedding", [f(1, 32, 128, 128), f(4096, 64), f(4096, 64), np.tile(np.arange(128), (1, 1)).astype(np.int64)], {}),
  ("reduce_log_sum_exp", [f(64, 32000)], {"axes": [-1]}),
  ("reduce_sum", [f(32, 64, 56, 56)], {"axes": [0, 2]}),
  ("lp_norm", [f(4096, 768)], {"axis": -1, "p": 2}),
]
def timed(op, inputs, attrs, backend, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); _lumen.call_op(op, inputs, attrs, backend); ts.append(time.perf_counter() - t)
    return statistics.median(ts)
print(f"{'op':26s} {'reference ms':>13s} {'cpu ms':>9s} {'speedup':>8s}")
for op, inputs, attrs in cases:
    _lumen.call_op(op, inputs, attrs, "cpu")
    tr = timed(op, inputs, attrs, "reference", 2 if op != "matmul_integer" else 1)
    tc = timed(op, inputs, attrs, "cpu", 7)
    print(f"{op:26s} {tr*1e3:13.2f} {tc*1e3:9.3f} {tr/tc:8.1f}x")
