"""A trained transformers Llama written as a llama2.c checkpoint (legacy version-0 format, the
one llama2.c's run.c reads): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
seq_len; a positive vocab_size means the classifier is the embedding), the float32 weights in
run.c's order, then the freq_cis_real/imag tables run.c skips. q/k rows go back from Hugging
Face's half-split RoPE layout to llama2.c's interleaved pairs (the inverse of the permute() in
transformers' Llama conversion script)."""

import struct

import torch


def _to_interleaved(w, n_heads):
    rows, cols = w.shape
    return w.view(n_heads, 2, rows // n_heads // 2, cols).transpose(1, 2).reshape(rows, cols)


def write(model, path):
    c = model.config
    if not c.tie_word_embeddings:
        raise ValueError("llama2.c's legacy format is written here for tied embeddings only")
    head = c.hidden_size // c.num_attention_heads
    layers = model.model.layers
    header = [
        c.hidden_size,
        c.intermediate_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.vocab_size,
        c.max_position_embeddings,
    ]
    tensors = [model.model.embed_tokens.weight]
    tensors += [l.input_layernorm.weight for l in layers]
    tensors += [_to_interleaved(l.self_attn.q_proj.weight, c.num_attention_heads) for l in layers]
    tensors += [_to_interleaved(l.self_attn.k_proj.weight, c.num_key_value_heads) for l in layers]
    tensors += [l.self_attn.v_proj.weight for l in layers]
    tensors += [l.self_attn.o_proj.weight for l in layers]
    tensors += [l.post_attention_layernorm.weight for l in layers]
    tensors += [l.mlp.gate_proj.weight for l in layers]
    tensors += [l.mlp.down_proj.weight for l in layers]
    tensors += [l.mlp.up_proj.weight for l in layers]
    tensors += [model.model.norm.weight]
    freqs = 1.0 / (c.rope_theta ** (torch.arange(0, head, 2, dtype=torch.float64) / head))
    angles = torch.outer(torch.arange(c.max_position_embeddings, dtype=torch.float64), freqs)
    tensors += [torch.cos(angles), torch.sin(angles)]
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", *header))
        for t in tensors:
            f.write(t.detach().to(torch.float32).contiguous().numpy().tobytes())
