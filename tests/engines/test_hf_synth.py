"""transformers as the reference for every family and option driftscope loads, on tiny seeded
checkpoints: `driftscope synth --shape tiny` in F32, BF16 and F16 safetensors (Llama, untied
embeddings), and checkpoints written here with torch + safetensors for what synth has no shape
for: Llama-3 rope scaling, Mistral's sliding window (shorter than the sequences), Qwen2's q/k/v
biases (non-zero), tied embeddings. driftscope CPU fp32 against transformers fp32 eager on a few
--prompt-ids prompts: identical greedy tokens, relative L2 <= 1e-5 at every L<l>/out and
final_norm.

  python tests/engines/test_hf_synth.py DRIFTSCOPE_EXE WORK_DIR
"""

import json
import os
import sys
import time

import torch
from safetensors.torch import save_file

from engines_common import Comparison, check, driftscope, recorder

THRESHOLD = 1e-5
PROMPTS = [[1, 17, 300, 42, 9], [1, 250, 251, 7, 88, 400, 3, 19, 60, 77, 5, 123], [1, 2], [1] + list(range(30, 50))]
MAX_NEW = 40


def write_checkpoint(path, model_type, dtype=torch.float32, tied=False, bias=False, extra=None, seed=0):
    """A tiny Llama-layout checkpoint (dim 64, 2 layers, 4 heads of 16, 2 KV heads, vocab 512)."""
    g = torch.Generator().manual_seed(seed)
    D, F, L, H, KV, V, hd = 64, 160, 2, 4, 2, 512, 16
    w = lambda *shape: (torch.randn(*shape, generator=g) * 0.05).to(dtype)
    norm = lambda: (1 + 0.1 * torch.randn(D, generator=g)).to(dtype)
    t = {"model.embed_tokens.weight": w(V, D), "model.norm.weight": norm()}
    for l in range(L):
        p = "model.layers.%d." % l
        t.update(
            {
                p + "input_layernorm.weight": norm(),
                p + "post_attention_layernorm.weight": norm(),
                p + "self_attn.q_proj.weight": w(H * hd, D),
                p + "self_attn.k_proj.weight": w(KV * hd, D),
                p + "self_attn.v_proj.weight": w(KV * hd, D),
                p + "self_attn.o_proj.weight": w(D, H * hd),
                p + "mlp.gate_proj.weight": w(F, D),
                p + "mlp.up_proj.weight": w(F, D),
                p + "mlp.down_proj.weight": w(D, F),
            }
        )
        if bias:
            t.update(
                {
                    p + "self_attn.q_proj.bias": w(H * hd) * 10,
                    p + "self_attn.k_proj.bias": w(KV * hd) * 10,
                    p + "self_attn.v_proj.bias": w(KV * hd) * 10,
                }
            )
    if not tied:
        t["lm_head.weight"] = w(V, D)
    os.makedirs(path, exist_ok=True)
    save_file(t, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    arch = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}[model_type]
    cfg = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": D,
        "intermediate_size": F,
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": KV,
        "vocab_size": V,
        "max_position_embeddings": 256,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": str(dtype).replace("torch.", ""),
    }
    cfg.update(extra or {})
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def main(exe, work):
    os.makedirs(work, exist_ok=True)
    prompts = os.path.join(work, "prompts.jsonl")
    with open(prompts, "w") as f:
        f.writelines(json.dumps({"ids": p}) + "\n" for p in PROMPTS)
    cases = {}
    for dt in ("f32", "bf16", "f16"):
        d = os.path.join(work, "synth-tiny-" + dt)
        driftscope(exe, "synth", "--shape", "tiny", "--dtype", dt, "--seed", "7", "--force", "-o", d)
        cases["synth tiny %s (llama, untied)" % dt.upper()] = d
    made = {
        "llama-3 rope scaling": dict(
            model_type="llama",
            extra={
                "rope_theta": 500000.0,
                "rope_scaling": {
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 32,
                },
            },
        ),
        "mistral sliding window 8": dict(model_type="mistral", extra={"sliding_window": 8}),
        "qwen2 q/k/v bias, tied, BF16": dict(
            model_type="qwen2",
            tied=True,
            bias=True,
            dtype=torch.bfloat16,
            extra={"rms_norm_eps": 1e-6, "use_sliding_window": False},
        ),
        "llama tied embeddings": dict(model_type="llama", tied=True),
    }
    for i, (name, kw) in enumerate(made.items()):
        d = os.path.join(work, "made-%d" % i)
        write_checkpoint(d, seed=i + 1, **kw)
        cases[name] = d

    ok = True
    for name, d in cases.items():
        a, b = os.path.join(d, "hf.h5"), os.path.join(d, "ds.h5")
        args = ["-m", d, "--prompts", prompts, "-n", str(MAX_NEW), "--probes", "L*/out,final_norm", "--force"]
        _, t_ds = driftscope(exe, "run", *args, "-q", "-o", b)
        _, t_hf = recorder(*args, "-o", a)
        c = Comparison(a, b)
        mism = c.token_mismatches()
        worst = c.max_rel_l2()
        ok &= check(
            not mism,
            "%s: identical greedy tokens on %d prompts x %d (mismatches: %s)" % (name, len(PROMPTS), MAX_NEW, mism),
        )
        ok &= check(
            max(worst.values()) <= THRESHOLD,
            "%s: max relative L2 %s <= %.0e  (%.1f s + %.1f s)"
            % (name, " ".join("%s %.1e" % kv for kv in worst.items()), THRESHOLD, t_ds, t_hf),
        )
        c.close()
    return ok


if __name__ == "__main__":
    t0 = time.perf_counter()
    torch.set_num_threads(1)
    ok = main(sys.argv[1], sys.argv[2])
    print("%.1f s" % (time.perf_counter() - t0))
    sys.exit(0 if ok else 1)
