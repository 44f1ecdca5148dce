"""Choosing the next token exactly as driftscope does (src/experiment/sampler.cpp): greedy with ties to
the lowest (or highest) id, or seeded sampling whose uniform number is a pure function of
(seed, prompt index, step), so a recorder run and a driftscope run with the same seed share the
same noise (coupled sampling)."""

import math
import re

import numpy as np

_MASK = (1 << 64) - 1
SEED_MAX = _MASK


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def sampling_uniform(seed, stream, step):
    h = _splitmix64(_splitmix64(_splitmix64(seed & _MASK) ^ stream) ^ step)
    return (h >> 11) * 2.0**-53


def argmax(logits, highest_id=False):
    row = np.asarray(logits, dtype=np.float64)
    if highest_id:
        return int(len(row) - 1 - np.argmax(row[::-1]))
    return int(np.argmax(row))


def sample_next(
    raw,
    temperature=0.0,
    top_p=1.0,
    top_k=0,
    seed=0,
    highest_id_ties=False,
    repetition_penalty=1.0,
    stream=0,
    step=0,
    history=(),
):
    logits = np.array(raw, dtype=np.float64)
    if repetition_penalty != 1.0 and len(history):
        for i in set(int(t) for t in history if 0 <= int(t) < len(logits)):
            logits[i] = logits[i] / repetition_penalty if logits[i] > 0 else logits[i] * repetition_penalty
    if temperature == 0.0:
        return argmax(logits, highest_id_ties)
    order = np.argsort(-logits, kind="stable")
    keep = min(top_k, len(logits)) if top_k > 0 else len(logits)
    m = logits[order[0]]
    p = [math.exp((logits[order[i]] - m) / temperature) for i in range(keep)]
    total = _sum(p)
    if top_p < 1.0:
        mass, n = 0.0, 0
        while n < keep:
            mass += p[n]
            n += 1
            if mass >= top_p * total:
                break
        keep, total = n, mass
    target = sampling_uniform(seed, stream, step) * total
    cum = 0.0
    for i in range(keep):
        cum += p[i]
        if target < cum:
            return int(order[i])
    return int(order[keep - 1])


def _sum(values):
    """Left-to-right double sum, the order of the C++ loop."""
    s = 0.0
    for v in values:
        s += v
    return s


def validate(temperature, top_p, top_k, repetition_penalty):
    if not (temperature >= 0 and math.isfinite(temperature)):
        raise ValueError(
            "temperature %s is invalid: --temperature takes a finite value >= 0 (0 = greedy)" % temperature
        )
    if not (0 < top_p <= 1):
        raise ValueError("top_p %s is outside (0, 1]: --top-p takes 0 < p <= 1" % top_p)
    if top_k < 0:
        raise ValueError("top_k %s is negative: --top-k takes >= 0" % top_k)
    if not repetition_penalty > 0:
        raise ValueError(
            "repetition_penalty %s is invalid: --repetition-penalty takes a value > 0 (1 = off)" % repetition_penalty
        )


def parse_seed(text):
    """--seed as driftscope reads it (src/experiment/run_config.cpp, parse_seed): decimal digits
    for a whole number in 0..2^64 - 1. A negative seed is refused, not wrapped (-1 would be
    2^64 - 1), a larger one refused, not clamped, and "+5", "1_000" or "1.5" are not numbers."""
    digits = text[1:] if text.startswith("-") else text
    if not re.fullmatch(r"[0-9]+", digits):
        raise ValueError("invalid seed '%s': not a number: a seed is a whole number from 0 to %d" % (text, SEED_MAX))
    if text.startswith("-") or len(digits.lstrip("0")) > 20 or int(digits) > SEED_MAX:
        raise ValueError(
            "seed %s is outside 0..%d: a seed is a whole number; a negative one is not wrapped, "
            "a larger one not clamped" % (text, SEED_MAX)
        )
    return int(digits)
