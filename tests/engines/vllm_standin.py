"""A stand-in for vLLM's Llama / Qwen2 model object in plain torch, for testing the vLLM / SGLang
hooks (driftscope_trace/flat_sites.py) where neither engine runs. Written from vLLM's sources, not
from the hooks: the module tree and class names, the calling conventions a forward hook sees and
the in-place writes of the fused norm, each taken from the file and function named beside it.
Not vLLM: no paged KV cache, no CUDA kernels, no torch.compile; attention is plain softmax.

  vllm/model_executor/models/llama.py    LlamaForCausalLM, LlamaModel.forward,
                                         LlamaDecoderLayer.forward, LlamaAttention.forward,
                                         LlamaMLP.forward, LlamaForCausalLM.load_weights
  vllm/model_executor/models/qwen2.py    the same tree with q/k/v biases (Qwen2Attention)
  vllm/model_executor/layers/layernorm.py          RMSNorm.forward_native, fused_add_rms_norm
  vllm/model_executor/layers/linear.py             LinearBase.forward: (output, output_bias)
  vllm/model_executor/layers/vocab_parallel_embedding.py   VocabParallelEmbedding, ParallelLMHead
  vllm/model_executor/layers/logits_processor.py   LogitsProcessor._get_logits
  vllm/model_executor/layers/rotary_embedding.py   RotaryEmbedding (neox style)
  vllm/model_executor/layers/activation.py         SiluAndMul.forward_native
  vllm/forward_context.py                          set_forward_context (attention metadata)
  vllm/v1/worker/gpu_model_runner.py               _prepare_inputs: flattened input_ids,
                                                   positions, query_start_loc, logits_indices
"""

import contextlib
import json
import os

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

_FORWARD_CONTEXT = []  # vllm/forward_context.py: the attention metadata of the running pass


class AttentionMetadata:
    """What the attention backend reads for a flattened pass: each request's rows
    [query_start_loc[i], query_start_loc[i+1]) and its context length after the pass."""

    def __init__(self, request_ids, query_start_loc, seq_lens):
        self.request_ids, self.query_start_loc = request_ids, query_start_loc
        self.seq_lens = seq_lens


@contextlib.contextmanager
def set_forward_context(meta):
    _FORWARD_CONTEXT.append(meta)
    try:
        yield
    finally:
        _FORWARD_CONTEXT.pop()


class VocabParallelEmbedding(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim), requires_grad=False)

    def forward(self, input_):
        return F.embedding(input_, self.weight)


class ParallelLMHead(VocabParallelEmbedding):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__(num_embeddings, embedding_dim)
        self.register_parameter("bias", None)

    def tie_weights(self, embed_tokens):
        self.weight = embed_tokens.weight
        return self

    def forward(self, input_):
        raise RuntimeError("LMHead's weights should be used in the sampler.")


class _Linear(nn.Module):
    """LinearBase.forward with return_bias=True: (output, output_bias), the bias added inside."""

    def __init__(self, in_features, out_features, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(out_features), requires_grad=False) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias), None


class QKVParallelLinear(_Linear):
    pass


class MergedColumnParallelLinear(_Linear):
    pass


class RowParallelLinear(_Linear):
    pass


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size), requires_grad=False)
        self.variance_epsilon = eps

    def _norm(self, x):  # RMSNorm.forward_native, without the residual
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        return x.to(orig_dtype) * self.weight

    def forward(self, x, residual=None):
        if residual is None:
            return self._norm(x)
        # fused_add_rms_norm (forward_cuda): the kernel writes x + residual into `residual` and
        # the normed sum into `x`, in place, and returns the two input tensors
        residual.add_(x)
        x.copy_(self._norm(residual))
        return x, residual


class SiluAndMul(nn.Module):
    def forward(self, x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


class RotaryEmbedding(nn.Module):
    def __init__(self, head_size, max_position, base):
        super().__init__()
        self.head_size = head_size
        inv_freq = 1.0 / (base ** (torch.arange(0, head_size, 2, dtype=torch.float) / head_size))
        t = torch.arange(max_position, dtype=torch.float)
        freqs = torch.einsum("i,j -> ij", t, inv_freq)
        self.cos_sin_cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1)

    def _rotate(self, x, cos, sin):
        shape = x.shape
        x = x.view(x.shape[0], -1, self.head_size)
        x1, x2 = torch.chunk(x, 2, dim=-1)
        cos, sin = cos.unsqueeze(-2).to(x.dtype), sin.unsqueeze(-2).to(x.dtype)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).reshape(shape)

    def forward(self, positions, query, key):
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        return self._rotate(query, cos, sin), self._rotate(key, cos, sin)


class Attention(nn.Module):
    """Each request's rows of the flattened pass attend to its cached keys and its own new ones
    (causal); the cache is kept per request id."""

    def __init__(self, num_heads, head_size, scale, num_kv_heads):
        super().__init__()
        self.num_heads, self.head_size, self.scale = num_heads, head_size, scale
        self.num_kv_heads = num_kv_heads
        self.cache = {}

    def forward(self, q, k, v):
        meta = _FORWARD_CONTEXT[-1]
        out = torch.empty_like(q)
        loc = meta.query_start_loc
        for i, rid in enumerate(meta.request_ids):
            a, b = loc[i], loc[i + 1]
            kv = [t[a:b].view(b - a, self.num_kv_heads, self.head_size) for t in (k, v)]
            old = self.cache.get(rid)
            keys, values = kv if old is None else [torch.cat([o, x]) for o, x in zip(old, kv)]
            self.cache[rid] = (keys, values)
            assert keys.shape[0] == meta.seq_lens[i]
            out[a:b] = self._attend(q[a:b], keys, values).reshape(b - a, -1)
        return out

    def _attend(self, q, keys, values):
        n, ctx = q.shape[0], keys.shape[0]
        group = self.num_heads // self.num_kv_heads
        q = q.view(n, self.num_heads, self.head_size).transpose(0, 1)
        keys = keys.transpose(0, 1).repeat_interleave(group, dim=0)
        values = values.transpose(0, 1).repeat_interleave(group, dim=0)
        scores = torch.matmul(q, keys.transpose(1, 2)) * self.scale
        rows = torch.arange(ctx - n, ctx).unsqueeze(1)
        scores = scores.masked_fill(torch.arange(ctx).unsqueeze(0) > rows, float("-inf"))
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(probs, values).transpose(0, 1)


class LlamaAttention(nn.Module):
    def __init__(self, c, bias):
        super().__init__()
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.q_size = c.num_attention_heads * self.head_dim
        self.kv_size = c.num_key_value_heads * self.head_dim
        self.qkv_proj = QKVParallelLinear(c.hidden_size, self.q_size + 2 * self.kv_size, bias)
        self.o_proj = RowParallelLinear(self.q_size, c.hidden_size, False)
        self.rotary_emb = RotaryEmbedding(self.head_dim, c.max_position_embeddings, c.rope_theta)
        self.attn = Attention(c.num_attention_heads, self.head_dim, self.head_dim**-0.5, c.num_key_value_heads)

    def forward(self, positions, hidden_states):
        qkv, _ = self.qkv_proj(hidden_states)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q, k = self.rotary_emb(positions, q, k)
        attn_output = self.attn(q, k, v)
        output, _ = self.o_proj(attn_output)
        return output


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_up_proj = MergedColumnParallelLinear(c.hidden_size, 2 * c.intermediate_size, False)
        self.down_proj = RowParallelLinear(c.intermediate_size, c.hidden_size, False)
        self.act_fn = SiluAndMul()

    def forward(self, x):
        x, _ = self.gate_up_proj(x)
        x = self.act_fn(x)
        x, _ = self.down_proj(x)
        return x


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c, qkv_bias):
        super().__init__()
        self.self_attn = LlamaAttention(c, qkv_bias)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, positions, hidden_states, residual):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(positions=positions, hidden_states=hidden_states)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states)
        return hidden_states, residual


class LlamaModel(nn.Module):
    def __init__(self, c, qkv_bias):
        super().__init__()
        self.embed_tokens = VocabParallelEmbedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c, qkv_bias) for _ in range(c.num_hidden_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, residual)
        hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states


class LogitsProcessor(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.org_vocab_size = vocab_size

    def forward(self, lm_head, hidden_states):
        logits = F.linear(hidden_states, lm_head.weight, lm_head.bias)
        return logits[..., : self.org_vocab_size]


class LlamaForCausalLM(nn.Module):
    def __init__(self, c, qkv_bias=False):
        super().__init__()
        self.config = c
        self.model = LlamaModel(c, qkv_bias)
        self.lm_head = ParallelLMHead(c.vocab_size, c.hidden_size)
        if c.tie_word_embeddings:
            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        self.logits_processor = LogitsProcessor(c.vocab_size)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)

    def compute_logits(self, hidden_states):
        return self.logits_processor(self.lm_head, hidden_states)

    def load_weights(self, weights):
        """q/k/v_proj into qkv_proj and gate/up_proj into gate_up_proj, shard by shard in that
        order (the stacked_params_mapping of LlamaForCausalLM.load_weights)."""
        stacked = {
            "q_proj": ("qkv_proj", 0),
            "k_proj": ("qkv_proj", 1),
            "v_proj": ("qkv_proj", 2),
            "gate_proj": ("gate_up_proj", 0),
            "up_proj": ("gate_up_proj", 1),
        }
        params = dict(self.named_parameters())
        shards = {}
        for name, w in weights.items():
            parts = name.split(".")
            hit = next((p for p in parts if p in stacked), None)
            if hit is None:
                params[name].data.copy_(w)
                continue
            target, index = stacked[hit]
            shards.setdefault(name.replace(hit, target), {})[index] = w
        for name, pieces in shards.items():
            params[name].data.copy_(torch.cat([pieces[i] for i in sorted(pieces)]))


class Qwen2ForCausalLM(LlamaForCausalLM):
    """vllm/model_executor/models/qwen2.py: Llama's tree with biases on q/k/v."""

    def __init__(self, c):
        super().__init__(c, qkv_bias=True)


def load(model_dir):
    """(the stand-in model with the directory's safetensors weights, its transformers config)."""
    from transformers import AutoConfig

    c = AutoConfig.from_pretrained(model_dir)
    cls = Qwen2ForCausalLM if c.architectures[0] == "Qwen2ForCausalLM" else LlamaForCausalLM
    with open(os.path.join(model_dir, "config.json")) as f:  # transformers 5 moved it
        c.rope_theta = json.load(f).get("rope_theta", 10000.0)
    model = cls(c)
    model.load_weights(load_file(os.path.join(model_dir, "model.safetensors")))
    return model.eval()


class Runner:
    """One flattened pass per step() as vLLM's model runner prepares it (_prepare_inputs): the
    scheduled requests' new tokens concatenated, positions from each request's computed tokens,
    query_start_loc, logits at each request's last row (logits_indices), greedy argmax."""

    def __init__(self, model):
        self.model, self.computed = model, {}
        for m in model.modules():  # the runner owns the KV cache (initialize_kv_cache): a fresh one
            if isinstance(m, Attention):
                m.cache = {}

    def step(self, scheduled, every_row=False):
        """scheduled: [(request id, new token ids)] -> (logits [requests, V], each argmax); with
        every_row, the logits of every row (a prompt-logprobs run) and the argmax of the last."""
        ids, positions, loc, lens = [], [], [0], []
        for rid, new in scheduled:
            start = self.computed.get(rid, 0)
            ids += list(new)
            positions += range(start, start + len(new))
            loc.append(loc[-1] + len(new))
            lens.append(start + len(new))
            self.computed[rid] = start + len(new)
        meta = AttentionMetadata([rid for rid, _ in scheduled], loc, lens)
        with torch.no_grad(), set_forward_context(meta):
            hidden = self.model(torch.tensor(ids), torch.tensor(positions))
            last = torch.tensor(loc[1:]) - 1
            logits = self.model.compute_logits(hidden if every_row else hidden[last])
        best = (logits[last] if every_row else logits).argmax(dim=-1).tolist()
        return logits, best
