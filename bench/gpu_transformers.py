#!/usr/bin/env python3
"""transformers' greedy decode tokens/s on the same checkpoint and shapes as bench_gpu_decode:
the peer driftscope's batched decode is held against (issue: at least 3x transformers sdpa).

    python3 bench/gpu_transformers.py MODEL_DIR [--batches 1,8,16,32] [--attn sdpa,eager]
                                      [--tokens 64] [--dtype bf16] [--json OUT.json]

Prompts as bench_gpu_decode's: 16 tokens, id (7 + 31 i + 101 b) mod vocab for row b. Decode time
= time of generate(N new tokens) - time of generate(1 new token) (the prefill and set-up), each
the median of 3 after a warm-up; tokens/s = batch x (N - 1) / decode time. Needs torch with a
CUDA device and transformers.
"""

import argparse
import json
import statistics
import time

import torch
from transformers import AutoModelForCausalLM


def generate_seconds(model, ids, new_tokens, reps=3):
    times = []
    for r in range(reps + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
        torch.cuda.synchronize()
        if r > 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def set_attention(model, attn):
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(attn)
    else:
        model.config._attn_implementation = attn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--batches", default="1,8,16,32")
    ap.add_argument("--attn", default="sdpa,eager")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--json")
    args = ap.parse_args()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype).to("cuda").eval()
    print(f"transformers: {args.model} loaded in {time.perf_counter() - t0:.1f} s")
    vocab = model.config.vocab_size
    out = {"dtype": args.dtype, "tokens": args.tokens, "torch": torch.__version__, "runs": {}}
    import transformers

    out["transformers"] = transformers.__version__
    for attn in args.attn.split(","):
        set_attention(model, attn)
        out["runs"][attn] = {}
        for b in [int(x) for x in args.batches.split(",")]:
            ids = torch.tensor(
                [[(7 + 31 * i + 101 * r) % vocab for i in range(16)] for r in range(b)],
                device="cuda",
            )
            with torch.inference_mode():
                full = generate_seconds(model, ids, args.tokens)
                first = generate_seconds(model, ids, 1)
            tps = b * (args.tokens - 1) / (full - first)
            out["runs"][attn][str(b)] = {"tok_s": tps, "seconds": full, "prefill_seconds": first}
            print(f"transformers {attn} {args.dtype} batch {b}: {tps:.1f} tokens/s", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
