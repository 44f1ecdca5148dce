"""The recorder's generation loop over a transformers model, batched as transformers' generate()
batches: the prompts of a batch left-padded to one length, an attention mask that is 0 on the
padding, position ids counted from the first real token of each row, one prefill pass, then one
decode pass per step for every row of the batch with the model's KV cache. A row that has stopped
(EOS, the context) is fed a padding token until the whole batch stops, as generate() does, and its
rows are no longer recorded. Each row's next token is chosen as driftscope chooses it (sampler.py);
its rows (the positions of its own tokens only) go to the trace as one sequence."""

import torch

from .sampler import sample_next


class _Row:
    def __init__(self, index, prompt, forced):
        self.index, self.tokens, self.forced = index, list(prompt), forced
        self.new_rows = len(prompt)  # rows of this row's own tokens in the next pass
        self.generated = 0
        self.reason = None


def _choose(row, logits, a):
    if row.forced is not None:
        return int(row.forced[row.generated])
    return sample_next(
        logits[-1],
        a.temperature,
        a.top_p,
        a.top_k,
        a.seed,
        a.tie_break == "highest_id",
        a.repetition_penalty,
        row.index,
        row.generated,
        row.tokens,
    )


def _record_row(row, taken, b, w, sites, a, eos, ctx):
    """Writes row b's new positions of the last pass and chooses its next token; returns the stop
    reason, or None while the row goes on."""
    n = row.new_rows
    # float32 as stored: exact for fp32/bf16/fp16 runs, round-to-nearest of an fp64 run
    hidden = {s: taken[s][b, -n:].float().cpu().numpy() for s in sites}
    logits = taken["logits"][b, -n:].double().cpu().numpy()
    forced = row.forced
    if (forced is not None and len(forced) == 0) or (forced is None and a.max_new == 0):
        w.append(row.index, hidden, logits, [])
        return "max_new"
    nxt = _choose(row, logits, a)
    row.tokens.append(nxt)
    row.generated += 1
    row.new_rows = 1
    w.append(row.index, hidden, logits, [nxt])
    if eos is not None and nxt == eos:
        return "eos"
    if forced is not None and row.generated == len(forced):
        return "forced"
    if forced is None and row.generated == a.max_new:
        return "max_new"
    if len(row.tokens) >= ctx:
        return "context"
    return None


def left_padded(prompts, pad_id, device):
    """(input_ids [B, L], attention_mask [B, L], position_ids [B, L]) of prompts left-padded to the
    longest, as a tokenizer with padding_side='left' and generate() make them."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[b, width - len(p) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


def generate_batch(model, hooks, w, group, sites, a, eos, ctx, stop, pad_id):
    """group: [(sequence index, prompt ids, forced continuation or None)]. Every sequence is begun,
    written and ended in the trace; returns True when stopped by a signal."""
    device = next(model.parameters()).device
    rows = [_Row(i, p, f) for i, p, f in group]
    for r in rows:
        w.begin_sequence(r.index, r.tokens)
    feed, mask, positions = left_padded([r.tokens for r in rows], pad_id, device)
    from transformers import DynamicCache

    past = DynamicCache()
    while True:
        if stop["flag"]:
            for r in rows:
                if r.reason is None:
                    w.end_sequence(r.index, "interrupted")
            return True
        hooks.clear()
        with torch.no_grad():
            out = model(
                input_ids=feed, attention_mask=mask, position_ids=positions, past_key_values=past, use_cache=True
            )
        past = out.past_key_values
        nxt = []
        for b, r in enumerate(rows):
            if r.reason is None:
                r.reason = _record_row(r, hooks.taken, b, w, sites, a, eos, ctx)
                if r.reason is not None:
                    w.end_sequence(r.index, r.reason)
            nxt.append(r.tokens[-1] if r.reason is None else pad_id)
        if all(r.reason is not None for r in rows):
            return False
        feed = torch.tensor([[t] for t in nxt], dtype=torch.long, device=device)
        mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype, device=device)], dim=1)
        positions = positions[:, -1:] + 1
