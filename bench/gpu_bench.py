"""The CUDA benchmark of issue 26, on one GPU, in one run (tools/gpu_check.sh runs it):

    PYTHONPATH=build-gpu/python python3 bench/gpu_bench.py [--out FILE] [--runs 30]

1. A 4096 x 4096 float32 MatMul: Lumen on CUDA (inputs and output in device memory, through
   DLPack with PyTorch), Lumen on the CPU, and PyTorch's torch.matmul (cuBLAS, TF32 off): cuBLAS'
   own figure, in TFLOP/s.
2. ResNet-50 and BERT-base (12 layers, hidden 768, sequence 128) at batch 1 and 32: Lumen
   (backend "cuda" where it has every kernel, else "auto", which routes the rest to the CPU; the
   table says which), PyTorch eager and PyTorch replaying a CUDA Graph, median latency. The
   models are defined here in plain PyTorch (no torchvision or transformers on the GPU machine),
   with random non-trivial weights, exported with torch.onnx; Lumen's outputs are checked against
   onnxruntime on the CPU first.

Timings: each engine warmed up, then `--runs` runs timed with CUDA synchronized after each; the
engines alternate run by run. Medians in ms.
"""

import argparse
import io
import json
import statistics
import time

import numpy as np


def models(torch):
    nn, F = torch.nn, torch.nn.functional

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.c2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.b2 = nn.BatchNorm2d(width)
            self.c3, self.b3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else None)

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = F.relu(self.b2(self.c2(y)))
            y = self.b3(self.c3(y))
            return F.relu(y + (self.down(x) if self.down is not None else x))

    def resnet50():
        layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                  nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
        return nn.Sequential(*layers)

    class Layer(nn.Module):
        def __init__(self, hidden=768, heads=12, ffn=3072):
            super().__init__()
            self.heads = heads
            self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.n1, self.n2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.up, self.down = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

        def forward(self, x, bias):
            b, s, h = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(
                2, 0, 3, 1, 4)
            scores = q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5 + bias
            a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, h)
            x = self.n1(x + self.out(a))
            return self.n2(x + self.down(F.gelu(self.up(x))))

    class Bert(nn.Module):
        def __init__(self, vocab=30522, hidden=768, layers=12, positions=512):
            super().__init__()
            self.words, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(positions, hidden)
            self.norm = nn.LayerNorm(hidden)
            self.layers = nn.ModuleList(Layer(hidden) for _ in range(layers))

        def forward(self, ids, mask):
            x = self.norm(self.words(ids) + self.pos.weight[: ids.shape[1]])
            bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            return x

    return {"resnet50": resnet50, "bert_base": Bert}


def randomize(torch, model):
    """Non-zero biases, non-unit norm weights and BatchNorm statistics, so nothing dropped passes."""
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.rand(p.shape, generator=g) * 0.2 + (0.9 if "weight" in name else -0.1))
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model.eval()


def inputs_for(torch, name, batch):
    g = torch.Generator().manual_seed(batch)
    if name == "resnet50":
        return (torch.randn(batch, 3, 224, 224, generator=g),)
    ids = torch.randint(0, 30522, (batch, 128), generator=g)
    mask = torch.ones(batch, 128, dtype=torch.int64)
    mask[:, 100:] = 0
    return ids, mask


def export(torch, model, example, names):
    buffer = io.BytesIO()
    dynamic = {n: {0: "batch"} for n in names}
    torch.onnx.export(model, example, buffer, input_names=names, output_names=["y"],
                      dynamic_axes={**dynamic, "y": {0: "batch"}}, opset_version=17,
                      dynamo=False)
    return buffer.getvalue()


def median_ms(fn, torch, runs):
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def alternate(engines, torch, runs):
    """{name: median ms}, the engines taking turns run by run after a warm-up of 3 each."""
    for fn in engines.values():
        for _ in range(3):
            fn()
    samples = {name: [] for name in engines}
    for _ in range(runs):
        for name, fn in engines.items():
            samples[name].append(median_ms(fn, torch, 1))
    return {name: statistics.median(s) for name, s in samples.items()}


def cuda_graph(torch, model, example):
    """A callable replaying `model(*example)` captured into a CUDA Graph (static inputs)."""
    static = [t.clone() for t in example]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        model(*static)
    return graph.replay


def matmul_row(torch, lumen, onnx_helper, runs):
    from onnx import TensorProto

    n = 4096
    graph = onnx_helper.make_graph(
        [onnx_helper.make_node("MatMul", ["a", "b"], ["c"])], "mm",
        [onnx_helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "ab"],
        [onnx_helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])])
    model = lumen.load_onnx(onnx_helper.make_model(graph))
    gpu = model.compile(backend="cuda", input_device="cuda", output_device="cuda")
    cpu = model.compile(backend="cpu")
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    want = torch.matmul(a, b)
    got = torch.from_dlpack(gpu.run({"a": a, "b": b})[0])
    error = float((got - want).abs().max() / want.abs().max())
    ms = alternate({"lumen_cuda": lambda: gpu.run({"a": a, "b": b}),
                    "cublas": lambda: torch.matmul(a, b)}, torch, runs)
    a_host, b_host = a.cpu().numpy(), b.cpu().numpy()
    ms["lumen_cpu"] = median_ms(lambda: cpu.run({"a": a_host, "b": b_host}), torch, 3)
    tflops = {k: 2 * n**3 / (v / 1e3) / 1e12 for k, v in ms.items()}
    return {"ms": ms, "tflops": tflops, "max_rel_error": error,
            "lumen_vs_cublas": tflops["lumen_cuda"] / tflops["cublas"]}


def model_rows(torch, lumen, name, build, runs):
    import onnxruntime as ort

    model = randomize(torch, build())
    names = ["x"] if name == "resnet50" else ["ids", "mask"]
    onnx_bytes = export(torch, model, inputs_for(torch, name, 1), names)
    lumen_model = lumen.load_onnx(onnx_bytes)
    try:
        compiled, backend = lumen_model.compile(backend="cuda", input_device="cuda"), "cuda"
    except lumen.Error as e:  # ops without a CUDA kernel: routed
        print(f"{name}: not every op runs on CUDA ({str(e).splitlines()[0][:200]}); auto")
        compiled, backend = lumen_model.compile(backend="auto", input_device="cuda"), "auto"
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    rows = []
    gpu_model = model.cuda()
    for batch in (1, 32):
        example = inputs_for(torch, name, batch)
        feeds = {n: t.numpy() for n, t in zip(names, example)}
        want = session.run(None, feeds)[0]
        on_gpu = [t.cuda() for t in example]
        lumen_feeds = dict(zip(names, on_gpu))
        got = np.asarray(compiled.run(lumen_feeds)[0])
        error = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        with torch.no_grad():
            ms = alternate({"lumen": lambda: compiled.run(lumen_feeds),
                            "torch_eager": lambda: gpu_model(*on_gpu),
                            "torch_cuda_graph": cuda_graph(torch, gpu_model, on_gpu)},
                           torch, runs)
        rows.append({"model": name, "batch": batch, "lumen_backend": backend, "ms": ms,
                     "max_rel_error_vs_ort_cpu": error,
                     "matches": error <= 1e-3,
                     "lumen_vs_cuda_graph": ms["lumen"] / ms["torch_cuda_graph"]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="gpu_bench.json")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    import torch
    from onnx import helper

    import lumen

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device for PyTorch")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    result = {"gpu": torch.cuda.get_device_name(), "devices": lumen.devices(),
              "matmul_4096": matmul_row(torch, lumen, helper, args.runs)}
    print(json.dumps(result["matmul_4096"]), flush=True)
    result["models"] = []
    for name, build in models(torch).items():
        try:
            result["models"] += model_rows(torch, lumen, name, build, args.runs)
        except Exception as e:  # noqa: BLE001 - one model failing must not lose the others
            result["models"].append({"model": name, "error": f"{type(e).__name__}: {e}"})
            print(f"{name}: {type(e).__name__}: {e}", flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    main()
