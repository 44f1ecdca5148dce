// Test oracle: fp64 forward pass following the Hugging Face modeling code, one function per module.
// Deliberately written in the Hugging Face form (cat(freqs, freqs), rotate_half, repeat_kv, a full
// T x T masked score matrix) rather than the runtime's form, so that the two share no code.
#include "tests/support/ref_forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace ds::test {
namespace {

// A (rows, cols) row-major matrix of doubles.
struct Mat {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Mat(int r, int c) : rows(r), cols(c), v(static_cast<size_t>(r) * c, 0.0) {}
  double& at(int r, int c) { return v[static_cast<size_t>(r) * cols + c]; }
  double at(int r, int c) const { return v[static_cast<size_t>(r) * cols + c]; }
};

// nn.Linear: y = x W^T + b.   x: (T, in), W: (out, in), b: (out) or empty -> y: (T, out)
Mat linear(const Mat& x, const std::vector<float>& W, const std::vector<float>& b, int out) {
  const int in = x.cols;
  if (W.size() != static_cast<size_t>(out) * in) throw std::logic_error("ref linear: bad weight");
  Mat y(x.rows, out);
  for (int t = 0; t < x.rows; ++t) {
    for (int o = 0; o < out; ++o) {
      double s = 0.0;
      for (int i = 0; i < in; ++i)
        s += x.at(t, i) * static_cast<double>(W[static_cast<size_t>(o) * in + i]);
      if (!b.empty()) s += b[o];
      y.at(t, o) = s;
    }
  }
  return y;
}

// LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight.
Mat rms_norm(const Mat& x, const std::vector<float>& weight, double eps) {
  Mat y(x.rows, x.cols);
  for (int t = 0; t < x.rows; ++t) {
    double ms = 0.0;
    for (int i = 0; i < x.cols; ++i) ms += x.at(t, i) * x.at(t, i);
    ms /= x.cols;
    const double r = 1.0 / std::sqrt(ms + eps);
    for (int i = 0; i < x.cols; ++i) y.at(t, i) = weight[i] * (x.at(t, i) * r);
  }
  return y;
}

// apply_rotary_pos_emb for one (T, n_heads * hd) tensor: q * cos + rotate_half(q) * sin, where
// cos/sin come from emb = cat(freqs, freqs), freqs = position * inv_freq, and
// rotate_half(x) = cat(-x[hd/2:], x[:hd/2]).
void apply_rope(Mat& x, int n_heads, int hd, const std::vector<double>& inv_freq) {
  const int half = hd / 2;
  std::vector<double> emb(hd), rot(hd), orig(hd);
  for (int t = 0; t < x.rows; ++t) {
    for (int j = 0; j < half; ++j) {
      emb[j] = static_cast<double>(t) * inv_freq[j];
      emb[j + half] = emb[j];
    }
    for (int h = 0; h < n_heads; ++h) {
      for (int j = 0; j < hd; ++j) orig[j] = x.at(t, h * hd + j);
      for (int j = 0; j < half; ++j) {
        rot[j] = -orig[j + half];
        rot[j + half] = orig[j];
      }
      for (int j = 0; j < hd; ++j) {
        x.at(t, h * hd + j) = orig[j] * std::cos(emb[j]) + rot[j] * std::sin(emb[j]);
      }
    }
  }
}

// Eager attention: softmax(q k^T * scale + mask) v per head, keys/values shared by groups of
// n_rep = heads / kv_heads query heads (repeat_kv: query head h reads kv head h / n_rep).
// The mask allows k <= q, and with a sliding window only q - k < window.
Mat attention(const Mat& q, const Mat& k, const Mat& v, const RefConfig& c) {
  const int T = q.rows, hd = c.head_dim(), n_rep = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  Mat out(T, c.heads * hd);
  Mat scores(T, T);
  for (int h = 0; h < c.heads; ++h) {
    const int kvh = h / n_rep;
    for (int i = 0; i < T; ++i) {
      for (int j = 0; j < T; ++j) {
        const bool visible = j <= i && (c.sliding_window <= 0 || i - j < c.sliding_window);
        if (!visible) {
          scores.at(i, j) = neg_inf;
          continue;
        }
        double s = 0.0;
        for (int d = 0; d < hd; ++d) s += q.at(i, h * hd + d) * k.at(j, kvh * hd + d);
        scores.at(i, j) = s * scale;
      }
      double mx = neg_inf;
      for (int j = 0; j < T; ++j) mx = std::max(mx, scores.at(i, j));
      double z = 0.0;
      for (int j = 0; j < T; ++j) {
        const double e = scores.at(i, j) == neg_inf ? 0.0 : std::exp(scores.at(i, j) - mx);
        scores.at(i, j) = e;
        z += e;
      }
      for (int d = 0; d < hd; ++d) {
        double s = 0.0;
        for (int j = 0; j < T; ++j) s += (scores.at(i, j) / z) * v.at(j, kvh * hd + d);
        out.at(i, h * hd + d) = s;
      }
    }
  }
  return out;
}

void add_into(Mat& x, const Mat& y) {
  for (size_t i = 0; i < x.v.size(); ++i) x.v[i] += y.v[i];
}

}  // namespace

std::vector<double> ref_rope_inv_freq(const RefConfig& c) {
  const int hd = c.head_dim();
  std::vector<double> inv(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv[i] = 1.0 / std::pow(c.rope_theta, (2.0 * i) / hd);
  if (!c.rope_scaling) return inv;
  // transformers _compute_llama3_parameters, element by element.
  const RefLlama3Scaling& s = *c.rope_scaling;
  const double old_context_len = s.original_max_position_embeddings;
  const double low_freq_wavelen = old_context_len / s.low_freq_factor;
  const double high_freq_wavelen = old_context_len / s.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    // inv_freq_llama = where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    double llama = wavelen > low_freq_wavelen ? f / s.factor : f;
    const double smooth_factor =
        (old_context_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const double smoothed = (1.0 - smooth_factor) * llama / s.factor + smooth_factor * llama;
    const bool is_medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    f = is_medium ? smoothed : llama;
  }
  return inv;
}

std::vector<double> ref_forward(const RefConfig& c, const RefWeights& w,
                                std::span<const int32_t> tokens,
                                std::vector<std::vector<double>>* layer_out) {
  const int T = static_cast<int>(tokens.size());
  const int D = c.dim, hd = c.head_dim(), Q = c.heads * hd, KV = c.kv_heads * hd;
  const std::vector<double> inv_freq = ref_rope_inv_freq(c);

  Mat x(T, D);  // hidden_states = embed_tokens(input_ids)
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < D; ++i) x.at(t, i) = w.embed_tokens[static_cast<size_t>(tokens[t]) * D + i];
  }
  const std::vector<float> no_bias;
  for (const RefLayer& L : w.layers) {
    // self-attention block
    Mat h = rms_norm(x, L.input_layernorm, c.rms_norm_eps);
    Mat q = linear(h, L.q_proj, c.qkv_bias ? L.q_bias : no_bias, Q);
    Mat k = linear(h, L.k_proj, c.qkv_bias ? L.k_bias : no_bias, KV);
    Mat v = linear(h, L.v_proj, c.qkv_bias ? L.v_bias : no_bias, KV);
    apply_rope(q, c.heads, hd, inv_freq);
    apply_rope(k, c.kv_heads, hd, inv_freq);
    Mat a = attention(q, k, v, c);
    add_into(x, linear(a, L.o_proj, no_bias, D));
    // MLP block: down(silu(gate(h)) * up(h))
    h = rms_norm(x, L.post_attention_layernorm, c.rms_norm_eps);
    Mat g = linear(h, L.gate_proj, no_bias, c.hidden);
    Mat u = linear(h, L.up_proj, no_bias, c.hidden);
    for (size_t i = 0; i < g.v.size(); ++i) {
      const double s = g.v[i] / (1.0 + std::exp(-g.v[i]));
      g.v[i] = s * u.v[i];
    }
    add_into(x, linear(g, L.down_proj, no_bias, D));
    if (layer_out != nullptr) layer_out->push_back(x.v);  // residual after the MLP: (T, dim)
  }
  Mat h = rms_norm(x, w.norm, c.rms_norm_eps);
  Mat logits = linear(h, c.tied ? w.embed_tokens : w.lm_head, no_bias, c.vocab);
  return logits.v;
}

}  // namespace ds::test
