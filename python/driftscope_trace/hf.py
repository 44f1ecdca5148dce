"""Record a driftscope trace (format v1) from a Hugging Face transformers causal LM.

  driftscope-trace run --model DIR (--prompt TEXT | --prompt-ids 1,2,3 | --prompts FILE)
      -o t.h5 [--probes default|all|none|LIST] [--trace-topk 20] [--hidden-dtype f32] [--full-logits]
      [--dtype fp32|fp64|bf16|fp16] [--device cpu|cuda] [--attn-implementation eager|sdpa]
      [--batch N] [--threads N]
      [-n 256] [--temperature 0 --top-p 1 --top-k 0 --seed 0] [--force-tokens A.h5] [--force]
  (also: python3 -m driftscope_trace.hf run ...)

Flags are named as in `driftscope run`. The prompts are generated --batch at a time (left padding
and an attention mask, as transformers' generate() batches them): one prefill pass, then one
decode pass per token with the model's KV cache, the next token chosen as driftscope chooses it
(greedy with ties to the lowest id, or coupled seeded sampling). Forward hooks map modules to driftscope's
sites (driftscope_trace/hf_sites.py). Exit codes as driftscope's: 2 for bad input, 130 when
interrupted (the trace is kept with complete=0).
"""

import argparse
import json
import os
import shlex
import signal
import sys

import numpy as np

from . import schema, writer
from .identity import env_json, model_json, tokenizer_identity
from .deps import require
from .prompt_args import UsageError, add_common_flags, check_flags, check_topk, select_prompts
from .prompts import PromptError
from .sampler import validate as validate_sampling

DTYPES = ("fp32", "fp64", "bf16", "fp16")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="driftscope-trace", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="record a trace")
    r.add_argument("-m", "--model", required=True, help="Hugging Face model directory")
    r.add_argument("--tokenizer", help="tokenizer directory (default: the model directory)")
    add_common_flags(r)
    r.add_argument("--device", default="cpu")
    r.add_argument("--dtype", default="fp32", choices=DTYPES)
    r.add_argument("--attn-implementation", default="eager", help="eager, sdpa, flash_attention_2")
    r.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    r.add_argument(
        "--batch",
        type=int,
        default=1,
        help="prompts generated together, left-padded with an attention mask (default 1)",
    )
    return ap.parse_args(argv)


def load_tokenizer(path):
    """transformers' fast tokenizer (the Rust `tokenizers` library) of a directory, its
    tokenizer.json path; (None, None) when the directory has no tokenizer.json."""
    if path is None:
        return None, None
    tj = path if path.endswith(".json") else os.path.join(path, "tokenizer.json")
    if not os.path.exists(tj):
        return None, None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(tj)))
    return tok, tj


def run_config(a, engine):
    """The run configuration recorded in /meta config_json: the fields of docs/configurations.md
    that hold for a transformers run (no chunked prefill, no tensor parallelism), the engine
    (with its batch shape, thread count and library versions), and the trace options. Knobs of
    driftscope's own kernels (gemm_policy, split_k, accum, attn_splits, allreduce, kernel) are not
    recorded: transformers has no such choice."""
    return json.dumps(
        {
            "device": "cuda" if a.device.startswith("cuda") else a.device,
            "dtype": a.dtype,
            "batch": a.batch,
            "tp": 1,
            "prefill_chunk": 0,
            "prefix_cache": "off",
            "tie_break": a.tie_break,
            "add_bos": a.add_bos,
            "repetition_penalty": a.repetition_penalty,
            "max_new": a.max_new,
            "temperature": a.temperature,
            "top_p": a.top_p,
            "top_k": a.top_k,
            "seed": a.seed,
            "cuda_graphs": "off",
            "tf32": engine.pop("_tf32"),
            "engine": engine,
            "trace": schema.trace_block(a.probes, a.hidden_dtype, a.topk, a.full_logits, a.compression, a.force_tokens),
        }
    )


def pad_token(tok, cfg, eos):
    """The id a batch is padded with: the tokenizer's pad token, else the model's, else EOS, else
    0, as generate() falls back to EOS (padded positions are masked: the id does not matter)."""
    for v in (tok.pad_token_id if tok is not None else None, getattr(cfg, "pad_token_id", None), eos):
        if isinstance(v, int):
            return v
    return 0


def load_model(a):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from .hf_compat import engine_block, from_pretrained_kwargs
    from .hf_sites import FAMILIES, LayoutError

    if not os.path.isfile(os.path.join(a.model, "config.json")):
        raise UsageError("'%s' is not a Hugging Face model directory (no config.json)" % a.model)
    cfg = AutoConfig.from_pretrained(a.model)
    archs = getattr(cfg, "architectures", None) or []
    if not any(x in FAMILIES for x in archs):
        raise LayoutError(
            "model '%s' is %s (model_type '%s'): not a family driftscope loads; the "
            "recorder maps %s"
            % (a.model, ", ".join(archs) or "of no architecture", cfg.model_type, ", ".join(sorted(FAMILIES)))
        )
    dtype = {"fp32": torch.float32, "fp64": torch.float64, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    check_matmul(torch, dtype, a)
    if a.quiet:  # transformers 5 draws a progress bar while loading weights
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    model = AutoModelForCausalLM.from_pretrained(a.model, **from_pretrained_kwargs(dtype, a.attn_implementation))
    model.to(device=a.device, dtype=dtype).eval()
    engine = engine_block(model, a.device)
    engine["_tf32"] = "on" if torch.backends.cuda.matmul.allow_tf32 and a.device.startswith("cuda") else "off"
    return model, engine


def check_matmul(torch, dtype, a):
    """A UsageError when this torch cannot multiply matrices of dtype on the device (torch 1.13
    has no fp16 matmul on the CPU), before the model is loaded."""
    try:
        x = torch.ones(1, 2, dtype=dtype, device=a.device)
        torch.nn.functional.linear(x, torch.ones(2, 2, dtype=dtype, device=a.device))
    except RuntimeError as e:
        raise UsageError(
            "torch %s cannot compute in %s on %s (%s): choose another --dtype, or "
            "another torch (pip install 'driftscope-trace[transformers]' gets today's)"
            % (torch.__version__, a.dtype, a.device, str(e).splitlines()[0])
        )


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        check_flags(a)  # before transformers and torch load: a bad flag is refused at once
        require("transformers")
        return record(a)
    except (UsageError, PromptError, schema.ProbeError, ValueError, OSError) as e:
        print("driftscope_trace: %s" % e, file=sys.stderr)
        return 2


def record(a):
    import torch

    from .hf_generate import generate_batch
    from .hf_sites import SiteHooks, site_table

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.batch < 1:
        raise UsageError("batch %d: --batch takes N >= 1" % a.batch)
    validate_sampling(a.temperature, a.top_p, a.top_k, a.repetition_penalty)
    if a.max_new < 0:
        raise UsageError("max_new %d is negative: --max-new takes N >= 0" % a.max_new)
    if os.path.exists(a.output) and not a.force:
        raise UsageError(
            "trace '%s' already exists; pass --force to overwrite it, or choose another -o path" % a.output
        )
    model, engine = load_model(a)
    site_table(model)  # the layout is checked before anything is written
    cfg = model.config
    n_layers, vocab = cfg.num_hidden_layers, cfg.vocab_size
    check_topk(a, vocab)
    sites = schema.resolve_probes(a.probes, n_layers)
    tok, tok_json = load_tokenizer(a.tokenizer or a.model)
    encode = (lambda text: tok(text, add_special_tokens=True)["input_ids"]) if tok is not None else None
    bos = tok.bos_token_id if tok is not None and tok.bos_token_id is not None else cfg.bos_token_id
    eos = tok.eos_token_id if tok is not None and tok.eos_token_id is not None else cfg.eos_token_id
    if isinstance(eos, list):
        eos = eos[0]
    pad = pad_token(tok, cfg, eos)
    prompts = select_prompts(
        a,
        encode,
        bos,
        vocab,
        cfg.max_position_embeddings,
        "'%s' has no tokenizer.json (pass --tokenizer or --prompt-ids)" % a.model,
    )
    ctx = cfg.max_position_embeddings

    from .hf_sites import family_of

    mjson = model_json(os.path.abspath(a.model), cfg, family_of(model), tokenizer_identity(tok_json, tok, vocab))
    import transformers

    env = env_json(
        {
            "driftscope_trace_version": schema.PACKAGE_VERSION,
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "numpy_version": np.__version__,
            "cuda": torch.cuda.get_device_name(0) if a.device.startswith("cuda") else None,
        }
    )
    cmd = " ".join(shlex.quote(x) for x in [os.path.basename(sys.argv[0])] + sys.argv[1:])
    producer = "driftscope_trace %s (transformers %s, torch %s)" % (
        schema.PACKAGE_VERSION,
        engine["version"],
        engine["torch"],
    )
    config_json = run_config(a, engine)

    stop = {"flag": False}

    def on_signal(signum, frame):
        stop["flag"] = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    hooks = SiteHooks(model, sites)
    n_gen = n_seq = 0
    interrupted = False
    try:
        with writer.TraceWriter(
            a.output,
            hidden_dtype=a.hidden_dtype,
            topk=a.topk,
            full_logits=a.full_logits,
            force=a.force,
            config_json=config_json,
            model_json=mjson,
            env_json=env,
            command_line=cmd,
            producer=producer,
            compression=a.compression,
        ) as w:
            for first in range(0, len(prompts), a.batch):
                if stop["flag"]:
                    interrupted = True
                    break
                group = [(i, ids, forced) for i, (_, ids, forced) in enumerate(prompts[first : first + a.batch], first)]
                interrupted = generate_batch(model, hooks, w, group, sites, a, eos, ctx, stop, pad)
                n_gen += sum(w._seqs[i].n_tokens - len(ids) for i, ids, _ in group)
                n_seq += len(group)
                if interrupted:
                    break
            w.finish(not interrupted, "interrupted" if interrupted else "finished")
    finally:
        hooks.remove()
        for s, h in old.items():
            signal.signal(s, h)
    if not a.quiet:
        print(
            "driftscope_trace: wrote %s (%d of %d sequences, %d generated tokens, %d hidden sites)"
            % (a.output, n_seq, len(prompts), n_gen, len(sites)),
            file=sys.stderr,
        )
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
