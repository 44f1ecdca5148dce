"""The vLLM / SGLang hooks (driftscope_trace.record_flat) where neither engine runs: on a stand-in
of vLLM's model object (vllm_standin.py: its module tree, calling conventions and in-place fused
norm, written from vLLM's sources) carrying the bundled kjv-llama and kjv-qwen2 weights, 4
requests of 7 to 10 tokens served in flattened steps as vLLM's scheduler mixes them: one prefill
split in two chunks, prefills joining while others decode, requests ending at different steps.
The reference is driftscope's own CPU fp32 run of the same prompts (C++, no Python in common with
the hooks; it agrees with transformers to 1.6e-6, test_hf_models.py): per request, identical
greedy tokens, every site (--probes all) and the log-sum-exp of the logits within 1e-5 relative
L2, the same top-1 token at every row, and `driftscope diff` of the two traces finds no
divergence. Then the refusals: a transformers model, token counts that do not fit the pass,
requests listed out of flattened order.

  python tests/engines/test_flat_hooks.py DRIFTSCOPE_EXE WORK_DIR
"""

import json
import os
import subprocess
import sys
import time

import h5py
import numpy as np
import torch

from engines_common import ROOT, check, driftscope, hidden, rel_l2_rows, stack, topk_disagreements

import driftscope_trace
from driftscope_trace.flat_sites import FlatBatchError
from driftscope_trace.hf_sites import LayoutError
from driftscope_trace.schema import all_sites
from vllm_standin import ParallelLMHead, RMSNorm, Runner, load

PROMPTS = os.path.join(ROOT, "models", "kjv-llama", "prompts.txt")
PROMPT_LINES = (2, 0, 10, 5)  # lines of PROMPTS: 7, 3, 7 and 6 words
MAX_NEW = 8
THRESHOLD = 1e-5
# the step at which each request's prompt arrives, and its chunks (None: the rest of the prompt)
PLAN = {0: [(0, None), (1, 3)], 1: [(1, None), (2, None)], 2: [(3, None)]}


def reference(exe, model_dir, work):
    prompts = os.path.join(work, "prompts.txt")
    with open(PROMPTS) as f:
        lines = f.readlines()
    with open(prompts, "w") as f:
        f.writelines(lines[i] for i in PROMPT_LINES)
    out = os.path.join(work, "ref.h5")
    driftscope(
        exe,
        "run",
        "-m",
        model_dir,
        "--prompts",
        prompts,
        "-n",
        str(MAX_NEW),
        "--probes",
        "all",
        "-q",
        "--force",
        "-o",
        out,
    )
    with h5py.File(out, "r") as f:
        return out, [
            f["seq/%d/tokens" % i][: int(f["seq/%d" % i].attrs["prompt_len"])].tolist()
            for i in range(len(PROMPT_LINES))
        ]


def serve(model, prompts, eos, rec):
    """vLLM's scheduling of the requests (running requests' decodes first, then prefill chunks),
    each step reported to rec. Returns the steps' sizes."""
    runner, fed, done, sizes = Runner(model), {}, set(), []
    gen = {r: [] for r in range(len(prompts))}
    step = 0
    while len(done) < len(prompts):
        sched = [(r, gen[r][-1:]) for r in sorted(gen) if gen[r] and r not in done]
        for r, chunk in PLAN.get(step, []):
            if r not in fed:
                rec.add_request(r, prompts[r])
            a = fed.get(r, 0)
            sched.append((r, prompts[r][a : a + chunk if chunk else None]))
        for r, new in sched:
            fed[r] = fed.get(r, 0) + len(new)
        logits, best = runner.step(sched)
        tokens = [best[i] if fed[r] >= len(prompts[r]) else None for i, (r, _) in enumerate(sched)]
        rec.step([(r, len(new)) for r, new in sched], logits, tokens)
        for (r, _), t in zip(sched, tokens):
            if t is not None:
                gen[r].append(t)
                if t == eos or len(gen[r]) == MAX_NEW:
                    done.add(r)
                    rec.end_request(r, "eos" if t == eos else "max_new")
        sizes.append([len(new) for _, new in sched])
        step += 1
    return sizes


def compare(ref, flat, n):
    """(token mismatches, {site kind: max relative L2}, max relative lse error, top-1
    mismatches)."""
    a, b = h5py.File(ref, "r"), h5py.File(flat, "r")
    tokens, worst, lse, top1 = [], {}, 0.0, 0
    layers = json.loads(a["meta"].attrs["model_json"])["config"]["n_layers"]
    for i in range(n):
        sa, sb = a["seq/%d" % i], b["seq/%d" % i]
        if not np.array_equal(sa["tokens"][:], sb["tokens"][:]) or sa.attrs["stop_reason"] != sb.attrs["stop_reason"]:
            tokens.append(i)
            continue
        for site in all_sites(layers):
            kind = site.split("/")[-1]
            err = rel_l2_rows(hidden(sa, site), hidden(sb, site)).max()
            worst[kind] = max(worst.get(kind, 0.0), float(err))
        la, lb = sa["logits/lse"][:].astype(np.float64), sb["logits/lse"][:].astype(np.float64)
        lse = max(lse, float(np.max(np.abs(la - lb) / np.abs(la))))
        top1 += int(np.sum(sa["logits/topk_ids"][:, 0] != sb["logits/topk_ids"][:, 0]))
    a.close()
    b.close()
    return tokens, worst, lse, top1


def one_model(exe, name, work):
    ok = True
    model_dir = os.path.join(ROOT, "models", name)
    os.makedirs(work, exist_ok=True)
    ref, prompts = reference(exe, model_dir, work)
    model = load(model_dir)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    flat = os.path.join(work, "flat.h5")
    t0 = time.perf_counter()
    sampling = {"temperature": 0.0, "max_new": MAX_NEW}
    with driftscope_trace.record_flat(
        model, flat, engine="vllm-standin", tokenizer=tok, probes="all", force=True, sampling=sampling
    ) as rec:
        sizes = serve(model, prompts, model.config.eos_token_id, rec)
    took = time.perf_counter() - t0
    tokens, worst, lse, top1 = compare(ref, flat, len(prompts))
    ok &= check(
        not tokens and top1 == 0,
        "%s: stand-in under record_flat against driftscope "
        "fp32: identical greedy tokens and stop reasons on %d requests (mismatches %s), "
        "top-1 of every row (%d differ); steps' token counts %s (%.1f s)"
        % (name, len(prompts), tokens, top1, sizes, took),
    )
    ok &= check(
        worst and max(worst.values()) <= THRESHOLD and lse <= THRESHOLD,
        "%s: every site of every row within %.0e relative L2: %s; log-sum-exp %.1e"
        % (name, THRESHOLD, " ".join("%s %.1e" % kv for kv in sorted(worst.items())), lse),
    )
    with h5py.File(flat, "r") as f:
        cfg = json.loads(f["meta"].attrs["config_json"])
        mj = json.loads(f["meta"].attrs["model_json"])
    ok &= check(
        cfg["engine"]["name"] == "vllm-standin"
        and cfg["engine"]["chunked_prefill"]
        and cfg["batch"] == sorted(set(len(s) for s in sizes))
        and mj["architecture"] == name[4:],
        "%s: config_json names the engine, chunked prefill, the step sizes %s; "
        "model_json %s" % (name, cfg["batch"], mj["architecture"]),
    )
    p = subprocess.run([exe, "show", flat], capture_output=True, text=True)
    d = subprocess.run([exe, "diff", ref, flat], capture_output=True, text=True)
    summary = next((l for l in d.stdout.splitlines() if l.startswith("summary")), d.stderr.strip())
    ok &= check(
        p.returncode == 0 and d.returncode == 0 and " 0 diverged" in summary,
        "%s: driftscope show reads the trace; diff against driftscope's: %s" % (name, summary.strip()),
    )
    return ok


def refusals(work):
    ok = True
    model_dir = os.path.join(ROOT, "models", "kjv-llama")
    x, r = torch.ones(2, 4), torch.ones(2, 4)
    out = RMSNorm(4, 1e-5)(x, r)
    ok &= check(
        out[0] is x and out[1] is r and float(r[0, 0]) == 2.0,
        "the stand-in's fused norm writes its inputs in place (vLLM's fused_add_rms_norm)",
    )
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(model_dir)
    path = os.path.join(work, "refused.h5")
    if os.path.exists(path):
        os.remove(path)
    try:
        driftscope_trace.record_flat(hf, path, engine="vllm")
        ok &= check(False, "a transformers model is refused by record_flat")
    except LayoutError as e:
        ok &= check(
            "not a vLLM or SGLang model" in str(e) and not os.path.exists(path),
            "a transformers model is refused, nothing written: %s" % e,
        )
    model = load(model_dir)
    c = model.config
    shard = load(model_dir)
    shard.lm_head = ParallelLMHead(c.vocab_size // 2, c.hidden_size)  # tensor parallel, 2 ranks
    try:
        driftscope_trace.record_flat(shard, path, engine="vllm")
        ok &= check(False, "one rank's half of lm_head is refused")
    except LayoutError as e:
        ok &= check(not os.path.exists(path), "one rank's half of lm_head is refused: %s" % e)
    for what, counts in (
        ("token counts that do not sum to the pass's rows", [(0, 3), (1, 3)]),
        ("requests listed out of flattened order", [(1, 2), (0, 3)]),
    ):
        try:
            with driftscope_trace.record_flat(model, path, engine="vllm", force=True) as rec:
                rec.add_request(0, [1, 5, 6])
                rec.add_request(1, [1, 7])
                logits, best = Runner(model).step([(0, [1, 5, 6]), (1, [1, 7])])
                rec.step(counts, logits, best)
            ok &= check(False, "%s are refused" % what)
        except FlatBatchError as e:
            ok &= check(True, "%s are refused: %s" % (what, e))
    return ok


def every_row(work):
    """The logits of every row (a prompt-logprobs run) against one row per request, whose other
    prompt rows record_flat computes from lm_head's weight: the same top-K and log-sum-exp within
    1e-5. Not bit for bit: the two are GEMMs of other shapes, whose summation order torch's BLAS
    chooses by the host's instruction set (test_batch_api.py); near-ties within 1e-5 may rank
    either way."""
    model = load(os.path.join(ROOT, "models", "kjv-llama"))
    prompts = {0: [1, 5, 6, 7], 1: [1, 9]}
    paths = [os.path.join(work, "rows_%d.h5" % k) for k in (0, 1)]
    for path, all_rows in zip(paths, (False, True)):
        runner = Runner(model)
        with driftscope_trace.record_flat(model, path, engine="vllm", force=True) as rec:
            sched = list(prompts.items())
            for r, p in sched:
                rec.add_request(r, p)
            for _ in range(3):
                logits, best = runner.step(sched, every_row=all_rows)
                rec.step([(r, len(new)) for r, new in sched], logits, best)
                sched = [(r, [t]) for (r, _), t in zip(sched, best)]
    with h5py.File(paths[0], "r") as a, h5py.File(paths[1], "r") as b:
        got = lambda f, i, what: f["seq/%d/logits/%s" % (i, what)][:]
        bad = {
            i: topk_disagreements(
                got(a, i, "topk_ids"), got(a, i, "topk_logits"), got(b, i, "topk_ids"), got(b, i, "topk_logits"), 1e-5
            )
            for i in prompts
        }
        same_ids = all(np.array_equal(got(a, i, "topk_ids"), got(b, i, "topk_ids")) for i in prompts)
        lse = max(float(np.max(np.abs(got(a, i, "lse") - got(b, i, "lse")))) for i in prompts)
    return check(
        not any(bad.values()) and lse <= 1e-5,
        "logits of every row (prompt logprobs) against one per "
        "request and lm_head's weight: top-K within 1e-5 (rows beyond: %s; ids %s), log-sum-exp within "
        "%.1e" % (bad, "identical" if same_ids else "ordered otherwise at a near-tie", lse),
    )


def main(exe, work):
    ok = True
    torch.set_num_threads(1)
    for name in ("kjv-llama", "kjv-qwen2"):
        ok &= one_model(exe, name, os.path.join(work, name))
    ok &= every_row(work)
    ok &= refusals(work)
    print("(%s)" % stack())
    return ok


if __name__ == "__main__":
    t0 = time.perf_counter()
    ok = main(sys.argv[1], sys.argv[2])
    print("%.1f s" % (time.perf_counter() - t0))
    sys.exit(0 if ok else 1)
