#!/usr/bin/env python3
"""Explains, op by op, where driftscope and Hugging Face transformers part ways in reduced
precision (issue 49 item 7; docs/numerics.md, "driftscope against transformers, op by op").

Runs transformers on the token ids of a driftscope trace (teacher-forced: one forward pass over
the rows the trace ran) with forward hooks on every op of one layer, then:

 1. per op of that layer, fed transformers' own input to the op: the op's output under
    driftscope's convention (kernels/ops.h: one rounding per op output, RoPE tables in float32,
    attention scores unrounded) and under transformers' convention, both emulated in float64
    with explicit rounding to the storage format (round to nearest even) where each engine
    rounds, against what transformers computed (relative L2 per row, median and max over rows);
 2. the layer re-run from transformers' input to it under driftscope's conventions with one op
    at a time switched to transformers' convention (and the reverse), so each op's share of the
    drift after the layer is measured, not guessed;
 3. per site over every layer: the trace against transformers (as scripts/hf_compare.py, with
    every site the trace holds).

Usage (any machine with torch and transformers; no network):

  driftscope run -m MODEL --prompt-ids 1,100,200,300,400,500,600,700 -n 24 --dtype bf16 \\
      --probes all -o ds.h5                                 # add --device cuda on a GPU
  python3 scripts/hf_ops_compare.py MODEL ds.h5 --dtype bf16 --attn eager --device cpu

With --emulate-all, also every layer from the embedding: driftscope's conventions (checked
against the trace) and transformers' conventions with driftscope's sums and with float64 sums,
against transformers: what a transformers-convention mode in driftscope would give.

The emulation computes in float64 where driftscope computes in float32 (and transformers' GEMMs
sum in their own order), so "same convention" still differs where a float32 error moves a value
across a rounding boundary: the "tf emul vs tf" column measures that floor for each op. With
--ds-sums seq32 (the default) driftscope's GEMMs are summed as its CPU reference sums them and
its RMSNorm is computed in float32 as written, so on a CPU trace the "driftscope's" line of the
layer table equals the trace (on a CUDA trace, cuBLAS sums in its own order). transformers 4.x
(scores divided by sqrt(head_dim)) and torch 1.x (a Python scalar rounded to the tensor's format;
SiLU in 16-bit steps) are emulated as measured. With --dtype fp32 nothing is rounded (float64):
the numbers are float32's agreement.

On a GPU machine (torch, transformers, h5py; no network): --device cuda runs transformers there
and driftscope's float32 sums on the GPU (one torch op per k); docs/numerics.md has the CPU run.
"""

import argparse
import json
import math
import sys
import time

import h5py
import numpy as np

FORMATS = {  # significant bits, exponent of the smallest subnormal spacing, largest finite
    "bf16": (8, -133, 3.3895313892515355e38),
    "fp16": (11, -24, 65504.0),
    "fp32": (24, -149, 3.4028234663852886e38),
}


def rnd(x, fmt):
    """x (float64) rounded to the storage format fmt, round to nearest even, in one step (no
    double rounding through float32); fmt None keeps float64."""
    if fmt is None:
        return x
    sig, emin, big = FORMATS[fmt]
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)
    se = np.maximum(e - sig, emin)
    y = np.ldexp(np.round(np.ldexp(x, -se)), se)
    return np.where(np.abs(y) > big, np.copysign(np.inf, x), y)


def rel_rows(ref, b):
    """Relative L2 per row (last axis flattened with every axis but the first), ref the reference."""
    ref = np.asarray(ref, np.float64).reshape(ref.shape[0], -1)
    b = np.asarray(b, np.float64).reshape(b.shape[0], -1)
    num = np.linalg.norm(ref - b, axis=1)
    den = np.maximum(np.linalg.norm(ref, axis=1), 1e-300)
    return num / den


def stat(ref, b, rows=None):
    d = rel_rows(ref, b)
    if rows is not None:
        d = d[rows]
    return float(np.median(d)), float(np.max(d))


# ---- the ops, in float64, with rounding (r = storage format or None) where each engine rounds ----


def rmsnorm(x, w, eps, conv, r):
    """ds: round((x * inv) * w); tf (LlamaRMSNorm): round(w * round(x * inv)); exact: no rounding;
    ds32: driftscope's CPU op in float32 as written (kernels/cpu/ops_cpu.cpp: the sum of squares in
    order, inv = 1 / sqrt(ss / dim + eps), (x * inv) * w, each step a float32 operation)."""
    if conv == "ds32":
        x32, w32 = x.astype(np.float32), w.astype(np.float32)
        ss = np.cumsum(x32 * x32, axis=-1, dtype=np.float32)[..., -1:]  # cumsum: in order
        inv = np.float32(1) / np.sqrt(ss / np.float32(x.shape[-1]) + np.float32(eps))
        return rnd(((x32 * inv) * w32).astype(np.float64), r)
    inv = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    if conv == "ds":
        return rnd((x * inv) * w, r)
    if conv == "tf":
        return rnd(w * rnd(x * inv, r), r)
    return (x * inv) * w


SEQ32_DEVICE = "cpu"


def gemm_seq32(x, w, b):
    """x w^T (+ b) as driftscope's CPU GEMM sums it (kernels/ops.h, docs/numerics.md): float32,
    each product rounded to float32 and added for k = 0, 1, ... in order (no FMA), the bias added
    last; unrounded to the storage format. Run with torch on SEQ32_DEVICE, one k at a time."""
    import torch

    dev = SEQ32_DEVICE
    xt = torch.tensor(x, dtype=torch.float32, device=dev)
    wt = torch.tensor(w, dtype=torch.float32, device=dev).t().contiguous()  # (K, N)
    acc = torch.zeros(xt.shape[0], wt.shape[1], dtype=torch.float32, device=dev)
    for k in range(wt.shape[0]):
        acc.add_(xt[:, k : k + 1] * wt[k])
    if b is not None:
        acc.add_(torch.tensor(b, dtype=torch.float32, device=dev))
    return acc.double().cpu().numpy()


def linear(x, w, b, conv, r, sums="fp64"):
    """Both engines: float32 accumulation, bias added, one rounding; sums "fp64" sums in float64
    (close to BLAS's blocked float32 sums), "seq32" in driftscope's CPU order (gemm_seq32).
    conv tf_bias2: the bias added to the rounded product and rounded again (a GEMM without a bias
    epilogue, as driftscope's cuBLAS path does, docs/cuda.md)."""
    if sums == "seq32" and conv != "exact":
        y = gemm_seq32(x, w, b if conv != "tf_bias2" else None)
    else:
        y = x @ w.T
        if b is not None and conv != "tf_bias2":
            y = y + b
    if conv == "exact":
        return y
    if conv == "tf_bias2" and b is not None:
        return rnd(rnd(y, r) + b, r)
    return rnd(y, r)


def rope_tables_ds(positions, inv_freq):
    """driftscope: angle and cos/sin in double (src/runtime/rope_table.cpp), stored in float32."""
    a = positions[:, None].astype(np.float64) * inv_freq[None, :]
    return rnd(np.cos(a), "fp32"), rnd(np.sin(a), "fp32")


def rope(x, cos, sin, conv, r):
    """x: (T, heads, hd), half-split; cos, sin: (T, hd/2) in float64 (already rounded as the
    convention stores them). ds: round(x0 c - x1 s) once; tf: q*cos and rotate_half(q)*sin each
    rounded, then their sum rounded (apply_rotary_pos_emb on bf16 tensors)."""
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    c, s = cos[:, None, :], sin[:, None, :]
    if conv == "tf":
        a0, a1 = rnd(x0 * c, r), rnd(x1 * c, r)
        b0, b1 = rnd(-x1 * s, r), rnd(x0 * s, r)
        return np.concatenate([rnd(a0 + b0, r), rnd(a1 + b1, r)], axis=-1)
    y = np.concatenate([x0 * c - x1 * s, x1 * c + x0 * s], axis=-1)
    return rnd(y, r) if conv == "ds" else y


def attention(q, k, v, scale, conv, r, window=0, divide_by=None):
    """Causal GQA attention. q: (T, H, hd), k, v: (T, KV, hd); row t at position t.
    ds (kernels/ops.h, splits = 1): s = (q.k) * scale unrounded; p = round(softmax(s)); out =
      round(sum p v).
    tf_eager: s = round(round(q.k) * scale) (a bf16 matmul, then the scale in bf16; transformers 4.x
      divides by sqrt(hd) instead); p = round(softmax_fp32(s)); out = round(p @ v).
    flash (sdpa's flash kernels, and driftscope's split-KV chunks): s unrounded; e = exp(s - max)
      rounded before P.V; l = sum of the unrounded e; out = round(sum round(e) v / l).
    exact: no rounding."""
    T, H, hd = q.shape
    KV = k.shape[1]
    g = H // KV
    kk = np.repeat(k, g, axis=1)  # (T, H, hd)
    vv = np.repeat(v, g, axis=1)
    s = np.einsum("thd,uhd->htu", q, kk)  # (H, Tq, Tk)
    if conv == "tf_eager":
        s = rnd(s, r)
        s = rnd(s / divide_by if divide_by else s * scale, r)
    else:
        s = s * scale
    idx = np.arange(T)
    mask = idx[None, :] > idx[:, None]
    if window and window > 0:
        mask |= idx[None, :] <= idx[:, None] - window
    s = np.where(mask[None], -np.inf, s)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    l = np.sum(e, axis=-1, keepdims=True)
    if conv == "flash":
        o = np.einsum("htu,uhd->thd", rnd(e, r), vv) / np.transpose(l, (1, 0, 2))
        return rnd(o, r)
    p = e / l
    if conv in ("ds", "tf_eager"):
        p = rnd(p, r)
    o = np.einsum("htu,uhd->thd", p, vv)
    return rnd(o, r) if conv != "exact" else o


def silu(g):
    return g / (1.0 + np.exp(-g))


# torch 1.x computes SiLU of a 16-bit tensor in that format, each step rounded (measured on
# Debian's torch 1.13: round(x / round(1 + round(exp(-x))))); torch 2.x in float32, rounded once.
SILU_STEPS_ROUNDED = False


def swiglu(gate, up, conv, r):
    """ds: round(silu(g) * u) once; tf: act_fn(gate) rounded, then the product rounded."""
    if conv == "tf":
        if SILU_STEPS_ROUNDED:
            act = rnd(gate / rnd(1.0 + rnd(np.exp(-gate), r), r), r)
        else:
            act = rnd(silu(gate), r)
        return rnd(act * up, r)
    y = silu(gate) * up
    return rnd(y, r) if conv == "ds" else y


def add(a, b, conv, r):
    return rnd(a + b, r) if conv != "exact" else a + b


# ---- transformers: the model, hooks on one layer's ops, the sites of every layer ----


def to_np(t):
    import torch

    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


class Capture:
    """Forward hooks on the block-level sites of every layer and on every op of layer `op_layer`."""

    def __init__(self, model, op_layer):
        import torch

        self.model, self.op_layer = model, op_layer
        self.sites, self.ops, self.handles = {}, {}, []
        inner = model.model
        self._hook(inner.embed_tokens, lambda m, i, o: self._site("embed", o))
        for l, layer in enumerate(inner.layers):
            self._hook(layer.input_layernorm, lambda m, i, o, l=l: self._site("L%d/attn_norm" % l, o))
            self._hook(layer.self_attn.o_proj, lambda m, i, o, l=l: self._site("L%d/attn_out" % l, o))
            self._hook(
                layer.post_attention_layernorm,
                lambda m, i, o, l=l: (self._site("L%d/resid_mid" % l, i[0]), self._site("L%d/mlp_norm" % l, o)),
            )
            self._hook(layer.mlp.down_proj, lambda m, i, o, l=l: self._site("L%d/mlp_out" % l, o))
            self._hook(
                layer, lambda m, i, o, l=l: self._site("L%d/out" % l, o[0] if isinstance(o, (tuple, list)) else o)
            )
        self._hook(inner.norm, lambda m, i, o: self._site("final_norm", o))
        L = inner.layers[op_layer]
        att, mlp = L.self_attn, L.mlp
        pairs = [
            ("input_layernorm", L.input_layernorm),
            ("q_proj", att.q_proj),
            ("k_proj", att.k_proj),
            ("v_proj", att.v_proj),
            ("o_proj", att.o_proj),
            ("post_attention_layernorm", L.post_attention_layernorm),
            ("gate_proj", mlp.gate_proj),
            ("up_proj", mlp.up_proj),
            ("act_fn", mlp.act_fn),
            ("down_proj", mlp.down_proj),
            ("layer", L),
        ]
        for name, mod in pairs:
            self._hook(mod, lambda m, i, o, name=name: self._op(name, i[0] if i else None, o))
        # RoPE is a function of the modeling module (apply_rotary_pos_emb), not a module: wrapped
        # for the duration of the pass, recording q, k before and after and the cos/sin it used.
        self.mod = sys.modules[type(att).__module__]
        self.orig_rope = self.mod.apply_rotary_pos_emb
        self.rope_calls = 0

        def rope_wrap(q, k, cos, sin, *a, **kw):
            qo, ko = self.orig_rope(q, k, cos, sin, *a, **kw)
            if self.rope_calls == op_layer:
                self.ops["rope"] = {
                    "q": to_np(q),
                    "k": to_np(k),
                    "q_out": to_np(qo),
                    "k_out": to_np(ko),
                    "cos": to_np(cos),
                    "sin": to_np(sin),
                    "cos_dtype": str(cos.dtype),
                }
            self.rope_calls += 1
            return qo, ko

        self.mod.apply_rotary_pos_emb = rope_wrap
        self.torch = torch

    def _hook(self, mod, fn):
        def hook(m, i, o):
            fn(m, i, o)  # a hook's return value would replace the module's output: none returned

        self.handles.append(mod.register_forward_hook(hook))

    def _site(self, name, t):
        self.sites[name] = to_np(t[0])

    def _op(self, name, i, o):
        o = o[0] if isinstance(o, (tuple, list)) else o
        self.ops[name] = {"in": None if i is None else to_np(i[0]), "out": to_np(o[0])}

    def close(self):
        for h in self.handles:
            h.remove()
        self.mod.apply_rotary_pos_emb = self.orig_rope


def rope_inv_freq_ds(cfg, head_dim):
    """driftscope's inverse frequencies in double (src/runtime/rope_table.cpp: default and llama3)."""
    theta = getattr(cfg, "rope_theta", None)
    rp = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if theta is None:
        theta = rp.get("rope_theta", 10000.0)
    inv = 1.0 / np.power(float(theta), (2.0 * np.arange(head_dim // 2)) / head_dim)
    rtype = rp.get("rope_type", rp.get("type", "default")) if rp else "default"
    if rtype == "llama3":
        f, lo, hi, orig = (
            rp["factor"],
            rp["low_freq_factor"],
            rp["high_freq_factor"],
            rp["original_max_position_embeddings"],
        )
        low_w, high_w = orig / lo, orig / hi
        out = []
        for x in inv:
            w = 2 * math.pi / x
            if w < high_w:
                out.append(x)
            elif w > low_w:
                out.append(x / f)
            else:
                sm = (orig / w - lo) / (hi - lo)
                out.append((1 - sm) * x / f + sm * x)
        inv = np.array(out)
    elif rtype not in ("default", None):
        print("note: rope type %s is not emulated; driftscope's tables taken from transformers' inv_freq" % rtype)
    return inv


class Layer:
    """One decoder layer's weights in float64 and its shapes."""

    def __init__(self, model, l):
        L = model.model.layers[l]
        a, m = L.self_attn, L.mlp
        cfg = model.config
        self.hd = getattr(a, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.H = cfg.num_attention_heads
        self.KV = cfg.num_key_value_heads
        self.eps = cfg.rms_norm_eps
        self.scale = getattr(a, "scaling", None) or self.hd**-0.5
        self.window = (getattr(cfg, "sliding_window", None) or 0) if getattr(cfg, "use_sliding_window", True) else 0
        w = lambda t: None if t is None else to_np(t)
        self.n1, self.n2 = w(L.input_layernorm.weight), w(L.post_attention_layernorm.weight)
        self.wq, self.wk, self.wv, self.wo = (
            w(a.q_proj.weight),
            w(a.k_proj.weight),
            w(a.v_proj.weight),
            w(a.o_proj.weight),
        )
        self.bq, self.bk, self.bv = w(a.q_proj.bias), w(a.k_proj.bias), w(a.v_proj.bias)
        self.wg, self.wu, self.wd = w(m.gate_proj.weight), w(m.up_proj.weight), w(m.down_proj.weight)


def run_layer(ly, x, conv, r, tables, divide_by):
    """Layer from its input x (T, D) with conventions conv = {norm, bias, rope, attn, swiglu}."""
    T = x.shape[0]
    o = {}
    h = rmsnorm(x, ly.n1, ly.eps, conv["norm"], r)
    o["attn_norm"] = h
    lin = "tf_bias2" if conv["bias"] == "tf_bias2" else "exact" if conv["norm"] == "exact" else "ds"
    sums = conv.get("sums", "fp64")
    q = linear(h, ly.wq, ly.bq, lin, r, sums).reshape(T, ly.H, ly.hd)
    k = linear(h, ly.wk, ly.bk, lin, r, sums).reshape(T, ly.KV, ly.hd)
    v = linear(h, ly.wv, ly.bv, lin, r, sums).reshape(T, ly.KV, ly.hd)
    cos, sin = tables[conv["rope"]]
    q, k = rope(q, cos, sin, conv["rope"], r), rope(k, cos, sin, conv["rope"], r)
    att = attention(q, k, v, ly.scale, conv["attn"], r, ly.window, divide_by).reshape(T, -1)
    o["attn_out"] = linear(att, ly.wo, None, lin, r, sums)
    x = add(x, o["attn_out"], "ds", r)
    o["resid_mid"] = x
    h = rmsnorm(x, ly.n2, ly.eps, conv["norm"], r)
    o["mlp_norm"] = h
    gu = swiglu(linear(h, ly.wg, None, lin, r, sums), linear(h, ly.wu, None, lin, r, sums), conv["swiglu"], r)
    o["mlp_out"] = linear(gu, ly.wd, None, lin, r, sums)
    o["out"] = add(x, o["mlp_out"], "ds", r)
    return o


def hidden(seq, site):
    h = seq["hidden/" + site]
    if h.attrs.get("dtype") == "bf16":
        return (h[:].astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return h[:].astype(np.float64)


def fmt_pair(p):
    return "%9.2e %9.2e" % p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="Hugging Face model directory (the trace's checkpoint)")
    ap.add_argument("trace", help="driftscope trace of that checkpoint (--probes all gives every site)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda (transformers' device)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--attn", default="eager", choices=["eager", "sdpa"], help="transformers' attention")
    ap.add_argument("--seq", type=int, default=0, help="sequence of the trace")
    ap.add_argument("--layer", type=int, default=0, help="layer whose ops are compared")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument(
        "--ds-sums",
        default="seq32",
        choices=["seq32", "fp64"],
        help="how driftscope's GEMMs are emulated: seq32 = its CPU reference's order (float32, "
        "k in order; slow on a CPU: one torch op per k), fp64 = float64 sums",
    )
    ap.add_argument(
        "--emulate-all",
        action="store_true",
        help="also emulate every layer from the embedding: driftscope's conventions (checked "
        "against the trace) and transformers' with driftscope's sums (what a "
        "transformers-convention mode would give)",
    )
    ap.add_argument("--json", help="write every number printed to this file")
    a = ap.parse_args()

    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    r = None if a.dtype == "fp32" else a.dtype  # storage rounding; fp32 values stay float64 here

    f = h5py.File(a.trace, "r")
    if f.attrs.get("format") != "driftscope-trace":
        sys.exit("%s: not a driftscope trace" % a.trace)
    seq = f["seq/%d" % a.seq]
    tokens = seq["tokens"][:].astype(np.int64)
    sites = sorted(k for k in _walk(seq["hidden"]))
    rows = seq["hidden/" + sites[0]].shape[0] if sites else len(tokens) - 1
    cfg_ds = json.loads(f["meta"].attrs["config_json"])
    print(
        "trace %s: dtype %s, device %s, %d tokens (prompt %d), %d rows, %d sites"
        % (
            a.trace,
            cfg_ds.get("dtype"),
            cfg_ds.get("device"),
            len(tokens),
            int(seq.attrs["prompt_len"]),
            rows,
            len(sites),
        )
    )
    if cfg_ds.get("dtype") != a.dtype:
        print("note: the trace is %s, transformers runs %s" % (cfg_ds.get("dtype"), a.dtype))

    key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(a.model, **{key: tdtype, "attn_implementation": a.attn})
    model.to(a.device).eval()
    cfg = model.config
    print(
        "transformers %s, torch %s, %s, %s, attention %s, threads %d; %s: dim %d, %d layers, "
        "heads %d/%d, head_dim %d, hidden %d, vocab %d"
        % (
            transformers.__version__,
            torch.__version__,
            a.device,
            a.dtype,
            a.attn,
            torch.get_num_threads(),
            type(model).__name__,
            cfg.hidden_size,
            cfg.num_hidden_layers,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            Layer(model, 0).hd,
            cfg.intermediate_size,
            cfg.vocab_size,
        )
    )
    if a.device.startswith("cuda"):
        print("GPU: %s" % torch.cuda.get_device_name(0))

    global SEQ32_DEVICE
    SEQ32_DEVICE = a.device
    cap = Capture(model, a.layer)
    ids = torch.tensor(tokens[:rows], device=a.device)[None]
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            out = model(ids, use_cache=False)
    finally:
        cap.close()
    print("forward: %.1f s" % (time.perf_counter() - t0))
    if "rope" not in cap.ops:
        sys.exit(
            "apply_rotary_pos_emb was not called through %s: this transformers version applies "
            "RoPE elsewhere; the per-op table needs it" % cap.mod.__name__
        )
    results = {"per_op": {}, "layer": {}, "sites": {}}
    # transformers 4.x divides the scores by sqrt(head_dim), 5.x multiplies by the scale; torch 1.x
    # rounds a Python scalar to the tensor's 16-bit format first (measured), torch 2.x keeps it float32
    torch1 = int(torch.__version__.split(".")[0]) < 2
    global SILU_STEPS_ROUNDED
    SILU_STEPS_ROUNDED = torch1
    divide_by = None
    if int(transformers.__version__.split(".")[0]) < 5:
        divide_by = math.sqrt(Layer(model, a.layer).hd)
        divide_by = float(rnd(divide_by, r)) if torch1 else divide_by

    # ---- 1. per op of layer a.layer, on transformers' own inputs ----
    ly = Layer(model, a.layer)
    ops = cap.ops
    T = rows
    pos = np.arange(T)
    inv = rope_inv_freq_ds(cfg, ly.hd)
    cos_ds, sin_ds = rope_tables_ds(pos, inv)
    a_exact = pos[:, None] * inv[None, :]
    cos_ex, sin_ex = np.cos(a_exact), np.sin(a_exact)
    rp = ops["rope"]
    half = ly.hd // 2
    cos_tf, sin_tf = rp["cos"][0][:, :half], rp["sin"][0][:, :half]  # transformers' own tables (T, hd/2)
    tables = {"ds": (cos_ds, sin_ds), "tf": (cos_tf, sin_tf), "exact": (cos_ex, sin_ex)}

    DS_SUMS = "seq32" if a.ds_sums == "seq32" else "ds"

    def gemm_fn(x, w_, b_):
        """conv seq32: driftscope's CPU order; ds: float64 sums; exact: unrounded."""
        return lambda c: linear(x, w_, b_, "ds" if c == "seq32" else c, r, "seq32" if c == "seq32" else "fp64")

    def row(name, what, tf_in, tf_out, fn, convs):
        """fn(conv) -> output; convs: ds convention name, tf convention name."""
        ds_o, tf_o, ex_o = fn(convs[0]), fn(convs[1]), fn("exact")
        res = {
            "what": what,
            "ds_vs_tf": stat(tf_out, ds_o),
            "tfemul_vs_tf": stat(tf_out, tf_o),
            "ds_vs_exact": stat(ex_o, ds_o),
            "tf_vs_exact": stat(ex_o, tf_out),
            "ds_vs_tfemul": stat(tf_o, ds_o),
        }
        results["per_op"][name] = res
        print(
            "%-22s %s %s %s %s  %s"
            % (
                name,
                fmt_pair(res["ds_vs_tf"]),
                fmt_pair(res["tfemul_vs_tf"]),
                fmt_pair(res["ds_vs_exact"]),
                fmt_pair(res["tf_vs_exact"]),
                what,
            )
        )

    print(
        "\nPer op of layer %d, each fed transformers' input to it; relative L2 per row (token), "
        "median and max over %d rows" % (a.layer, T)
    )
    print(
        "%-22s %19s %19s %19s %19s  %s"
        % ("op", "ds conv vs tf", "tf emul vs tf", "ds conv vs fp64", "tf vs fp64", "what differs")
    )
    x_in = ops["input_layernorm"]["in"]
    row(
        "input_layernorm",
        "tf: round(w*round(x*inv)); ds: round((x*inv)*w)",
        x_in,
        ops["input_layernorm"]["out"],
        lambda c: rmsnorm(x_in, ly.n1, ly.eps, c, r),
        ("ds", "tf"),
    )
    h = ops["q_proj"]["in"]
    for nm, w_, b_ in (("q_proj", ly.wq, ly.bq), ("k_proj", ly.wk, ly.bk), ("v_proj", ly.wv, ly.bv)):
        row(
            nm,
            "GEMM: one rounding in both; the float32 sums' order differs",
            h,
            ops[nm]["out"],
            gemm_fn(h, w_, b_),
            (DS_SUMS, "ds"),
        )
        if b_ is not None and np.any(b_ != 0):
            row(
                nm + " bias twice",
                "tf emul: round(round(x W) + b)",
                h,
                ops[nm]["out"],
                lambda c, w_=w_, b_=b_: linear(h, w_, b_, c, r),
                ("ds", "tf_bias2"),
            )
    q_in = np.transpose(rp["q"][0], (1, 0, 2))  # (T, H, hd)
    k_in = np.transpose(rp["k"][0], (1, 0, 2))
    q_out = np.transpose(rp["q_out"][0], (1, 0, 2))
    k_out = np.transpose(rp["k_out"][0], (1, 0, 2))

    def rope_fn(x):
        return lambda c: rope(x, *tables[c], c if c != "exact" else "exact", r)

    row(
        "rope q",
        "tf: cos/sin in %s, 3 roundings; ds: fp32 tables, 1" % rp["cos_dtype"].replace("torch.", ""),
        q_in,
        q_out,
        rope_fn(q_in),
        ("ds", "tf"),
    )
    row("rope k", "(as rope q)", k_in, k_out, rope_fn(k_in), ("ds", "tf"))
    # attention: rotated q, k (transformers'), v = v_proj's output
    v_in = ops["v_proj"]["out"].reshape(T, ly.KV, ly.hd)
    att_tf = ops["o_proj"]["in"]
    tf_attn = "tf_eager" if a.attn == "eager" else "flash"

    def att_fn(c):
        return attention(q_out, k_out, v_in, ly.scale, c, r, ly.window, divide_by).reshape(T, -1)

    row(
        "attention",
        "eager: scores rounded, then scaled and rounded"
        if a.attn == "eager"
        else "sdpa emulated as flash: unnormalised exp rounded",
        q_out,
        att_tf,
        att_fn,
        ("ds", tf_attn),
    )
    if a.attn == "sdpa":
        row("attention (eager emul)", "sdpa against the eager convention", q_out, att_tf, att_fn, ("ds", "tf_eager"))
    row("o_proj", "GEMM", att_tf, ops["o_proj"]["out"], gemm_fn(att_tf, ly.wo, None), (DS_SUMS, "ds"))
    resid = ops["post_attention_layernorm"]["in"]
    row(
        "residual add 1",
        "round(a + b) in both",
        resid,
        resid,
        lambda c: add(x_in, ops["o_proj"]["out"], c, r),
        ("ds", "ds"),
    )
    row(
        "post_attention_layernorm",
        "as input_layernorm",
        resid,
        ops["post_attention_layernorm"]["out"],
        lambda c: rmsnorm(resid, ly.n2, ly.eps, c, r),
        ("ds", "tf"),
    )
    h2 = ops["gate_proj"]["in"]
    row("gate_proj", "GEMM", h2, ops["gate_proj"]["out"], gemm_fn(h2, ly.wg, None), (DS_SUMS, "ds"))
    row("up_proj", "GEMM", h2, ops["up_proj"]["out"], gemm_fn(h2, ly.wu, None), (DS_SUMS, "ds"))
    g_tf, u_tf = ops["gate_proj"]["out"], ops["up_proj"]["out"]
    row(
        "act * up (swiglu)",
        "tf: round(round(silu(g))*u); ds: round(silu(g)*u)",
        g_tf,
        ops["down_proj"]["in"],
        lambda c: swiglu(g_tf, u_tf, c, r),
        ("ds", "tf"),
    )
    d_in = ops["down_proj"]["in"]
    row("down_proj", "GEMM", d_in, ops["down_proj"]["out"], gemm_fn(d_in, ly.wd, None), (DS_SUMS, "ds"))
    lay_out = ops["layer"]["out"]
    row(
        "residual add 2",
        "round(a + b) in both",
        lay_out,
        lay_out,
        lambda c: add(resid, ops["down_proj"]["out"], c, r),
        ("ds", "ds"),
    )

    # ---- 2. the layer re-run from transformers' input, conventions switched one op at a time ----
    ds_conv = {"norm": "ds", "bias": "ds", "rope": "ds", "attn": "ds", "swiglu": "ds", "sums": "fp64"}
    tf_conv = {"norm": "tf", "bias": "ds", "rope": "tf", "attn": tf_attn, "swiglu": "tf", "sums": "fp64"}
    show = ["attn_out", "resid_mid", "mlp_out", "out"]
    ref = {"attn_out": ops["o_proj"]["out"], "resid_mid": resid, "mlp_out": ops["down_proj"]["out"], "out": lay_out}
    trace_at = {}
    if a.layer == 0:
        for s in show:
            if "hidden/L0/" + s in seq:
                trace_at[s] = hidden(seq, "L0/" + s)[:T]
    print(
        "\nLayer %d re-run in float64 from transformers' input to it, against what transformers "
        "computed (median / max relative L2 over rows); GEMMs summed in float64 unless named" % a.layer
    )
    print("%-46s" % "conventions" + "".join("%20s" % s for s in show))
    if trace_at:
        print(
            "%-46s" % "the driftscope trace itself"
            + "".join("%20s" % fmt_pair(stat(ref[s], trace_at[s])) if s in trace_at else "%20s" % "-" for s in show)
        )

    def line(label, conv, against=None):
        o = run_layer(ly, x_in, conv, r, tables, divide_by)
        res = {s: stat(ref[s], o[s]) for s in show}
        results["layer"][label] = {s: list(v) for s, v in res.items()}
        print("%-46s" % label + "".join("%20s" % fmt_pair(res[s]) for s in show))
        if against:
            res = {s: stat(against[s], o[s]) for s in show if s in against}
            results["layer"][label + " vs the trace"] = {s: list(v) for s, v in res.items()}
            print(
                "%-46s" % "  the same against the trace"
                + "".join("%20s" % fmt_pair(res[s]) if s in res else "%20s" % "-" for s in show)
            )
        return o

    if a.ds_sums == "seq32":
        line("driftscope's: all ds, float32 sums, norm", dict(ds_conv, sums="seq32", norm="ds32"), trace_at)
    o_ds = line("all ds", ds_conv, trace_at if a.ds_sums != "seq32" else None)
    names = {"norm": "RMSNorm", "rope": "RoPE", "attn": "attention", "swiglu": "SwiGLU"}
    for op in ("norm", "rope", "attn", "swiglu"):
        line("ds, but %s as transformers" % names[op], dict(ds_conv, **{op: tf_conv[op]}))
    line("ds, but RoPE and attention as transformers", dict(ds_conv, rope="tf", attn=tf_attn))
    line("transformers': all tf", tf_conv)
    for op in ("norm", "rope", "attn", "swiglu"):
        line("tf, but %s as driftscope" % names[op], dict(tf_conv, **{op: "ds"}))
    if a.ds_sums == "seq32":
        line("tf, but driftscope's float32 GEMM sums", dict(tf_conv, sums="seq32"))
    exact = {"norm": "exact", "bias": "ds", "rope": "exact", "attn": "exact", "swiglu": "exact", "sums": "fp64"}
    o_ex = run_layer(ly, x_in, exact, None, tables, None)
    res = {s: stat(o_ex[s], ref[s]) for s in show}
    results["layer"]["tf vs fp64"] = {s: list(v) for s, v in res.items()}
    print("%-46s" % "transformers against float64 throughout" + "".join("%20s" % fmt_pair(res[s]) for s in show))
    res = {s: stat(o_ex[s], o_ds[s]) for s in show}
    results["layer"]["all ds vs fp64"] = {s: list(v) for s, v in res.items()}
    print("%-46s" % "all ds against float64 throughout" + "".join("%20s" % fmt_pair(res[s]) for s in show))

    # ---- 2b. the whole stack emulated (--emulate-all): what a transformers-convention mode would give ----
    if a.emulate_all:
        stacks = [
            (
                "driftscope (ds conventions, its sums)",
                dict(
                    ds_conv, sums=DS_SUMS if DS_SUMS == "seq32" else "fp64", norm="ds32" if DS_SUMS == "seq32" else "ds"
                ),
            ),
            ("tf conventions, driftscope's sums", dict(tf_conv, sums=DS_SUMS if DS_SUMS == "seq32" else "fp64")),
            ("tf conventions, float64 sums", tf_conv),
        ]
        xs = {label: cap.sites["embed"][:T] for label, _ in stacks}
        outs = {label: {} for label, _ in stacks}
        t0 = time.perf_counter()
        for l in range(cfg.num_hidden_layers):
            lw = Layer(model, l)  # each layer's weights widened once, for every stack
            for label, conv in stacks:
                xs[label] = run_layer(lw, xs[label], conv, r, tables, divide_by)["out"]
                outs[label]["L%d/out" % l] = xs[label]
            del lw
        fn = to_np(model.model.norm.weight)
        for label, conv in stacks:
            outs[label]["final_norm"] = rmsnorm(xs[label], fn, cfg.rms_norm_eps, conv["norm"], r)
        print(
            "\nThe whole stack emulated from the embedding (%.0f s): median / max relative L2 over rows"
            % (time.perf_counter() - t0)
        )
        head = ["trace vs tf", "ds emul vs trace", "tf conv, ds sums", "tf conv, fp64 sums"]
        print("%-14s" % "site" + "".join("%22s" % h_ for h_ in head))
        print(
            "  (the trace against transformers; driftscope emulated (its conventions and sums) against the trace;\n"
            "   transformers' conventions with driftscope's sums (%s), then with float64 sums, against transformers)"
            % ("float32 in order" if DS_SUMS == "seq32" else "here float64: --ds-sums fp64")
        )
        results["stack"] = {}
        for site in ["L%d/out" % l for l in range(cfg.num_hidden_layers)] + ["final_norm"]:
            tf_s = cap.sites[site][:T]
            cells = [stat(tf_s, hidden(seq, site)[:T]) if site in sites else None]
            for k, (lb, _) in enumerate(stacks):
                refv = (hidden(seq, site)[:T] if site in sites else None) if k == 0 else tf_s
                cells.append(stat(refv, outs[lb][site]) if refv is not None else None)
            results["stack"][site] = [list(c) if c else None for c in cells]
            print("%-14s" % site + "".join("%22s" % (fmt_pair(c) if c else "-") for c in cells))

    # ---- 3. every site of the trace against transformers ----
    print("\nPer site, the trace against transformers (relative L2 per row, median / max over %d rows)" % T)
    order = (
        ["embed"]
        + [
            "L%d/%s" % (l, k)
            for l in range(cfg.num_hidden_layers)
            for k in ("attn_norm", "attn_out", "resid_mid", "mlp_norm", "mlp_out", "out")
        ]
        + ["final_norm"]
    )
    for s in order:
        if s in sites and s in cap.sites:
            d = rel_rows(cap.sites[s][:T], hidden(seq, s)[:T])
            results["sites"][s] = [float(np.median(d)), float(np.max(d))]
            print("%-14s %9.2e %9.2e" % (s, float(np.median(d)), float(np.max(d))))
    choice = out.logits[0].argmax(-1).cpu().numpy()
    prompt_len = int(seq.attrs["prompt_len"])
    gen = np.arange(prompt_len - 1, min(rows, len(tokens) - 1))
    agree = int(np.sum(choice[gen] == tokens[gen + 1]))
    print("greedy choices equal to the trace's tokens: %d of %d generated positions" % (agree, len(gen)))
    results["greedy_agree"] = [agree, int(len(gen))]
    if a.json:
        results["versions"] = {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "device": a.device,
            "dtype": a.dtype,
            "attn": a.attn,
        }
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)


def _walk(g, prefix=""):
    for k, v in g.items():
        if isinstance(v, h5py.Group):
            yield from _walk(v, prefix + k + "/")
        else:
            yield prefix + k


if __name__ == "__main__":
    main()
