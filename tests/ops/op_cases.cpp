// The op table: per kind of op, how a case makes its inputs, runs the CPU op, computes its
// float64 reference and which bounds hold; at the end, op_cases() lists every case (the shapes
// and storage types the [cuda] tests have always covered). The CUDA calls: op_cases_cuda.cpp.
#include "tests/ops/op_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "src/runtime/pass_logits.h"
#include "tests/ops/op_inputs.h"
#include "tests/ops/op_references.h"
#include "tests/ops/tolerances.h"
#include "trace/topk.h"

namespace ds::test {
namespace {

const char* type_name(Storage t) {
  return t == Storage::f16 ? "f16" : t == Storage::bf16 ? "bf16" : "f32";
}
double type_bytes(Storage t) {
  return t == Storage::native ? 4 : 2;
}
constexpr Storage kTypes[] = {Storage::native, Storage::f16, Storage::bf16};

// A CPU call over its own copy of the inputs writing n outputs (NaN until it runs).
OpCall host_call(const OpData& d, size_t n,
                 std::function<void(const OpData&, std::vector<float>&)> fn) {
  auto in = std::make_shared<const OpData>(d);
  auto out = std::make_shared<std::vector<float>>(n, std::numeric_limits<float>::quiet_NaN());
  return {[in, out, fn] { fn(*in, *out); }, [out] { return *out; }};
}

OpCase new_case(std::string op, std::string shape, OpParams params) {
  OpCase c;
  c.op = std::move(op);
  c.shape = std::move(shape);
  c.params = std::move(params);
  return c;
}

const char* const kExactReason = "the same operations in the same order: bit-identical";

OpCase gemm(const GemmParams& p) {
  using P = GemmParams;
  OpCase c =
      new_case(p.engine == GemmEngine::tiled    ? "gemm_tiled"
               : p.engine == GemmEngine::cublas ? "gemm_cublas"
                                                : "gemm_cublas_tf32",
               fmt::format("M={} N={} K={} x={} w={} split={} f16acc={} bias={}", p.M, p.N, p.K,
                           type_name(p.x_t), type_name(p.w_t), p.split, p.accum_f16, p.bias),
               p);
  c.make_inputs = [p] {
    return OpData{{rounded(random_values(static_cast<size_t>(p.M) * p.K, p.seed), p.x_t),
                   rounded(random_values(static_cast<size_t>(p.N) * p.K, p.seed + 1), p.w_t),
                   rounded(random_values(p.N, p.seed + 2), p.w_t)},
                  {}};
  };
  c.cpu = [p](const OpData& d) {
    return host_call(d, static_cast<size_t>(p.M) * p.N, [p](const OpData& in, auto& y) {
      ops::matmul<float>({y.data(), in.f[P::x].data(), in.f[P::w].data(),
                          p.bias ? in.f[P::b].data() : nullptr, p.M, p.N, p.K, p.K, p.K, 0,
                          gemm_numerics(p)});
    });
  };
  c.reference = [p](const OpData& d) {
    return ref::gemm(d.f[P::x], d.f[P::w], p.bias ? &d.f[P::b] : nullptr, p.M, p.N, p.K);
  };
  c.ref_bound = ref::bound(p.x_t, 1, p.accum_f16 ? Storage::f16 : Storage::native,
                           2 * p.K + std::max(p.split, 1) + 1);
  c.ref_bound_reason = "K products and K + splits + 1 sums rounded, one output rounding";
  if (p.engine == GemmEngine::tiled) {
    c.bound = nmse_threshold(p.x_t, Match::exact);
    c.bound_reason = "the CPU's k order per chunk and chunking, separate multiply and add";
  } else if (p.engine == GemmEngine::cublas) {
    c.bound = nmse_threshold(p.x_t, Match::reordered);
    c.bound_reason = "cuBLASLt reduces K in its own order";
  } else {
    c.bound = kTf32Nmse;
    c.bound_reason = "TF32 rounds the inputs to 10 mantissa bits";
  }
  c.bytes = (static_cast<double>(p.M) * p.K + static_cast<double>(p.M) * p.N) * type_bytes(p.x_t) +
            (static_cast<double>(p.N) * p.K + (p.bias ? p.N : 0)) * type_bytes(p.w_t);
  c.flops = 2.0 * p.M * p.N * p.K;
  return c;
}

OpCase elementwise(const ElementwiseParams& p) {
  using P = ElementwiseParams;
  OpCase c = new_case(p.kind == Elementwise::add      ? "add"
                      : p.kind == Elementwise::swiglu ? "swiglu"
                                                      : "cast",
                      fmt::format("n={} {}", p.n, type_name(p.t)), p);
  c.make_inputs = [p] {
    switch (p.kind) {
      case Elementwise::add:
        return OpData{{rounded(random_values(p.n, p.seed), p.t),
                       rounded(random_values(p.n, p.seed + 1), p.t)},
                      {}};
      case Elementwise::swiglu:
        return OpData{{rounded(random_values(p.n, p.seed, -8.f, 8.f), p.t),
                       rounded(random_values(p.n, p.seed + 1), p.t)},
                      {}};
      case Elementwise::cast:  // f32 values past fp16's range, which must become inf
        break;
    }
    return OpData{{random_values(p.n, p.seed, -70000.f, 70000.f)}, {}};
  };
  c.cpu = [p](const OpData& d) {
    return host_call(d, p.n, [p](const OpData& in, auto& y) {
      if (p.kind == Elementwise::add) {
        ops::add(y.data(), in.f[P::a].data(), in.f[P::b].data(), p.n, p.t);
      } else if (p.kind == Elementwise::swiglu) {
        ops::swiglu(y.data(), in.f[P::a].data(), in.f[P::b].data(), p.n, p.t);
      } else {
        std::copy(in.f[P::a].begin(), in.f[P::a].end(), y.begin());
        ops::round_to(y.data(), p.n, p.t);
      }
    });
  };
  if (p.kind == Elementwise::add) {
    c.reference = [](const OpData& d) { return ref::add(d.f[P::a], d.f[P::b]); };
    c.ref_bound = ref::bound(p.t, 1, Storage::native, 1);
    c.ref_bound_reason = "one fp32 add, one output rounding";
  } else if (p.kind == Elementwise::swiglu) {
    c.reference = [](const OpData& d) { return ref::swiglu(d.f[P::a], d.f[P::b]); };
    c.ref_bound = ref::bound(p.t, 1, Storage::native, 5);
    c.ref_bound_reason = "exp (within an ulp), add, divide, multiply in fp32, one output rounding";
  }
  const bool exact = p.kind != Elementwise::swiglu;
  c.bound = nmse_threshold(p.t, exact ? Match::exact : Match::reordered);
  c.bound_reason = exact ? kExactReason : "expf of the device vs std::exp";
  const double inputs = p.kind == Elementwise::cast ? 1 : 2;
  c.bytes = p.n * (inputs * (p.kind == Elementwise::cast ? 4 : type_bytes(p.t)) + type_bytes(p.t));
  c.flops = p.kind == Elementwise::swiglu ? 4.0 * p.n : p.kind == Elementwise::add ? p.n : 0;
  return c;
}

OpCase embedding(const EmbeddingParams& p) {
  using P = EmbeddingParams;
  OpCase c =
      new_case("embedding", fmt::format("vocab={} dim={} {}", p.vocab, p.dim, type_name(p.t)), p);
  c.make_inputs = [p] {
    return OpData{{rounded(random_values(static_cast<size_t>(p.vocab) * p.dim, p.seed), p.t)},
                  {{3, 0, p.vocab - 1, 3, 17 % p.vocab}}};
  };
  c.cpu = [p](const OpData& d) {
    const int n = static_cast<int>(d.i[P::ids].size());
    return host_call(d, static_cast<size_t>(n) * p.dim, [p, n](const OpData& in, auto& y) {
      ops::embedding(y.data(), in.f[P::table].data(), in.i[P::ids].data(), n, p.dim);
    });
  };
  c.reference = [p](const OpData& d) { return ref::embedding(d.f[P::table], d.i[P::ids], p.dim); };
  c.ref_bound = 0;
  c.ref_bound_reason = "a gather copies values";
  c.bound = nmse_threshold(p.t, Match::exact);
  c.bound_reason = kExactReason;
  c.bytes = 2.0 * 5 * p.dim * type_bytes(p.t);
  return c;
}

OpCase all_reduce(const AllReduceParams& p) {
  using P = AllReduceParams;
  OpCase c =
      new_case("all_reduce",
               fmt::format("n={} tp={} {} {}", p.n, p.tp,
                           p.order == ops::AllReduce::ring ? "ring" : "tree", type_name(p.t)),
               p);
  c.make_inputs = [p] {
    return OpData{{rounded(random_values(p.n * p.tp, p.seed, -3.f, 3.f), p.t)}, {}};
  };
  c.cpu = [p](const OpData& d) {  // the op clobbers its parts: each run reduces a fresh copy
    return host_call(d, p.n, [p](const OpData& in, auto& y) {
      std::vector<float> parts = in.f[P::parts];
      ops::all_reduce(y.data(), parts.data(), p.tp, p.n, p.order, p.t);
    });
  };
  c.reference = [p](const OpData& d) { return ref::all_reduce(d.f[P::parts], p.tp); };
  c.ref_bound = ref::bound(p.t, 0, p.t, p.tp);
  c.ref_bound_reason = "tp - 1 additions, each rounded to the storage type";
  c.bound = nmse_threshold(p.t, Match::exact);
  c.bound_reason = "the CPU's ring or tree order, each addition rounded: bit-identical";
  c.bytes = (p.tp + 1.0) * p.n * type_bytes(p.t);
  c.flops = (p.tp - 1.0) * p.n;
  return c;
}

// LayerCast's upcast has no CPU op: the CPU backend reads the bf16-rounded weights as floats, so
// the CPU side is the rows x cols block itself, and widening bf16 to f32 must be exact.
OpCase upcast_rows(const UpcastParams& p) {
  OpCase c = new_case("upcast_rows",
                      fmt::format("rows={} cols={} ld={} bf16->f32", p.rows, p.cols, p.ld), p);
  c.make_inputs = [p] {
    return OpData{
        {rounded(random_values(static_cast<size_t>(p.rows) * p.ld, p.seed), Storage::bf16)}, {}};
  };
  c.cpu = [p](const OpData& d) {
    return host_call(d, static_cast<size_t>(p.rows) * p.cols, [p](const OpData& in, auto& y) {
      for (int r = 0; r < p.rows; ++r) {
        const float* row = &in.f[UpcastParams::w][static_cast<size_t>(r) * p.ld];
        std::copy(row, row + p.cols, &y[static_cast<size_t>(r) * p.cols]);
      }
    });
  };
  c.bound = nmse_threshold(Storage::native, Match::exact);
  c.bound_reason = "bf16 -> f32 is exact";
  c.bytes = static_cast<double>(p.rows) * p.cols * 6;
  return c;
}

OpCase rmsnorm(const RmsnormParams& p) {
  using P = RmsnormParams;
  OpCase c =
      new_case("rmsnorm", fmt::format("rows={} dim={} {}", p.rows, p.dim, type_name(p.t)), p);
  c.make_inputs = [p] {
    return OpData{
        {rounded(random_values(static_cast<size_t>(p.rows) * p.dim, p.seed, -3.f, 3.f), p.t),
         rounded(random_values(p.dim, p.seed + 1, 0.5f, 1.5f), p.t)},
        {}};
  };
  c.cpu = [p](const OpData& d) {
    return host_call(d, static_cast<size_t>(p.rows) * p.dim, [p](const OpData& in, auto& y) {
      ops::rmsnorm<float>({y.data(), in.f[P::x].data(), in.f[P::w].data(), p.rows, p.dim, 1e-5,
                           stored_numerics(p.t)});
    });
  };
  c.reference = [p](const OpData& d) { return ref::rmsnorm(d.f[P::x], d.f[P::w], p.dim, 1e-5); };
  c.ref_bound = ref::bound(p.t, 1, Storage::native, p.dim + 4);
  c.ref_bound_reason = "dim squares summed in fp32, sqrt, divide, two products, one rounding";
  c.bound = nmse_threshold(p.t, Match::reordered);
  c.bound_reason = "tree vs sequential sum of squares";
  c.bytes = (2.0 * p.rows * p.dim + p.dim) * type_bytes(p.t);
  c.flops = 4.0 * p.rows * p.dim;
  return c;
}

OpCase rope(const RopeParams& p) {
  using P = RopeParams;
  OpCase c = new_case(
      "rope",
      fmt::format("rows={} heads={} head_dim={} {}", p.rows, p.heads, p.head_dim, type_name(p.t)),
      p);
  c.make_inputs = [p] {
    const size_t table = static_cast<size_t>(p.max_pos) * (p.head_dim / 2);
    const std::vector<float> ang = random_values(table, p.seed + 1, -3.14f, 3.14f);
    OpData d{
        {rounded(random_values(static_cast<size_t>(p.rows) * p.heads * p.head_dim, p.seed), p.t),
         std::vector<float>(table), std::vector<float>(table)},
        {{0, 1, 2, 57, p.max_pos - 1}}};
    for (size_t i = 0; i < table; ++i) {
      d.f[P::cos][i] = std::cos(ang[i]);
      d.f[P::sin][i] = std::sin(ang[i]);
    }
    return d;
  };
  c.cpu = [p](const OpData& d) {  // in place: each run rotates a fresh copy of x
    return host_call(d, d.f[P::x].size(), [p](const OpData& in, auto& y) {
      std::copy(in.f[P::x].begin(), in.f[P::x].end(), y.begin());
      ops::rope<float>({y.data(), p.rows, p.heads, p.head_dim, in.i[P::pos].data(),
                        in.f[P::cos].data(), in.f[P::sin].data(), stored_numerics(p.t)});
    });
  };
  c.reference = [p](const OpData& d) {
    return ref::rope(d.f[P::x], p.heads, p.head_dim, d.i[P::pos], d.f[P::cos], d.f[P::sin]);
  };
  c.ref_bound = ref::bound(p.t, 1, Storage::native, 3);
  c.ref_bound_reason = "two products and a sum in fp32, one output rounding";
  c.bound = nmse_threshold(p.t, Match::exact);
  c.bound_reason = "the same float operations";
  c.bytes = 2.0 * p.rows * p.heads * p.head_dim * type_bytes(p.t);
  c.flops = 3.0 * p.rows * p.heads * p.head_dim;
  return c;
}

OpCase attention(const AttentionParams& p) {
  using P = AttentionParams;
  OpCase c =
      new_case(p.tiled ? "attention_tiled" : "attention",
               fmt::format("rows={} last_pos={} heads={}/{} hd={} window={} splits={} f16acc={} {}",
                           p.rows, p.last_pos, p.n_heads, p.n_kv, p.head_dim, p.window, p.splits,
                           p.accum_f16, type_name(p.t)),
               p);
  const size_t slot_stride = static_cast<size_t>(p.capacity) * p.n_kv * p.head_dim;
  c.make_inputs = [p, slot_stride] {
    OpData d{
        {rounded(random_values(static_cast<size_t>(p.rows) * p.n_heads * p.head_dim, p.seed + 2),
                 p.t),
         rounded(random_values(p.slots * slot_stride, p.seed), p.t),
         rounded(random_values(p.slots * slot_stride, p.seed + 1), p.t)},
        {std::vector<int32_t>(p.rows), std::vector<int32_t>(p.rows, 1)}};
    for (int r = 0; r < p.rows; ++r) d.i[P::pos][r] = p.last_pos - (p.rows - 1 - r);
    return d;
  };
  const float scale = 1.f / std::sqrt(static_cast<float>(p.head_dim));
  c.cpu = [p, slot_stride](const OpData& d) {
    return host_call(d, d.f[P::q].size(), [p, slot_stride](const OpData& in, auto& y) {
      std::vector<float> scratch(2 * (p.last_pos + 1) + p.head_dim);
      ops::attention<float>(
          attention_call(p, y.data(), in.f[P::q].data(), in.f[P::k].data() + slot_stride,
                         in.f[P::v].data() + slot_stride, in.i[P::pos].data()),
          scratch.data());
    });
  };
  c.reference = [p, slot_stride, scale](const OpData& d) {
    return ref::attention(d.f[P::q], d.f[P::k].data() + slot_stride, d.f[P::v].data() + slot_stride,
                          d.i[P::pos], p.n_heads, p.n_kv, p.head_dim, p.window, scale);
  };
  c.ref_bound = ref::bound(p.t, 2, p.accum_f16 ? Storage::f16 : Storage::native,
                           p.head_dim + 2 * (p.last_pos + 1) + 2 * p.splits);
  c.ref_bound_reason = "dot products, softmax sum and P.V sums rounded; p and the output stored";
  c.bound = nmse_threshold(p.t, Match::reordered);
  c.bound_reason = p.tiled ? "tensor cores' order inside 16-wide steps, row sums by shuffles, expf"
                           : "softmax max and sum by tree reduction, expf";
  const double keys = p.window > 0 ? std::min(p.window, p.last_pos + 1) : p.last_pos + 1;
  const double q_dim = static_cast<double>(p.n_heads) * p.head_dim;
  c.bytes = (2 * p.rows * q_dim + 2 * keys * p.n_kv * p.head_dim) * type_bytes(p.t);
  c.flops = 4.0 * p.rows * q_dim * keys;
  return c;
}

// The KV-cache append has no CPU op: the CPU backend copies each sequence's rows into its cache
// (forward.h); the CPU side is that copy, and the device's must be exact.
OpCase kv_append(const KvAppendParams& p) {
  using P = KvAppendParams;
  OpCase c = new_case(
      "kv_append",
      fmt::format("rows={} kv_dim={} slots={} {}", p.rows, p.kv_dim, p.slots, type_name(p.t)), p);
  const size_t slot_stride = static_cast<size_t>(p.capacity) * p.kv_dim;
  c.make_inputs = [p] {
    OpData d{{rounded(random_values(static_cast<size_t>(p.rows) * p.kv_dim, p.seed), p.t),
              rounded(random_values(static_cast<size_t>(p.rows) * p.kv_dim, p.seed + 1), p.t)},
             {std::vector<int32_t>(p.rows), std::vector<int32_t>(p.rows)}};
    for (int r = 0; r < p.rows; ++r) {  // runs of rows per slot, the slots out of order
      d.i[P::slot][r] = (p.slots - 1 - r % p.slots);
      d.i[P::pos][r] = (r * 7) % p.capacity;
    }
    return d;
  };
  c.cpu = [p, slot_stride](const OpData& d) {  // output: the two caches (zeros elsewhere)
    return host_call(d, 2 * p.slots * slot_stride, [p, slot_stride](const OpData& in, auto& y) {
      std::fill(y.begin(), y.end(), 0.f);
      for (int r = 0; r < p.rows; ++r) {
        const size_t at = in.i[P::slot][r] * slot_stride + in.i[P::pos][r] * size_t(p.kv_dim);
        const size_t from = static_cast<size_t>(r) * p.kv_dim;
        std::copy_n(&in.f[P::k][from], p.kv_dim, &y[at]);
        std::copy_n(&in.f[P::v][from], p.kv_dim, &y[p.slots * slot_stride + at]);
      }
    });
  };
  c.bound = nmse_threshold(p.t, Match::exact);
  c.bound_reason = "a copy";
  c.bytes = 4.0 * p.rows * p.kv_dim * type_bytes(p.t);
  return c;
}

// Logits rows with what makes their summaries hard: in [-10, 10) rounded to t, then in row 1 a
// tie for the largest value (the lower id must win the argmax and come first in the top-k), -0
// and +0, and in row 2 many equal values around the top-k's threshold.
std::vector<float> logits_rows(const LogitsParams& p) {
  std::vector<float> x =
      rounded(random_values(static_cast<size_t>(p.rows) * p.vocab, p.seed, -10.f, 10.f), p.t);
  if (p.rows >= 3 && p.vocab >= 100) {
    float* r1 = &x[static_cast<size_t>(p.vocab)];
    r1[70] = r1[20] = r1[p.vocab - 1] = 50.f;
    r1[30] = 0.f;
    r1[31] = -0.f;
    float* r2 = &x[2 * static_cast<size_t>(p.vocab)];
    for (int i = 0; i < p.vocab; i += 3) r2[i] = 7.f;
  }
  return x;
}

// The greedy token of each row under both tie rules (ds::greedy_argmax, in double on the host).
OpCase logits_argmax(const LogitsParams& p) {
  OpCase c = new_case("logits_argmax",
                      fmt::format("rows={} vocab={} {}", p.rows, p.vocab, type_name(p.t)), p);
  c.make_inputs = [p] { return OpData{{logits_rows(p)}, {}}; };
  c.cpu = [p](const OpData& d) {  // output: the rows' lowest-id choices, then highest-id ones
    return host_call(d, 2 * p.rows, [p](const OpData& in, auto& y) {
      for (int r = 0; r < p.rows; ++r) {
        const float* row = &in.f[LogitsParams::x][static_cast<size_t>(r) * p.vocab];
        const std::vector<double> wide(row, row + p.vocab);
        y[r] = static_cast<float>(greedy_argmax(wide, false));
        y[p.rows + r] = static_cast<float>(greedy_argmax(wide, true));
      }
    });
  };
  c.metric = Metric::max_rel;
  c.bound = 0;
  c.bound_reason = "token ids: the same choice";
  c.bytes = static_cast<double>(p.rows) * p.vocab * type_bytes(p.t);
  c.flops = 2.0 * p.rows * p.vocab;
  return c;
}

// What a trace stores of each row (trace/topk.h top_k and log_sum_exp, as the writer takes them
// on the host).
OpCase logits_topk(const LogitsParams& p) {
  OpCase c =
      new_case("logits_topk",
               fmt::format("rows={} vocab={} k={} {}", p.rows, p.vocab, p.k, type_name(p.t)), p);
  c.make_inputs = [p] { return OpData{{logits_rows(p)}, {}}; };
  c.cpu = [p](const OpData& d) {  // output: ids (rows, k), values (rows, k), lse (rows)
    const size_t nk = static_cast<size_t>(p.rows) * p.k;
    return host_call(d, 2 * nk + p.rows, [p, nk](const OpData& in, auto& y) {
      for (int r = 0; r < p.rows; ++r) {
        const float* row = &in.f[LogitsParams::x][static_cast<size_t>(r) * p.vocab];
        const std::vector<double> wide(row, row + p.vocab);
        const trace::TopK t = trace::top_k(wide, p.k);
        for (int i = 0; i < p.k; ++i) {
          y[static_cast<size_t>(r) * p.k + i] = static_cast<float>(t.ids[i]);
          y[nk + static_cast<size_t>(r) * p.k + i] = static_cast<float>(t.logits[i]);
        }
        y[2 * nk + r] = static_cast<float>(trace::log_sum_exp(wide));
      }
    });
  };
  c.metric = Metric::max_rel;
  c.bound = 1.2e-7;
  c.bound_reason =
      "ids and values exact; the log-sum-exp summed in double in another order, "
      "rounded to float: at most one float ulp (2^-23 relative)";
  c.bytes = static_cast<double>(p.rows) * p.vocab * type_bytes(p.t);
  c.flops = 8.0 * p.rows * p.vocab;
  return c;
}

struct GemmRun {
  Storage x_t, w_t;
  int split;
  bool accum_f16, bias;
};

void add_gemms(std::vector<OpCase>& cases) {
  // Around the 64 x 64 x 16 tiles: below, at and past each boundary; M = 1 is the decode GEMV.
  const int shapes[][3] = {{1, 1, 1},    {1, 64, 16},   {1, 65, 17},    {7, 63, 15},  {64, 64, 64},
                           {65, 65, 65}, {3, 200, 257}, {130, 33, 100}, {1, 96, 1024}};
  const GemmRun tiled[] = {{Storage::native, Storage::native, 1, false, false},
                           {Storage::native, Storage::native, 3, false, true},
                           {Storage::f16, Storage::f16, 1, false, true},
                           {Storage::f16, Storage::f16, 4, true, false},
                           {Storage::bf16, Storage::bf16, 2, false, true},
                           {Storage::bf16, Storage::bf16, 1, true, false},
                           {Storage::native, Storage::bf16, 1, false, true},  // layercast
                           {Storage::native, Storage::bf16, 4, false, false}};
  uint32_t seed = 100;
  for (const auto& s : shapes) {
    for (const GemmRun& r : tiled) {
      cases.push_back(gemm({s[0], s[1], s[2], r.x_t, r.w_t, r.split, r.accum_f16, r.bias,
                            GemmEngine::tiled, seed += 3}));
    }
  }
  seed = 900;
  for (const auto& s : shapes) {
    for (Storage t : kTypes) {
      for (int split : {0, 1, 2}) {  // 0: cuBLASLt's own choice
        cases.push_back(gemm(
            {s[0], s[1], s[2], t, t, split, false, split == 2, GemmEngine::cublas, seed += 3}));
      }
    }
  }
  cases.push_back(gemm({33, 200, 512, Storage::native, Storage::native, 1, false, false,
                        GemmEngine::cublas_tf32, 77}));
}

void add_attention(std::vector<OpCase>& cases) {
  // rows, last_pos, heads, kv heads, head_dim, window, splits: GQA, sliding window, split-KV
  const int shapes[][7] = {
      {1, 0, 4, 4, 8, 0, 1},     {1, 40, 4, 4, 64, 0, 1},  {1, 40, 8, 2, 64, 0, 3},
      {1, 63, 8, 2, 128, 0, 16}, {7, 6, 4, 2, 64, 0, 1},   {7, 30, 4, 2, 64, 5, 1},
      {1, 50, 4, 4, 32, 9, 4},   {33, 40, 6, 3, 64, 0, 1}, {2, 63, 8, 8, 128, 0, 64}};
  uint32_t seed = 500;
  for (Storage t : kTypes) {
    for (const auto& s : shapes) {
      for (bool f16acc : {false, true}) {
        if (f16acc && t == Storage::native) continue;  // fp16 accumulation goes with 16-bit types
        cases.push_back(
            attention({t, s[0], s[1], s[2], s[3], s[4], s[5], s[6], f16acc, 64, 2, seed + 1}));
        seed += 3;
      }
    }
  }
  // FlashAttention-2's order (16-bit types: tensor cores): one and several 64-row query tiles and
  // 64-key tiles, rows starting mid-tile, sliding windows that start mid-tile, GQA, every head
  // size the CUDA kernel has (16, 32, 64, 128).
  const int tiled[][6] = {{1, 0, 4, 4, 16, 0},      {7, 6, 4, 2, 64, 0},     {70, 69, 4, 2, 64, 0},
                          {130, 200, 8, 2, 128, 0}, {33, 100, 6, 3, 32, 40}, {1, 150, 8, 8, 128, 0},
                          {65, 64, 2, 1, 16, 17},   {64, 127, 4, 4, 128, 70}};
  for (Storage t : {Storage::f16, Storage::bf16}) {
    for (const auto& s : tiled) {
      const int capacity = (s[1] / 64 + 1) * 64;
      cases.push_back(attention(
          {t, s[0], s[1], s[2], s[3], s[4], s[5], 1, false, capacity, 2, seed += 3, true}));
    }
  }
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> cases;
  add_gemms(cases);
  for (Storage t : kTypes) {
    cases.push_back(embedding({t, 37, 300, 1}));
    cases.push_back(elementwise({Elementwise::add, t, 70001, 2}));  // past one grid-stride pass
    cases.push_back(elementwise({Elementwise::cast, t, 70001, 4}));
    cases.push_back(elementwise({Elementwise::swiglu, t, 12345, 5}));
  }
  for (Storage t : kTypes) {
    for (int tp : {1, 2, 3, 4, 5}) {
      for (ops::AllReduce order : {ops::AllReduce::ring, ops::AllReduce::tree}) {
        cases.push_back(all_reduce({t, tp, 4099, order, static_cast<uint32_t>(20 + tp)}));
      }
    }
  }
  cases.push_back(upcast_rows({37, 24, 96, 30}));  // a tensor-parallel shard: rows end before ld
  uint32_t seed = 301;
  for (Storage t : kTypes) {
    for (int dim : {1, 31, 64, 257, 1024, 4096, 5000}) {  // > 1024: several values per thread
      cases.push_back(rmsnorm({t, 3, dim, seed}));
      seed += 2;
    }
  }
  for (Storage t : kTypes) {
    for (int head_dim : {2, 8, 64, 128}) cases.push_back(rope({t, 5, 3, head_dim, 100, 7}));
  }
  add_attention(cases);
  for (Storage t : kTypes) cases.push_back(kv_append({t, 9, 24, 16, 3, 40}));
  for (Storage t : kTypes) {
    for (int vocab : {1, 100, 32000}) {
      cases.push_back(logits_argmax({t, 3, vocab, LogitsOp::argmax, 0, 9}));
      for (int k : {1, 20, 1024}) {
        if (k <= vocab) cases.push_back(logits_topk({t, 3, vocab, LogitsOp::topk, k, 11}));
      }
    }
  }
  cases.push_back(logits_topk({Storage::bf16, 2, 152064, LogitsOp::topk, 20, 13}));  // Qwen2's
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = all_cases();
  return cases;
}

}  // namespace ds::test
