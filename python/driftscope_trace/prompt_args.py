"""The flags both recorders share, named and checked as `driftscope run` names and checks them, and
the prompts of a run from them: --force-tokens (a trace's prompts and tokens), --prompts FILE,
--prompt-ids, --prompt TEXT, or BOS alone; --add-bos applied; every id checked against the
vocabulary and every prompt against the context. Shared by the transformers and llama.cpp
recorders; tests/data/bad_inputs/run.json holds both to driftscope's refusals."""

import h5py

from . import schema, writer
from .prompts import parse_ids, read_prompts_file, read_prompts_text
from .sampler import parse_seed

DEFAULT_TOPK = 20


class UsageError(ValueError):
    pass


def add_common_flags(p):
    """The flags both recorders take as `driftscope run` names them: the prompts, the trace's
    contents and storage, the output, and the choice of the next token."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("-p", "--prompt", help="prompt text (BOS as the tokenizer's config says)")
    g.add_argument("--prompt-ids", help="prompt as token ids, e.g. 1,403,407 (used as given)")
    g.add_argument(
        "--prompts", help='file of prompts: one per line, or JSONL {"text"}/{"ids"}, {"ids", "forced"} teacher-forced'
    )
    g.add_argument("--force-tokens", help="teacher forcing: consume this trace's prompts and tokens")
    p.add_argument("--probes", default="default", help="default, all, none, or a list like embed,L*/out")
    p.add_argument("--hidden-dtype", default="f32", choices=writer.HIDDEN_DTYPES)
    p.add_argument(
        "--trace-topk",
        dest="topk",
        type=int,
        default=None,
        help="logits kept per position (sorted, with log-sum-exp), at most the model's "
        "vocabulary (default %d, cut to the vocabulary), as driftscope run's" % DEFAULT_TOPK,
    )
    p.add_argument("--full-logits", action="store_true")
    p.add_argument(
        "--compression",
        default="none",
        choices=writer.COMPRESSIONS,
        help="none (default, as driftscope's: cheapest to write and to diff) or deflate "
        "(shuffle + gzip level 1: smaller when generation is fast)",
    )
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--force", action="store_true", help="overwrite an existing trace file")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("-n", "--max-new", type=int, default=256)
    p.add_argument("--add-bos", default="auto", choices=("auto", "on", "off"))
    p.add_argument("--tie-break", default="lowest_id", choices=("lowest_id", "highest_id"))
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--seed", default="0", help="0 .. 2^64 - 1 (parsed by check_flags)")


def check_flags(a):
    """The checks of the shared flags that need no model, as driftscope makes them before it loads
    one: the seed parsed (a.seed becomes the number), --trace-topk >= 1, and a --prompts file read
    for what refuses it whatever the tokenizer (a NUL byte, its size). Raises UsageError or
    ValueError with one line: the message, then the hint."""
    a.seed = parse_seed(a.seed)
    if a.topk is not None and a.topk < 1:
        raise UsageError("trace-topk %d must be >= 1: --trace-topk takes N >= 1" % a.topk)
    if a.prompts:
        read_prompts_text(a.prompts)


def check_topk(a, vocab):
    """--trace-topk against the model's vocabulary, as driftscope run: given above it, refused (the
    trace would store vocab columns and say it stored more); left out, the default cut to it.
    Sets a.topk to what the trace stores and config_json records."""
    if a.topk is None:
        a.topk = min(DEFAULT_TOPK, vocab)
    elif a.topk > vocab:
        raise UsageError(
            "--trace-topk %d is more than the model's %d tokens: --trace-topk takes 1..%d; "
            "--full-logits keeps every logit" % (a.topk, vocab, vocab)
        )


def forced_prompts(path):
    """[(None, prompt ids, forced continuation)] of every sequence of a trace, in index order."""
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != schema.FORMAT_NAME:
            raise UsageError("'%s' is not a driftscope trace (--force-tokens)" % path)
        out = []
        for k in sorted(f[schema.SEQ_GROUP].keys(), key=int):
            s = f[schema.sequence_path(int(k))]
            t = s[schema.TOKENS_DATASET][:].tolist()
            n = int(s.attrs["prompt_len"])
            out.append((None, t[:n], t[n:]))
    return out


def apply_add_bos(prompts, policy, bos):
    if policy == "auto":
        return prompts
    if bos is None:
        if policy == "off":
            return prompts
        raise UsageError("add_bos on: the model and tokenizer declare no BOS token (use --add-bos auto or off)")
    out = []
    for text, ids, forced in prompts:
        has = bool(ids) and ids[0] == bos
        if policy == "on" and not has:
            ids = [bos] + ids
        if policy == "off" and has:
            ids = ids[1:]
        if not ids:
            raise UsageError("add_bos off leaves an empty prompt (it held only BOS)")
        out.append((text, ids, forced))
    return out


def select_prompts(a, encode, bos, vocab, ctx, no_tokenizer):
    """[(text or None, prompt ids, forced continuation or None)]; encode(text) -> ids or None;
    no_tokenizer: why a text prompt cannot be encoded, for the message."""
    if a.force_tokens:
        prompts = forced_prompts(a.force_tokens)
    elif a.prompts:
        prompts = read_prompts_file(a.prompts, encode)
    elif a.prompt_ids:
        prompts = [(None, parse_ids(a.prompt_ids), None)]
    elif a.prompt is not None:
        if encode is None:
            raise UsageError("a text prompt needs a tokenizer: " + no_tokenizer)
        prompts = [(a.prompt, encode(a.prompt), None)]
    else:
        if bos is None:
            raise UsageError("no prompt given and the model declares no BOS token")
        prompts = [(None, [bos], None)]
    prompts = apply_add_bos(prompts, a.add_bos, bos)
    for i, (_, ids, forced) in enumerate(prompts):
        bad = [t for t in ids + (forced or []) if not 0 <= t < vocab]
        if bad:
            raise UsageError("prompt %d holds token id %d, outside the vocabulary of %d" % (i, bad[0], vocab))
        if len(ids) > ctx:
            raise UsageError("prompt %d has %d tokens, more than the context of %d positions" % (i, len(ids), ctx))
    return prompts
