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
"""
import torch

# transformers class name -> driftscope architecture (model_json "architecture")
FAMILIES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}


class LayoutError(ValueError):
    pass


def family_of(model):
    cls = type(model).__name__
    if cls not in FAMILIES:
        raise LayoutError("model class %s (model_type '%s') is not a family driftscope loads; the "
                          "recorder maps %s" % (cls, getattr(model.config, "model_type", "?"),
                                                ", ".join(sorted(FAMILIES))))
    return FAMILIES[cls]


# site kind -> (module path inside the decoder layer, what to capture, the module class it must be)
_LAYER_TAPS = {
    "attn_norm": ("input_layernorm", "output", "RMSNorm"),
    "attn_out": ("self_attn.o_proj", "output", "Linear"),
    "resid_mid": ("post_attention_layernorm", "input", "RMSNorm"),
    "mlp_norm": ("post_attention_layernorm", "output", "RMSNorm"),
    "mlp_out": ("mlp.down_proj", "output", "Linear"),
    "out": ("", "output0", "DecoderLayer"),
}


def _module(model, path, must_be):
    try:
        m = model.get_submodule(path)
    except AttributeError:
        raise LayoutError("cannot map %s onto driftscope's sites: module '%s' not found"
                          % (type(model).__name__, path))
    if not type(m).__name__.endswith(must_be):
        raise LayoutError("cannot map %s onto driftscope's sites: module '%s' is a %s, expected a %s"
                          % (type(model).__name__, path, type(m).__name__, must_be))
    return m


def site_table(model):
    """[(site, module, capture)] for every site and 'logits', checked against the model's layout."""
    family_of(model)
    n_layers = model.config.num_hidden_layers
    layers = _module(model, "model.layers", "ModuleList")
    if len(layers) != n_layers:
        raise LayoutError("module 'model.layers' holds %d layers, config.num_hidden_layers says %d"
                          % (len(layers), n_layers))
    table = [("embed", _module(model, "model.embed_tokens", "Embedding"), "output")]
    for l in range(n_layers):
        for kind, (sub, capture, must_be) in _LAYER_TAPS.items():
            path = "model.layers.%d" % l + ("." + sub if sub else "")
            table.append(("L%d/%s" % (l, kind), _module(model, path, must_be), capture))
    table.append(("final_norm", _module(model, "model.norm", "RMSNorm"), "output"))
    table.append(("logits", _module(model, "lm_head", "Linear"), "output"))
    return table


class SiteHooks:
    """Forward hooks on the modules of the wanted sites (and the logits); after each forward
    call, `taken` maps site -> tensor [batch, rows, width] (every row of the batch: the caller
    picks each sequence's rows with the attention mask)."""

    def __init__(self, model, sites):
        wanted = set(sites) | {"logits"}
        self.taken = {}
        self._handles = []
        for site, module, capture in site_table(model):
            if site not in wanted:
                continue
            if capture == "input":
                self._handles.append(module.register_forward_pre_hook(self._pre_hook(site)))
            else:
                self._handles.append(module.register_forward_hook(self._hook(site, capture == "output0")))

    def _pre_hook(self, site):
        def hook(module, args):
            self.taken[site] = args[0].detach()
        return hook

    def _hook(self, site, first):
        def hook(module, args, output):
            # a decoder layer returns a tuple (hidden, ...) in transformers 4.x, the tensor in 5.x
            t = output[0] if first and isinstance(output, (tuple, list)) else output
            if not isinstance(t, torch.Tensor):
                raise LayoutError("site %s: module %s returned %s, not a tensor"
                                  % (site, type(module).__name__, type(t).__name__))
            self.taken[site] = t.detach()
        return hook

    def clear(self):
        self.taken = {}

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
