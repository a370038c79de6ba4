"""What the device runtime gives on the Vulkan backend: the device working while the host runs
other steps, and inputs/outputs kept in device memory.

    PYTHONPATH=build/python .venv/bin/python bench/device_overlap.py [--n 1024] [--runs 10]

1. Overlap. A graph with two independent branches: a chain of N x N MatMuls, which the router
   puts on Vulkan (the cost cache is told Vulkan is fast, as on a real GPU), and a chain of 3x3
   ConvTransposes (no Vulkan kernel: on the CPU). With overlap (the
   default) the executor flushes the Vulkan stream where the run leaves the device and leaves the
   copy back under way, so the CPU branch runs while the device computes; LUMEN_DEVICE_OVERLAP=0
   makes each copy back wait and the device start only then. Each mode runs in its own process
   (the switch is read once), processes alternating, 1 CPU thread for Lumen and 1 for lavapipe
   (LP_NUM_THREADS) so that each side has a core of a 2-core machine. Prints medians and the
   branch times alone.
2. Device I/O. Three light layers (Mul, Add, Relu on 2048 x 2048) pinned to Vulkan, run on an input already in Vulkan
   memory with outputs left there (compile(input_device="vulkan", output_device="vulkan")) against
   the same plan fed NumPy and returning NumPy, alternating in one process.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def branches_model(path, n, matmuls, deconvs, channels=64, size=128):
    """x -> `matmuls` n x n MatMuls (Vulkan), z -> `deconvs` 3x3 ConvTransposes of `channels`
    channels on size x size maps (no Vulkan kernel: the CPU); both outputs."""
    rng = np.random.default_rng(0)
    nodes, inits, a, b = [], [], "x", "z"
    for i in range(matmuls):
        w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [a, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        a = f"m{i}"
    for i in range(deconvs):
        k = (rng.standard_normal((channels, channels, 3, 3)) / (3 * np.sqrt(channels)))
        inits.append(numpy_helper.from_array(k.astype(np.float32), f"k{i}"))
        nodes.append(helper.make_node("ConvTranspose", [b, f"k{i}"], [f"d{i}"], name=f"deconv{i}",
                                      pads=[1, 1, 1, 1]))
        b = f"d{i}"
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n]),
              helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, channels, size, size])]
    outputs = [helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in (a, b)]
    graph = helper.make_graph(nodes, "branches", inputs, outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def light_model(path, n, layers):
    """`layers` x (Mul by a per-column scale, Add a bias, Relu) on an n x n input: little compute
    per byte, so what the copies in and out cost shows."""
    rng = np.random.default_rng(1)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        inits += [numpy_helper.from_array(rng.uniform(0.5, 1.5, n).astype(np.float32), f"s{i}"),
                  numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Mul", [x, f"s{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"])]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def child(code, env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=600)
    if done.returncode != 0:
        sys.exit(done.stderr)
    return done.stdout


def make_vulkan_fast(cache_dir):
    """Rewrites the calibrated cost cache so that Vulkan looks like a fast GPU with a fast link."""
    path = os.path.join(cache_dir, "device_costs.tsv")
    lines = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0].startswith("vulkan") and len(fields) > 1 and fields[1] == "profile":
                fields[2:] = ["10000", "500", "5"]
            elif fields[0].startswith("vulkan") and len(fields) > 1 and fields[1] == "link":
                fields[2:] = ["50", "5"]
            lines.append("\t".join(fields))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--matmuls", type=int, default=2)
    parser.add_argument("--deconvs", type=int, default=12)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import lumen

    if not any(d["backend"] == "vulkan" and d.get("available", True) for d in lumen.devices()):
        sys.exit("no Vulkan device here")
    tmp = tempfile.mkdtemp(prefix="lumen_overlap_")
    model = os.path.join(tmp, "branches.onnx")
    branches_model(model, args.n, args.matmuls, args.deconvs)
    env = dict(os.environ, LUMEN_CACHE_DIR=os.path.join(tmp, "cache"), LP_NUM_THREADS="1")
    package_root = os.path.dirname(os.path.dirname(lumen.__file__))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    child(f"import lumen; lumen.load_onnx({model!r}).compile(num_threads=1)", env)  # calibrates
    make_vulkan_fast(env["LUMEN_CACHE_DIR"])

    measure = f"""
        import time, statistics, numpy as np, lumen
        m = lumen.load_onnx({model!r})
        c = m.compile(num_threads=1)
        rng = np.random.default_rng(2)
        feeds = {{i["name"]: rng.standard_normal(i["shape"]).astype(np.float32) for i in c.inputs}}
        want = m.compile(backend="cpu", num_threads=1).run(feeds)
        for got, w in zip(c.run(feeds), want):
            assert np.allclose(got, w, rtol=1e-3, atol=1e-3 * np.abs(w).max()), "wrong result"
        times = []
        for _ in range({args.runs}):
            t = time.perf_counter(); c.run(feeds); times.append(time.perf_counter() - t)
        where = sorted({{s["op"] + "@" + s["backend"] for s in c.routing()}})
        print(statistics.median(times) * 1e3, " ".join(where))
        """
    results = {"1": [], "0": []}
    placement = ""
    for _ in range(args.rounds):
        for mode in ("1", "0"):
            out = child(measure, dict(env, LUMEN_DEVICE_OVERLAP=mode)).split(maxsplit=1)
            results[mode].append(float(out[0]))
            placement = out[1].strip()
    # The branches alone, each on its device, for the ideal max(a, b).
    alone = {}
    for name, (matmuls, deconvs) in {"matmul branch (vulkan)": (args.matmuls, 0),
                                     "conv_transpose branch (cpu)": (0, args.deconvs)}.items():
        path = os.path.join(tmp, f"{matmuls}_{deconvs}.onnx")
        branches_model(path, args.n, matmuls, deconvs)
        alone[name] = float(child(measure.replace(repr(model), repr(path)), env).split()[0])
    on, off = statistics.median(results["1"]), statistics.median(results["0"])
    print(f"overlap, n={args.n}, 1 CPU thread + 1 lavapipe thread, medians of {args.runs} runs x "
          f"{args.rounds} processes per mode")
    print(f"  placement: {placement}")
    for name, ms in alone.items():
        print(f"  {name} alone: {ms:.1f} ms")
    print(f"  overlap on:  {on:.1f} ms   (runs {', '.join(f'{v:.1f}' for v in results['1'])})")
    print(f"  overlap off: {off:.1f} ms   (runs {', '.join(f'{v:.1f}' for v in results['0'])})")
    print(f"  off / on: {off / on:.2f}x")

    mlp = os.path.join(tmp, "light.onnx")
    light_model(mlp, 2048, 3)
    io = f"""
        import time, statistics, numpy as np, lumen
        m = lumen.load_onnx({mlp!r})
        host = m.compile(backend="vulkan")
        dev = m.compile(backend="vulkan", input_device="vulkan", output_device="vulkan")
        x = np.random.default_rng(3).standard_normal((2048, 2048)).astype(np.float32)
        xd = lumen.to_device(x, "vulkan")
        assert np.allclose(dev(xd).to("cpu").numpy(), host(x), rtol=1e-4, atol=1e-4)
        a, b = [], []
        for _ in range({args.runs * 2}):
            t = time.perf_counter(); host(x); a.append(time.perf_counter() - t)
            t = time.perf_counter(); dev(xd); b.append(time.perf_counter() - t)
        print(statistics.median(a) * 1e3, statistics.median(b) * 1e3)
        """
    host_ms, dev_ms = map(float, child(io, dict(env, LP_NUM_THREADS="2")).split())
    print(f"device I/O, 3 x (Mul, Add, Relu) on 2048x2048 pinned to Vulkan, medians of "
          f"{args.runs * 2} alternating runs")
    print(f"  NumPy in/out: {host_ms:.1f} ms   inputs/outputs in Vulkan memory: {dev_ms:.1f} ms   "
          f"({host_ms / dev_ms:.2f}x)")


if __name__ == "__main__":
    main()
