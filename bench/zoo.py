"""A model zoo from public architectures, with random weights and no downloads.

    python bench/zoo.py export [--models REGEX] [--dir bench/.zoo]
    python bench/zoo.py check  [--models REGEX] [--backend cpu] [--json FILE]

`export` builds torchvision models and transformers models (from configs) with random but
non-trivial weights (non-zero biases and norm parameters, BatchNorm statistics from data), exports
them with the TorchScript-based exporter (and the dynamo-based one where it works) with dynamic
batch/sequence axes, and stores each model with its inputs and onnxruntime's outputs (the expected
values) next to it. `check` loads every stored model in Lumen, compiles it (default
`backend="cpu"`), runs it and prints one table: model, exporter, opset, ops, status, max error
(max |lumen - ort| / max |ort|), nodes per backend. A float32 output matches when max |diff| <=
1e-4 * max |ref| + 1e-5; integer and bool outputs must be equal.

Needs bench/requirements-zoo.txt (torch, torchvision, transformers, onnxscript).
"""

import argparse
import contextlib
import inspect
import json
import os
import re
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.join(HERE, ".zoo")
SEED = 0


# --- random, non-trivial weights -----------------------------------------------------------------

def randomize(model, calibrate=None):
    """Zero biases and unit norm weights get random values; BatchNorm running statistics come
    from `calibrate()` batches run in train mode (cumulative averages), or are drawn at random."""
    import torch

    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() and bool(torch.all(p == 0)):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            elif p.numel() and bool(torch.all(p == 1)):
                p.copy_(1 + torch.randn(p.shape, generator=g) * 0.1)
        norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # cumulative averages over the calibration batches
        if calibrate is not None and norms:
            model.train()
            for _ in range(2):
                calibrate(model)
        for m in model.modules():  # frozen norms (detection backbones) and BN without data
            if hasattr(m, "running_var") and (calibrate is None or not norms):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    model.eval()
    return model


# --- the zoo ---------------------------------------------------------------------------------------

class Entry:
    """A model: `build()` -> (torch module, example input tensors), input names, dynamic axes."""

    def __init__(self, name, build, input_names, dynamic_axes, output_names=None, opsets=(17,),
                 exporters=("torchscript", "dynamo"), note=""):
        self.name, self.build, self.input_names = name, build, input_names
        self.dynamic_axes, self.output_names, self.opsets = dynamic_axes, output_names, opsets
        self.exporters, self.note = exporters, note


def _image_model(ctor, size=224, batch=2, **kwargs):
    def build():
        import torch
        import torchvision

        torch.manual_seed(SEED)
        model = getattr(torchvision.models, ctor)(weights=None, **kwargs)
        x = torch.randn(batch, 3, size, size)
        randomize(model, lambda m: m(torch.randn(4, 3, size, size)))
        return model, (x,)
    return build


def _video_model(ctor):
    def build():
        import torch
        import torchvision

        torch.manual_seed(SEED)
        model = getattr(torchvision.models.video, ctor)(weights=None)
        x = torch.randn(1, 3, 8, 112, 112)
        randomize(model, lambda m: m(torch.randn(2, 3, 8, 112, 112)))
        return model, (x,)
    return build


def _segmentation_model(ctor):
    def build():
        import torch
        import torchvision

        torch.manual_seed(SEED)
        model = getattr(torchvision.models.segmentation, ctor)(weights=None,
                                                               weights_backbone=None)

        class Out(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]

        wrapped = Out(model)
        randomize(wrapped, lambda m: m(torch.randn(2, 3, 160, 160)))
        return wrapped, (torch.randn(1, 3, 224, 224),)
    return build


def _detection_model(ctor, size, **kwargs):
    def build():
        import torch
        import torchvision

        torch.manual_seed(SEED)
        model = getattr(torchvision.models.detection, ctor)(weights=None, weights_backbone=None,
                                                            **kwargs)
        # Norm statistics from data: the detector trains only with targets, so its backbone (and
        # SSD's head) run on their own. Drawn statistics saturate activations, and then equal
        # features at different anchors tie their scores (which box NMS keeps among ties is
        # implementation-defined).
        def calibrate(m):
            images = torch.rand(2, 3, size, size)
            features = list(m.backbone(m.transform(list(images))[0].tensors).values())
            if hasattr(m, "head"):
                m.head(features)
        randomize(model, calibrate)
        return model, ([torch.rand(3, size, size)],)
    return build


def _hf(model_ctor, config_ctor, config, inputs, wrap=None):
    def build():
        import torch
        import transformers

        torch.manual_seed(SEED)
        cfg = getattr(transformers, config_ctor)(**config)
        model = getattr(transformers, model_ctor)(cfg)
        randomize(model)
        model.eval()
        if wrap is not None:
            model = wrap(model)
        return model, inputs()
    return build


class _FirstOutput:
    """Wraps a transformers model: positional inputs in, the first output tensor out."""

    def __new__(cls, model, keys):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):
                out = self.model(**dict(zip(keys, args)), return_dict=True)
                return out[0] if isinstance(out, tuple) else next(iter(out.values()))
        # eval(): a new Module is in training mode, and recent exporters (torch 2.15's dynamo) trace
        # the inner model's dropout in the wrapper's mode.
        return Wrapped().eval()


def _ids(batch=2, seq=16, vocab=1000):
    import torch

    g = torch.Generator().manual_seed(SEED)
    return torch.randint(0, vocab, (batch, seq), generator=g)


def _llama_with_cache(model):
    """input_ids plus one past key/value pair per layer -> logits and the present pairs."""
    import torch
    from transformers import DynamicCache

    class WithCache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, *past):
            cache = DynamicCache()
            for layer in range(len(past) // 2):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
            presents = []
            for layer in range(len(past) // 2):
                presents += [out.past_key_values.layers[layer].keys,
                             out.past_key_values.layers[layer].values]
            return (out.logits, *presents)
    return WithCache()


LLAMA = dict(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


def _llama_cache_inputs():
    import torch

    g = torch.Generator().manual_seed(SEED)
    past = []
    for _ in range(LLAMA["num_hidden_layers"]):
        past += [torch.randn(1, 2, 7, 32, generator=g), torch.randn(1, 2, 7, 32, generator=g)]
    return (_ids(1, 3), *past)


def zoo():
    batch = {0: "batch"}
    image = {"x": batch, "y": batch}
    seq = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
           "y": {0: "batch", 1: "seq"}}
    older = {"resnet18", "mobilenet_v3_small", "bert", "gpt2"}  # also exported at opset 13
    entries = [Entry(name, _image_model(ctor), ["x"], image, ["y"]) for name, ctor in [
        ("resnet18", "resnet18"), ("mobilenet_v3_small", "mobilenet_v3_small"),
        ("efficientnet_b0", "efficientnet_b0"), ("convnext_tiny", "convnext_tiny"),
        ("regnet_y_400mf", "regnet_y_400mf"), ("densenet121", "densenet121"),
        ("shufflenet_v2_x1_0", "shufflenet_v2_x1_0"), ("mnasnet0_5", "mnasnet0_5"),
        ("swin_t", "swin_t"), ("vit_b_16", "vit_b_16")]]
    entries.append(Entry("googlenet", _image_model("googlenet", aux_logits=False,
                                                   init_weights=True), ["x"], image, ["y"]))
    entries.append(Entry("resnet50_opset13", _image_model("resnet50"), ["x"], image, ["y"],
                         opsets=(13,), exporters=("torchscript",)))
    entries.append(Entry("deeplabv3_mobilenet", _segmentation_model(
        "deeplabv3_mobilenet_v3_large"), ["x"], image, ["y"]))
    entries.append(Entry("r3d_18", _video_model("r3d_18"), ["x"], image, ["y"]))
    entries.append(Entry("ssdlite320", _detection_model("ssdlite320_mobilenet_v3_large", 320),
                         ["images"], {}, ["boxes", "scores", "labels"], exporters=("torchscript",)))
    entries.append(Entry("fasterrcnn_mobilenet_320", _detection_model(
        "fasterrcnn_mobilenet_v3_large_320_fpn", 320, box_score_thresh=0.005), ["images"], {},
        ["boxes", "scores", "labels"], exporters=("torchscript",)))

    def text(model_ctor, config_ctor, config, keys=("input_ids", "attention_mask")):
        def inputs():
            import torch
            ids = _ids(vocab=config.get("vocab_size", 1000))
            return (ids, torch.ones_like(ids))[:len(keys)]
        return _hf(model_ctor, config_ctor, config, inputs,
                   wrap=lambda m: _FirstOutput(m, list(keys)))

    small = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=256, vocab_size=1000)
    entries += [
        Entry("bert", text("BertModel", "BertConfig", small), ["input_ids", "attention_mask"],
              seq, ["y"]),
        Entry("distilbert", text("DistilBertModel", "DistilBertConfig",
                                 dict(dim=128, n_layers=2, n_heads=4, hidden_dim=256,
                                      vocab_size=1000)),
              ["input_ids", "attention_mask"], seq, ["y"]),
        Entry("gpt2", text("GPT2Model", "GPT2Config",
                           dict(n_embd=128, n_layer=2, n_head=4, vocab_size=1000)),
              ["input_ids", "attention_mask"], seq, ["y"]),
        Entry("t5_encoder", text("T5EncoderModel", "T5Config",
                                 dict(d_model=128, d_ff=256, d_kv=32, num_layers=2, num_heads=4,
                                      vocab_size=1000)),
              ["input_ids", "attention_mask"], seq, ["y"]),
        Entry("clip_text", text("CLIPTextModel", "CLIPTextConfig", small),
              ["input_ids", "attention_mask"], seq, ["y"]),
        Entry("llama", text("LlamaModel", "LlamaConfig", LLAMA), ["input_ids", "attention_mask"],
              seq, ["y"]),
        Entry("vit_hf", _hf("ViTModel", "ViTConfig",
                            dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=256, image_size=64, patch_size=8),
                            lambda: (__import__("torch").randn(2, 3, 64, 64),),
                            wrap=lambda m: _FirstOutput(m, ["pixel_values"])),
              ["pixel_values"], {"pixel_values": batch, "y": batch}, ["y"]),
        Entry("whisper_encoder", _hf("WhisperModel", "WhisperConfig",
                                     dict(d_model=128, encoder_layers=2, decoder_layers=1,
                                          encoder_attention_heads=4, decoder_attention_heads=4,
                                          encoder_ffn_dim=256, decoder_ffn_dim=256,
                                          num_mel_bins=80, max_source_positions=100,
                                          vocab_size=1000, pad_token_id=0, bos_token_id=1,
                                          eos_token_id=2, decoder_start_token_id=1),
                                     lambda: (__import__("torch").randn(2, 80, 200),),
                                     wrap=lambda m: _FirstOutput(m.get_encoder(),
                                                                 ["input_features"])),
              ["input_features"], {"input_features": batch, "y": batch}, ["y"]),
        Entry("wav2vec2", _hf("Wav2Vec2Model", "Wav2Vec2Config",
                              dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=256, conv_dim=(64, 64, 64),
                                   conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                                   num_feat_extract_layers=3),
                              lambda: (__import__("torch").randn(2, 4000),),
                              wrap=lambda m: _FirstOutput(m, ["input_values"])),
              ["input_values"], {"input_values": {0: "batch", 1: "samples"},
                                 "y": {0: "batch", 1: "frames"}}, ["y"]),
        Entry("llama_kv_cache", _hf("LlamaForCausalLM", "LlamaConfig", LLAMA,
                                    _llama_cache_inputs, wrap=_llama_with_cache),
              ["input_ids"] + [f"past_{kv}_{i}" for i in range(2) for kv in "kv"],
              {"input_ids": {1: "seq"}, **{f"past_{kv}_{i}": {2: "past"} for i in range(2)
                                         for kv in "kv"}},
              ["logits"] + [f"present_{kv}_{i}" for i in range(2) for kv in "kv"]),
    ]
    for e in entries:
        if e.name in older:
            e.opsets = (13, 17)
    return entries


# --- export ----------------------------------------------------------------------------------------

@contextlib.contextmanager
def _attention_for_opset(model, opset):
    """A transformers model's attention as plain MatMul/Softmax below opset 14: recent versions
    default to torch's scaled_dot_product_attention, which the TorchScript exporter only writes
    from opset 14 on. The model's own setting is restored afterwards."""
    inner = getattr(model, "model", model)
    config = getattr(inner, "config", None)
    if opset >= 14 or config is None or not hasattr(inner, "set_attn_implementation"):
        yield
        return
    before = config._attn_implementation
    inner.set_attn_implementation("eager")
    try:
        yield
    finally:
        inner.set_attn_implementation(before)


def _export(entry, model, args, path, exporter, opset):
    import torch

    kwargs = dict(input_names=entry.input_names, output_names=entry.output_names,
                  opset_version=opset)
    if exporter == "dynamo":
        # One spec per positional input (the wrappers take *args), in input order.
        dims = tuple({a: torch.export.Dim.AUTO for a in entry.dynamic_axes.get(name, {})}
                     for name in entry.input_names)
        has_dims = any(dims) and len(dims) == len(args)
        params = list(inspect.signature(model.forward).parameters.values())
        if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
            dims = (dims,)  # forward(*args): one entry, the specs of args
        torch.onnx.export(model, args, path, dynamo=True,
                          dynamic_shapes=dims if has_dims else None, external_data=False,
                          **kwargs)
    else:
        torch.onnx.export(model, args, path, dynamo=False, dynamic_axes=entry.dynamic_axes or None,
                          **kwargs)


def _flat_inputs(args):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out += _flat_inputs(a)
        else:
            out.append(a.detach().numpy())
    return out


def export(args):
    import onnx
    import onnxruntime as ort
    import torch

    os.makedirs(args.dir, exist_ok=True)
    pattern = re.compile(args.models)
    # nn.MultiheadAttention's inference fast path is one aten op the TorchScript exporter lacks.
    torch.backends.mha.set_fastpath_enabled(False)
    for entry in zoo():
        if not pattern.search(entry.name):
            continue
        try:
            model, inputs = entry.build()
        except Exception as e:  # a model this torchvision/transformers cannot build
            print(f"{entry.name}: build failed: {type(e).__name__}: {e}")
            continue
        for exporter in entry.exporters:
            if exporter not in args.exporters:
                continue
            opsets = entry.opsets if exporter == "torchscript" else (18,)
            for opset in opsets:
                tag = f"{entry.name}.{exporter}.opset{opset}"
                path = os.path.join(args.dir, tag + ".onnx")
                start = time.time()
                try:
                    with torch.no_grad(), _attention_for_opset(model, opset):
                        _export(entry, model, inputs, path, exporter, opset)
                    proto = onnx.load(path)
                    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                    names = [i.name for i in session.get_inputs()]
                    feeds = dict(zip(names, _flat_inputs(inputs)))
                    expected = session.run(None, feeds)
                    np.savez(os.path.join(args.dir, tag + ".npz"),
                             **{f"in:{k}": v for k, v in feeds.items()},
                             **{f"out:{i}": v for i, v in enumerate(expected)})
                    print(f"{tag}: {len(proto.graph.node)} nodes, {time.time() - start:.1f} s")
                except Exception as e:
                    for leftover in (path, path + ".data"):
                        if os.path.exists(leftover):
                            os.remove(leftover)
                    msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
                    print(f"{tag}: export or onnxruntime failed: {type(e).__name__}: {msg}")


# --- check -----------------------------------------------------------------------------------------

def _compare(got, want):
    """(ok, max error relative to max |ref|)."""
    if got.shape != want.shape:
        return False, f"shape {got.shape} vs {want.shape}"
    if want.dtype.kind != "f":
        return bool(np.array_equal(got, want)), 0.0 if np.array_equal(got, want) else "differs"
    if want.size == 0:
        return True, 0.0
    got, want = got.astype(np.float64), want.astype(np.float64)
    scale = float(np.max(np.abs(want)))
    diff = float(np.max(np.abs(got - want)))
    return diff <= 1e-4 * scale + 1e-5, diff / scale if scale else diff


def check_one(path, backend):
    import onnx

    import lumen
    import lumen._bench

    tag = os.path.basename(path)[:-5]
    name, exporter, opset = tag.rsplit(".", 2)
    row = {"model": name, "exporter": exporter, "opset": opset[5:], "ops": "", "status": "",
           "max_error": "", "backends": ""}
    proto = onnx.load(path, load_external_data=False)
    row["ops"] = len(proto.graph.node)
    data = np.load(path[:-5] + ".npz")
    feeds = {k[3:]: data[k] for k in data.files if k.startswith("in:")}
    expected = [data[f"out:{i}"] for i in range(sum(k.startswith("out:") for k in data.files))]
    try:
        model = lumen.load_onnx(path)
    except lumen.Error as e:
        row["status"] = "load error: " + str(e).splitlines()[0][:150]
        return row
    try:
        compiled = model.compile(backend=backend)
    except lumen.Error as e:
        row["status"] = "compile error: " + str(e).splitlines()[0][:150]
        return row
    # Twice: a model with symbolic dims runs its generic plan the first time it meets these
    # shapes and the plan made for them the second time; both must match.
    runs = []
    try:
        for _ in range(2):
            outputs, profile = compiled.executable.execute_profiled(feeds)
            runs.append([np.asarray(o) for o in outputs])
    except lumen.Error as e:
        row["status"] = "run error: " + str(e).splitlines()[0][:150]
        return row
    counts = {}
    for step in profile.plan_steps:
        counts[step.backend] = counts.get(step.backend, 0) + 1
    row["backends"] = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    worst, ok, tied = 0.0, True, 0
    for outputs in runs:
        ok = ok and len(outputs) == len(expected)
        # Detections whose scores tie within the tolerance may come in another order.
        outputs, moved, _ = lumen._bench.match_tied_rows(outputs, expected, rtol=1e-4, atol=1e-5)
        tied = max(tied, moved)
        for got, want in zip(outputs, expected):
            good, err = _compare(got, want)
            ok = ok and good
            if isinstance(err, str):
                worst = err
            elif not isinstance(worst, str):
                worst = max(worst, err)
    row["max_error"] = worst if isinstance(worst, str) else f"{worst:.1e}"
    row["status"] = "MISMATCH" if not ok else f"ok ({tied} tied rows in another order)" if tied \
        else "ok"
    return row


def check(args):
    pattern = re.compile(args.models)
    paths = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir)
                   if f.endswith(".onnx") and pattern.search(f))
    if not paths:
        print(f"no exported models in {args.dir}: run `python bench/zoo.py export` first")
        return 1
    rows = []
    for path in paths:
        try:
            rows.append(check_one(path, args.backend))
        except Exception as e:  # a bug in Lumen's Python layer, reported in the table
            rows.append({"model": os.path.basename(path), "exporter": "", "opset": "", "ops": "",
                         "status": f"error: {type(e).__name__}: {e}"[:160], "max_error": "",
                         "backends": ""})
            traceback.print_exc()
        r = rows[-1]
        print(f"{r['model']:<26} {r['exporter']:<11} {r['opset']:>5} {str(r['ops']):>5}  "
              f"{r['status'][:70]:<70} {r['max_error']:>9}  {r['backends']}", flush=True)
    ok = sum(r["status"].startswith("ok") for r in rows)
    print(f"\n{ok} of {len(rows)} models match onnxruntime (backend={args.backend or 'auto'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok == len(rows) else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["export", "check"])
    p.add_argument("--dir", default=DEFAULT_DIR)
    p.add_argument("--models", default=".", help="regular expression over model names")
    p.add_argument("--exporters", default="torchscript,dynamo")
    p.add_argument("--backend", default="cpu", help='"" for automatic placement')
    p.add_argument("--json")
    args = p.parse_args(argv)
    args.exporters = args.exporters.split(",")
    return export(args) if args.command == "export" else check(args)


if __name__ == "__main__":
    sys.exit(main())
