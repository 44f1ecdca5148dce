"""llama.cpp's graph tensors as driftscope's sites. llama.cpp names the tensors of its compute
graph as it builds them (cb(cur, "attn_norm", il) in src/models/*.cpp gives "attn_norm-<il>"),
and its eval callback (ggml_backend_sched_eval_callback, the mechanism of examples/eval-callback)
sees each one once computed. For the Llama and Qwen2 graphs:

  embd            embed            the token embeddings (inp_embd is the graph's input slot for
                                   embeddings given as vectors, not the rows looked up)
  attn_norm-<l>   L<l>/attn_norm   the normalised input of the q/k/v projections
  attn_out-<l>    L<l>/attn_out    the attention output after wo, before the residual add
  ffn_inp-<l>     L<l>/resid_mid   the residual after attention
  ffn_norm-<l>    L<l>/mlp_norm    the normalised input of the MLP
  ffn_out-<l>     L<l>/mlp_out     the MLP output, before the residual add
  l_out-<l>       L<l>/out         the residual after the MLP
  result_norm     final_norm       the final RMSNorm
  (logits: llama_get_logits, every position asked for)

llama.cpp's Qwen2 graph (src/models/qwen2.cpp) names no attn_out tensor: L<l>/attn_out is not
recorded there ("default" and "all" leave it out; asking for it is refused before anything is
written). The names were read in llama.cpp's source as llama-cpp-python 0.3.36 vendors it and
checked against the names its eval callback sees (tests/engines/test_llamacpp.py records every
site).
"""

import re

# GGUF general.architecture values whose graphs have the names above (Mistral converts as llama)
ARCHITECTURES = {"llama": "llama", "qwen2": "qwen2"}
_LAYER = {
    "attn_norm": "attn_norm",
    "attn_out": "attn_out",
    "ffn_inp": "resid_mid",
    "ffn_norm": "mlp_norm",
    "ffn_out": "mlp_out",
    "l_out": "out",
}
# layer site kinds a graph does not name, by architecture
UNNAMED = {"llama": set(), "qwen2": {"attn_out"}}
_NAMED = re.compile(r"^([a-z_]+)-(\d+)$")


def site_of(name):
    """driftscope's site of a llama.cpp graph tensor name, or None."""
    if name == "embd":
        return "embed"
    if name == "result_norm":
        return "final_norm"
    m = _NAMED.match(name)
    if m and m.group(1) in _LAYER:
        return "L%s/%s" % (m.group(2), _LAYER[m.group(1)])
    return None


def available(sites, arch, spec):
    """The sites llama.cpp's graph of `arch` names: `sites` less the unnamed ones when the probes
    were "default" or "all"; a ValueError naming the first unnamed one asked for by name."""
    missing = [s for s in sites if s.split("/")[-1] in UNNAMED[arch] and s.startswith("L")]
    if missing and spec not in ("default", "all"):
        raise ValueError("llama.cpp's %s graph names no tensor for %s: leave it out of --probes" % (arch, missing[0]))
    return [s for s in sites if s not in missing]
