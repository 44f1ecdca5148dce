"""Mapping the modules of a Hugging Face causal LM onto driftscope's tap sites, and forward hooks
that capture exactly the values each site holds (docs/trace-format.md "Sites"):

  embed            model.embed_tokens         output
  L<l>/attn_norm   layers.<l>.input_layernorm output (the normalised input of q/k/v_proj)
  L<l>/attn_out    layers.<l>.self_attn.o_proj output (before the residual add)
  L<l>/resid_mid   layers.<l>.post_attention_layernorm input (the residual after attention)
  L<l>/mlp_norm    layers.<l>.post_attention_layernorm output
  L<l>/mlp_out     layers.<l>.mlp.down_proj output
  L<l>/out         layers.<l> output[0] (the residual after the MLP)
  final_norm       model.norm output
  logits           lm_head output

The families are those driftscope loads (Llama, Llama-3, Mistral, Qwen2); another class, or a
module the layout needs that is missing or of the wrong kind, stops with a LayoutError naming it.
The table is a Layout (TRANSFORMERS); flat_sites.py reads the same modules of a vLLM or SGLang
model object otherwise.
"""

import torch

from .schema import LAYER_SITE_KINDS

# transformers class name -> driftscope architecture (model_json "architecture")
FAMILIES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}


class LayoutError(ValueError):
    pass


def family_of(model):
    cls = type(model).__name__
    if cls not in FAMILIES:
        raise LayoutError(
            "model class %s (model_type '%s') is not a family driftscope loads; the "
            "recorder maps %s" % (cls, getattr(model.config, "model_type", "?"), ", ".join(sorted(FAMILIES)))
        )
    return FAMILIES[cls]


def family_of_config(config):
    """The family of a model object whose class is an engine's own (vLLM, SGLang: its Mistral is
    a LlamaForCausalLM), from its Hugging Face config's `architectures`."""
    archs = getattr(config, "architectures", None) or []
    found = [FAMILIES[a] for a in archs if a in FAMILIES]
    if not found:
        raise LayoutError(
            "config architectures %s (model_type '%s'): not a family driftscope "
            "loads; the recorder maps %s" % (archs, getattr(config, "model_type", "?"), ", ".join(sorted(FAMILIES)))
        )
    return found[0]


# Where each site is read: site kind -> (module path, what to capture, the class name's ending).
# Layer kinds' paths are inside model.layers.<l> ("" is the layer itself); the entries named in
# `always` (transformers: the logits) are taken on every pass, whatever the probes; `family`
# checks the model is of the layout and names its family. Captures: "input" (the first
# argument), "output", "output0" (element 0 of a tuple output, or the tensor), "output1"
# (element 1), "sum01" (the sum of elements 0 and 1).
class Layout:
    def __init__(self, family, taps, always):
        self.family, self.taps, self.always = family, taps, always


TRANSFORMERS = Layout(
    family_of,
    {
        "embed": ("model.embed_tokens", "output", "Embedding"),
        "attn_norm": ("input_layernorm", "output", "RMSNorm"),
        "attn_out": ("self_attn.o_proj", "output", "Linear"),
        "resid_mid": ("post_attention_layernorm", "input", "RMSNorm"),
        "mlp_norm": ("post_attention_layernorm", "output", "RMSNorm"),
        "mlp_out": ("mlp.down_proj", "output", "Linear"),
        "out": ("", "output0", "DecoderLayer"),
        "final_norm": ("model.norm", "output", "RMSNorm"),
        "logits": ("lm_head", "output", "Linear"),
    },
    ("logits",),
)


def _module(model, path, must_be):
    try:
        m = model.get_submodule(path)
    except AttributeError:
        raise LayoutError("cannot map %s onto driftscope's sites: module '%s' not found" % (type(model).__name__, path))
    if not type(m).__name__.endswith(must_be):
        raise LayoutError(
            "cannot map %s onto driftscope's sites: module '%s' is a %s, expected a %s"
            % (type(model).__name__, path, type(m).__name__, must_be)
        )
    return m


def site_table(model, layout=TRANSFORMERS):
    """[(site, module, capture)] for every site and the layout's other entries ('logits'),
    checked against the model's layout."""
    layout.family(model)
    n_layers = model.config.num_hidden_layers
    layers = _module(model, "model.layers", "ModuleList")
    if len(layers) != n_layers:
        raise LayoutError(
            "module 'model.layers' holds %d layers, config.num_hidden_layers says %d" % (len(layers), n_layers)
        )
    taps, after = layout.taps, ("final_norm", "logits")

    def top(name):
        path, capture, must_be = taps[name]
        return (name, _module(model, path, must_be), capture)

    table = [top(k) for k in taps if k not in LAYER_SITE_KINDS and k not in after]
    for l in range(n_layers):
        for kind in LAYER_SITE_KINDS:
            sub, capture, must_be = taps[kind]
            path = "model.layers.%d" % l + ("." + sub if sub else "")
            table.append(("L%d/%s" % (l, kind), _module(model, path, must_be), capture))
    return table + [top(k) for k in after if k in taps]


def _captured(site, module, output, capture):
    """The value a forward hook's `output` holds for `capture` (Layout's captures)."""
    pair = isinstance(output, (tuple, list))
    if capture in ("output1", "sum01") and not (pair and len(output) >= 2):
        raise LayoutError(
            "site %s: module %s returned %s, expected a pair (hidden, residual)"
            % (site, type(module).__name__, type(output).__name__)
        )
    # "output0": a decoder layer returns a tuple (hidden, ...) in transformers 4.x, the tensor in
    # 5.x; an engine's fused RMSNorm a pair (normed, residual) when given a residual
    if capture == "output1":
        t = output[1]
    elif capture == "sum01":
        t = output[0] + output[1]
    elif capture == "output0" and pair:
        t = output[0]
    else:
        t = output
    if not isinstance(t, torch.Tensor):
        raise LayoutError(
            "site %s: module %s returned %s, not a tensor" % (site, type(module).__name__, type(t).__name__)
        )
    return t


class SiteHooks:
    """Forward hooks on the modules of the wanted sites (and the layout's other entries, e.g. the
    logits); after each forward call, `taken` maps site -> tensor: [batch, rows, width] for a
    transformers model (every row of the batch: the caller picks each sequence's rows with the
    attention mask), [tokens, width] for an engine's flattened batch. `copy` keeps a copy of each
    value: an engine's fused add-RMSNorm overwrites its inputs in place later in the pass."""

    def __init__(self, model, sites, layout=TRANSFORMERS, copy=False):
        wanted = set(sites) | set(layout.always)
        self.taken = {}
        self._copy = copy
        self._handles = []
        for site, module, capture in site_table(model, layout):
            if site not in wanted:
                continue
            if capture == "input":
                self._handles.append(module.register_forward_pre_hook(self._pre_hook(site)))
            else:
                self._handles.append(module.register_forward_hook(self._hook(site, capture)))

    def _keep(self, t):
        t = t.detach()
        return t.clone() if self._copy else t

    def _pre_hook(self, site):
        def hook(module, args):
            self.taken[site] = self._keep(args[0])

        return hook

    def _hook(self, site, capture):
        def hook(module, args, output):
            self.taken[site] = self._keep(_captured(site, module, output, capture))

        return hook

    def clear(self):
        self.taken = {}

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
