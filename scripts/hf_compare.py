#!/usr/bin/env python3
"""Compares a driftscope trace with Hugging Face transformers on the same checkpoint:
per-layer relative drift of hidden states (transformers' output_hidden_states against the
trace's embed / L<l>/out / final_norm), greedy agreement, and eager-generate tokens/s.

Runs where torch and transformers are installed (the lent GPU machines have both); untested
where they are not. Usage:

  driftscope run -m MODEL --prompt-ids 1,2,3 -n 64 --device cuda --dtype bf16 \
      --probes embed,L*/out,final_norm -o t.h5
  python3 scripts/hf_compare.py MODEL t.h5 [--dtype bf16] [--device cuda] [--seq 0]

transformers' hidden_states[0] is the embedding output, hidden_states[l] (1 <= l < L) the
output of layer l-1, and hidden_states[L] the final norm of the last layer's output; so
L<L-1>/out has no transformers counterpart and is not compared.
"""

import argparse
import json
import time

import h5py
import numpy as np
import torch
from transformers import AutoModelForCausalLM


def hidden(seq, site):
    h = seq["hidden/" + site]
    if h.attrs.get("dtype") == "bf16":
        return (h[:].astype(np.uint32) << 16).view(np.float32)
    return h[:].astype(np.float32)


def rel_l2(a, b):
    """Relative L2 per row, a the reference."""
    num = np.linalg.norm(a - b, axis=1)
    den = np.maximum(np.linalg.norm(a, axis=1), 1e-30)
    return num / den


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("trace")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seq", type=int, default=0)
    args = ap.parse_args()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]

    f = h5py.File(args.trace, "r")
    assert f.attrs["format"] == "driftscope-trace", "not a driftscope trace"
    seq = f["seq/%d" % args.seq]
    tokens = seq["tokens"][:].astype(np.int64)
    prompt_len = int(seq.attrs["prompt_len"])
    rows = seq["hidden/embed"].shape[0] if "hidden/embed" in seq else len(tokens) - 1
    config = json.loads(f["meta"].attrs["config_json"])
    print(
        "trace: %s, dtype %s, device %s, %d tokens (prompt %d)"
        % (args.trace, config.get("dtype"), config.get("device"), len(tokens), prompt_len)
    )

    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=dtype, attn_implementation="eager")
    model.to(args.device).eval()
    n_layers = model.config.num_hidden_layers

    # Teacher-forced forward over the trace's tokens: the positions driftscope ran.
    ids = torch.tensor(tokens[:rows], device=args.device)[None]
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
    hs = [h[0].float().cpu().numpy() for h in out.hidden_states]
    pairs = [("embed", 0)] + [("L%d/out" % l, l + 1) for l in range(n_layers - 1)] + [("final_norm", n_layers)]
    print("%-14s %12s %12s" % ("site", "median rel", "max rel"))
    for site, i in pairs:
        if "hidden/" + site not in seq:
            continue
        d = rel_l2(hidden(seq, site)[:rows], hs[i][:rows])
        print("%-14s %12.3e %12.3e" % (site, float(np.median(d)), float(np.max(d))))
    hf_choice = out.logits[0].argmax(-1).cpu().numpy()
    gen = np.arange(prompt_len - 1, rows)
    agree = int(np.sum(hf_choice[gen] == tokens[gen + 1]))
    print("greedy choices equal to the trace's tokens: %d of %d generated positions" % (agree, len(gen)))

    # Eager generate speed at batch 1 on the trace's prompt.
    n_new = len(tokens) - prompt_len
    prompt = torch.tensor(tokens[:prompt_len], device=args.device)[None]
    with torch.no_grad():
        model.generate(prompt, max_new_tokens=4, do_sample=False, min_new_tokens=4)  # warm-up
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(prompt, max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        secs = time.perf_counter() - t0
    print("transformers eager generate: %d tokens in %.3f s = %.1f tokens/s" % (n_new, secs, n_new / secs))


if __name__ == "__main__":
    main()
