"""Training one family: a transformers model made from its config, trained on random windows of
the tokenized corpus with AdamW and a cosine schedule, deterministically (fixed seed, fixed thread
count, deterministic algorithms). Progress goes to stderr every 10 steps."""

import math
import sys
import time

import torch
import torch.nn.functional as F

from .families import BATCH, COMMON, SEED, WINDOW

LR_MAX, LR_MIN, WARMUP = 3e-3, 3e-4, 20


def token_stream(tok, docs, bos, eos):
    """The corpus as one id sequence: each document as [BOS] ids EOS."""
    ids = []
    for enc in tok.encode_batch(docs, add_special_tokens=False):
        ids += ([bos] if bos is not None else []) + enc.ids + [eos]
    return torch.tensor(ids, dtype=torch.long)


def make_model(family, vocab_size, bos, eos):
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        family["model_type"], vocab_size=vocab_size, bos_token_id=bos, eos_token_id=eos, **COMMON, **family["config"]
    )
    torch.manual_seed(SEED)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager")


def lr_at(step, steps):
    if step < WARMUP:
        return LR_MAX * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, steps - WARMUP)
    return LR_MIN + 0.5 * (LR_MAX - LR_MIN) * (1 + math.cos(math.pi * t))


def train(model, stream, steps, name):
    """Trains in place; returns the mean loss of the last 20 steps."""
    g = torch.Generator().manual_seed(SEED)
    opt = torch.optim.AdamW(model.parameters(), lr=LR_MAX, betas=(0.9, 0.95), weight_decay=0.1)
    model.train()
    losses, start = [], time.time()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps)
        at = torch.randint(0, len(stream) - WINDOW - 1, (BATCH,), generator=g)
        batch = torch.stack([stream[i : i + WINDOW + 1] for i in at.tolist()])
        logits = model(input_ids=batch[:, :-1]).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if (step + 1) % 10 == 0 or step + 1 == steps:
            spent = time.time() - start
            left = spent / (step + 1) * (steps - step - 1)
            print(
                "%s: step %d/%d  loss %.3f  (%.0f s, about %.0f s left)"
                % (name, step + 1, steps, sum(losses[-10:]) / len(losses[-10:]), spent, left),
                file=sys.stderr,
                flush=True,
            )
    model.eval()
    return sum(losses[-20:]) / len(losses[-20:])


@torch.no_grad()
def greedy(model, ids, n, eos):
    """n greedy tokens after ids (the whole sequence recomputed each step: the models are tiny)."""
    ids = list(ids)
    out = []
    for _ in range(n):
        nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        if nxt == eos:
            break
        ids.append(nxt)
        out.append(nxt)
    return out
