"""driftscope's sites on the Llama / Mistral / Qwen2 model objects of vLLM and SGLang, which keep
transformers' module names (hf_sites.py) but differ in three ways, read from their sources
(vllm/model_executor/models/llama.py and qwen2.py, LlamaDecoderLayer.forward and
LlamaModel.forward; vllm/model_executor/layers/layernorm.py, RMSNorm and fused_add_rms_norm;
sglang/srt/models/llama.py and qwen2.py; sglang/srt/layers/layernorm.py, RMSNorm.forward_cuda):

- a flattened batch: every request of a step is one token dimension, so a hook sees
  [total_tokens, D], split here per request by the step's token counts (query_start_loc);
- a fused residual: RMSNorm(x, residual) returns (normed, x + residual), computed in place on
  CUDA (fused_add_rms_norm overwrites both inputs), and a decoder layer returns
  (hidden_states, residual), the sum deferred to the next norm. So:

    embed            model.embed_tokens                output
    L<l>/attn_norm   layers.<l>.input_layernorm        output[0] (the tensor on layer 0)
    L<l>/attn_out    layers.<l>.self_attn.o_proj       output[0] (RowParallelLinear: (out, bias))
    L<l>/resid_mid   layers.<l>.post_attention_layernorm output[1] (x + residual)
    L<l>/mlp_norm    layers.<l>.post_attention_layernorm output[0]
    L<l>/mlp_out     layers.<l>.mlp.down_proj          output[0]
    L<l>/out         layers.<l>                        output[0] + output[1]
    final_norm       model.norm                        output[0]

  every value copied when taken, before a later in-place norm overwrites it;
- the logits: a separate LogitsProcessor computes them for the rows the engine samples from (the
  caller hands them to flat_record.py); the embedding's input (the flattened token ids) is taken
  too, to check each request's rows against the tokens the caller says it fed.
"""

import inspect

import numpy as np

from .hf_sites import TRANSFORMERS, Layout, LayoutError, SiteHooks, family_of_config, site_table


class FlatBatchError(ValueError):
    pass


def _engine_family(model):
    """The family of a vLLM / SGLang model object; a model whose decoder layers take no residual
    (transformers' own) is refused: its sites are hf_sites.TRANSFORMERS'."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    first = layers[0] if layers is not None and len(layers) else None
    if first is None or "residual" not in inspect.signature(first.forward).parameters:
        raise LayoutError(
            "%s is not a vLLM or SGLang model: its decoder layers take no residual "
            "(a transformers model is recorded with driftscope_trace.record)" % type(model).__name__
        )
    return family_of_config(model.config)


# transformers' modules, read otherwise: the fused norms' pairs, the layer's deferred sum
_CAPTURES = {
    "attn_norm": "output0",
    "attn_out": "output0",
    "resid_mid": "output1",
    "mlp_norm": "output0",
    "mlp_out": "output0",
    "out": "sum01",
    "final_norm": "output0",
}
_TAPS = {"input_ids": ("model.embed_tokens", "input", "Embedding")}
_TAPS.update(
    {
        k: (path, _CAPTURES.get(k, capture), must_be)
        for k, (path, capture, must_be) in TRANSFORMERS.taps.items()
        if k != "logits"
    }
)
FLAT = Layout(_engine_family, _TAPS, ("input_ids", "final_norm"))


def flat_site_table(model):
    """[(site, module, capture)] of a vLLM / SGLang model; LayoutError when it does not fit."""
    return site_table(model, FLAT)


def flat_hooks(model, sites):
    """SiteHooks on a vLLM / SGLang model, copying each value as it is taken."""
    return SiteHooks(model, sites, FLAT, copy=True)


def split_rows(taken, counts):
    """{site: [total_tokens, D]} of one flattened pass -> one {site: [n_i, D]} per request,
    for the token counts n_i of the step's requests in flattened order (the differences of
    vLLM's query_start_loc, SGLang's extend_seq_lens). Rows beyond sum(counts) (a batch padded
    for CUDA graphs) are refused, as is a count that does not fit."""
    if not taken:
        raise FlatBatchError("no forward pass of the model was observed since the last step")
    if any(int(n) < 1 for n in counts):
        raise FlatBatchError("every request of a step feeds at least one token: counts %s" % list(counts))
    total = sum(int(n) for n in counts)
    for site, t in taken.items():
        if t.shape[0] != total:
            raise FlatBatchError(
                "site %s holds %d rows, the step's token counts %s sum to %d (a "
                "padded batch? CUDA graphs must be off)" % (site, t.shape[0], list(counts), total)
            )
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    return [{s: t[a:b] for s, t in taken.items()} for a, b in zip(starts[:-1], starts[1:])]
