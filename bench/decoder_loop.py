"""A LLaMA-style decoder with a KV cache, as generation runs it: a prefill of --prompt tokens, then
--steps single-token steps, each feeding the previous step's present keys and values back as the
past ones (every call has a new past length). Lumen and onnxruntime run the whole sequence in turn,
--repeats times, same threads, onnxruntime's spinning stopped; the tokens are fixed, and every
step's logits are checked against onnxruntime's. Prints the median prefill time, the median of
the per-sequence mean step time, and the ratios.

    PYTHONPATH=build/python .venv/bin/python bench/decoder_loop.py [--threads 2] [--model PATH]

The model is the zoo's llama_kv_cache export (bench/zoo.py export makes it).
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def sequence(run, names, prompt, steps, past_shape):
    """Runs prefill + steps with `run(feeds) -> list of outputs`; returns (prefill seconds, step
    seconds list, logits list)."""
    empty = np.zeros(past_shape, np.float32)
    feeds = {"input_ids": prompt}
    for name in names:
        feeds[name] = empty
    start = time.perf_counter()
    outs = run(feeds)
    prefill = time.perf_counter() - start
    logits, step_times = [outs[0][:, -1]], []
    token = np.array([[int(np.argmax(outs[0][0, -1]))]], np.int64)
    for _ in range(steps):
        feeds = {"input_ids": token}
        feeds.update({name: value for name, value in zip(names, outs[1:])})
        start = time.perf_counter()
        outs = run(feeds)
        step_times.append(time.perf_counter() - start)
        logits.append(outs[0][:, -1])
        token = np.array([[int(np.argmax(outs[0][0, -1]))]], np.int64)
    return prefill, step_times, logits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.path.join(HERE, ".zoo",
                                                        "llama_kv_cache.torchscript.opset17.onnx"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    if not os.path.exists(args.model):
        sys.exit(f"{args.model} not found: run bench/zoo.py export first")

    import onnxruntime as ort

    import lumen

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.add_session_config_entry("session.force_spinning_stop", "1")
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs() if i.name != "input_ids"]
    output_names = [o.name for o in session.get_outputs()]
    past_shape = [d if isinstance(d, int) else 0 for d in session.get_inputs()[1].shape]
    compiled = lumen.load_onnx(args.model).compile(num_threads=args.threads)
    engines = {
        "lumen": lambda feeds: [np.asarray(v) for v in compiled.run(feeds)],
        "onnxruntime": lambda feeds: session.run(output_names, feeds),
    }
    prompt = (np.arange(args.prompt, dtype=np.int64) * 7 % 1000).reshape(1, -1)
    results = {name: {"prefill": [], "step": []} for name in engines}
    reference = None
    for repeat in range(args.repeats + 1):
        for name, run in engines.items():
            prefill, steps, logits = sequence(run, names, prompt, args.steps, past_shape)
            if name == "onnxruntime":
                reference = logits
            else:
                lumen_logits = logits
            if repeat > 0:  # the first sequence warms both up
                results[name]["prefill"].append(prefill)
                results[name]["step"].append(statistics.mean(steps))
        worst = max(float(np.max(np.abs(a - b)) / max(1e-6, float(np.max(np.abs(b)))))
                    for a, b in zip(lumen_logits, reference))
        if worst > 1e-3:
            sys.exit(f"lumen's logits differ from onnxruntime's: max relative error {worst:.2e}")
    med = {name: {k: statistics.median(v) * 1e3 for k, v in r.items()}
           for name, r in results.items()}
    print(f"{os.path.basename(args.model)}: prefill {args.prompt} tokens, then {args.steps} steps, "
          f"{args.threads} threads, median of {args.repeats} sequences; logits agree "
          f"(max relative error {worst:.1e})")
    for phase in ("prefill", "step"):
        lumen_ms, ort_ms = med["lumen"][phase], med["onnxruntime"][phase]
        print(f"  {phase:8s} lumen {lumen_ms:8.3f} ms  onnxruntime {ort_ms:8.3f} ms  "
              f"ratio {lumen_ms / ort_ms:.2f}")
    total = {name: m["prefill"] + args.steps * m["step"] for name, m in med.items()}
    print(f"  sequence lumen {total['lumen']:8.3f} ms  onnxruntime {total['onnxruntime']:8.3f} ms  "
          f"ratio {total['lumen'] / total['onnxruntime']:.2f}")


if __name__ == "__main__":
    main()
