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

# The groups and datasets of a trace (docs/trace-format.md, "Layout"), named as trace/schema.h
# names them (kMetaGroup ... kKernelsGroup): every path the writer creates and the recorders open.
META_GROUP = "meta"  # /meta: the run's attributes
SEQ_GROUP = "seq"  # /seq/<i>: one group per sequence
# In a sequence's group:
TOKENS_DATASET = "tokens"  # int32 [prompt_len + gen_len]
HIDDEN_GROUP = "hidden"  # hidden/<site>: [rows, dim]
LOGITS_GROUP = "logits"  # the datasets below
# In a sequence's logits group, in this order:
TOPK_IDS = "topk_ids"  # int32 [rows, K]
TOPK_LOGITS = "topk_logits"  # float32 [rows, K]
LSE = "lse"  # float32 [rows]
FULL_LOGITS = "full"  # float32 [rows, vocab], optional
LOGITS_DATASETS = (TOPK_IDS, TOPK_LOGITS, LSE, FULL_LOGITS)
KERNELS_GROUP = "kernels"  # /kernels: CUDA kernel records (never written from Python)
CERTIFY_GROUP = "certify"  # /certify: run --certify's per-row digests (never written from Python)


def sequence_path(index):
    """A sequence's group relative to the file, "seq/3" (as trace/schema.h's sequence_path)."""
    return "%s/%d" % (SEQ_GROUP, index)


def hidden_path(site):
    """A site's dataset relative to a sequence's group: "hidden/L0/out" for site "L0/out"."""
    return "%s/%s" % (HIDDEN_GROUP, site)


def logits_path(dataset):
    """A logits dataset relative to a sequence's group: "logits/lse" for LSE."""
    return "%s/%s" % (LOGITS_GROUP, dataset)


def trace_block(probes, hidden_dtype, topk, full_logits, compression, force_tokens=None):
    """config_json's "trace" object of a recorder run, as driftscope writes it (no kernel taps;
    compression "none", or "deflate1": shuffle + gzip level 1)."""
    return {
        "probes": probes,
        "hidden_dtype": hidden_dtype,
        "topk": topk,
        "full_logits": full_logits,
        "kernels": "off",
        "force_tokens": force_tokens,
        "compression": "none" if compression == "none" else "deflate1",
    }


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
            raise ProbeError(
                "unknown probe '%s' (the model has layers L0..L%d); --probes takes default, "
                "all, none, or sites like embed,L0/attn_norm,L*/out,final_norm" % (item, n_layers - 1)
            )
    return [s for s in every if s in chosen]
