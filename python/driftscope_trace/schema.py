"""Names and version of trace format v1, as trace/schema.h has them, and --probes resolution as
src/experiment/trace_recorder.cpp does it."""

FORMAT_NAME = "driftscope-trace"
FORMAT_VERSION = 1
PACKAGE_VERSION = "0.1.0"

# Tap sites of one layer, in forward order.
LAYER_SITE_KINDS = ("attn_norm", "attn_out", "resid_mid", "mlp_norm", "mlp_out", "out")
DEFAULT_LAYER_KINDS = ("attn_out", "mlp_out", "out")
# torch dtype names -> config_json "dtype" as driftscope names them
DTYPE_NAMES = {"float32": "fp32", "float64": "fp64", "bfloat16": "bf16", "float16": "fp16"}
STOP_REASONS = ("eos", "max_new", "context", "forced", "interrupted", "running")


def trace_block(probes, hidden_dtype, topk, full_logits, compression, force_tokens=None):
    """config_json's "trace" object of a recorder run, as driftscope writes it (no kernel taps;
    compression "none", or "deflate1": shuffle + gzip level 1)."""
    return {"probes": probes, "hidden_dtype": hidden_dtype, "topk": topk,
            "full_logits": full_logits, "kernels": "off", "force_tokens": force_tokens,
            "compression": "none" if compression == "none" else "deflate1"}


class ProbeError(ValueError):
    pass


def layer_site(layer, kind):
    return "L%d/%s" % (layer, kind)


def all_sites(n_layers):
    """embed, L0/attn_norm ... L<n-1>/out, final_norm."""
    sites = ["embed"]
    for l in range(n_layers):
        sites += [layer_site(l, k) for k in LAYER_SITE_KINDS]
    return sites + ["final_norm"]


def default_sites(n_layers):
    sites = ["embed"]
    for l in range(n_layers):
        sites += [layer_site(l, k) for k in DEFAULT_LAYER_KINDS]
    return sites + ["final_norm"]


def resolve_probes(spec, n_layers):
    """default | all | none | a comma list like embed,L0/attn_norm,L*/out,final_norm; forward order."""
    if spec == "default":
        return default_sites(n_layers)
    if spec == "all":
        return all_sites(n_layers)
    if spec == "none":
        return []
    every = all_sites(n_layers)
    chosen = set()
    for item in spec.split(","):
        if item.startswith("L*/"):
            kind = item[3:]
            if kind not in LAYER_SITE_KINDS:
                raise ProbeError("unknown probe '%s' (layer kinds: %s)" % (item, ", ".join(LAYER_SITE_KINDS)))
            chosen.update(layer_site(l, kind) for l in range(n_layers))
        elif item in every:
            chosen.add(item)
        else:
            raise ProbeError("unknown probe '%s' (the model has layers L0..L%d); --probes takes default, "
                             "all, none, or sites like embed,L0/attn_norm,L*/out,final_norm" % (item, n_layers - 1))
    return [s for s in every if s in chosen]
