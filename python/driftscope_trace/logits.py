"""Top-K and log-sum-exp of logits rows, as trace/topk.cpp computes them: ids sorted by logit,
descending, ties by lower id; log-sum-exp of the whole row in float64."""

import numpy as np


def top_k(logits, k):
    """logits [R, V] -> (ids int32 [R, K], values float64 [R, K]), K = min(k, V)."""
    logits = np.asarray(logits, dtype=np.float64)
    k = min(k, logits.shape[1])
    # a stable sort of the negated logits keeps equal logits in id order: ties by lower id
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return order.astype(np.int32), np.take_along_axis(logits, order, axis=1)


def log_sum_exp(logits):
    """logits [R, V] -> [R] float64; a row whose maximum is not finite gives that maximum."""
    logits = np.asarray(logits, dtype=np.float64)
    m = logits.max(axis=1)
    finite = np.isfinite(m)
    safe = np.where(finite, m, 0.0)
    s = np.exp(logits - safe[:, None]).sum(axis=1)
    return np.where(finite, safe + np.log(s), m)
