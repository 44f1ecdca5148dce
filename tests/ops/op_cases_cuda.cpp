// The CUDA half of the op table: for each kind of op, its call of kernels/cuda/ops_cuda.h on
// device copies of the case's inputs. Compiled only into the CUDA targets.
#include "tests/ops/op_cases_cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/ops_cuda.h"
#include "tests/cuda/device_array.h"

namespace ds::test {
namespace {

using Array = std::shared_ptr<DeviceArray>;
Array upload(const std::vector<float>& v, Storage t) {
  return std::make_shared<DeviceArray>(v, t);
}
Array zeros(size_t n, Storage t) {
  return std::make_shared<DeviceArray>(n, t);
}
using Ints = std::shared_ptr<DeviceInts<int32_t>>;
Ints upload(const std::vector<int32_t>& v) {
  return std::make_shared<DeviceInts<int32_t>>(v);
}

// A call whose output is `out`; `run` holds (captures) every buffer it reads.
OpCall device_call(const Array& out, std::function<void()> run) {
  return {std::move(run), [out] { return out->download(); }};
}

// Restores an in-place op's input before each run: `work` = `pristine`, on the default stream.
void restore(const DeviceArray& work, const DeviceArray& pristine, size_t n) {
  DS_CUDA_CHECK(cudaMemcpyAsync(work.get(), pristine.get(), n * cuda::storage_bytes(work.type()),
                                cudaMemcpyDeviceToDevice, nullptr));
}

// One cuBLASLt handle and plan cache for every case, made on first use.
cuda::CublasGemm& cublas() {
  static cuda::CublasGemm gemm;
  return gemm;
}

OpCall call(const GemmParams& p, const OpData& d) {
  using P = GemmParams;
  const Array x = upload(d.f[P::x], p.x_t), w = upload(d.f[P::w], p.w_t),
              b = upload(d.f[P::b], p.w_t), y = zeros(static_cast<size_t>(p.M) * p.N, p.x_t);
  cuda::GemmArgs g{{y->get(), p.x_t},
                   {x->get(), p.x_t},
                   {w->get(), p.w_t},
                   {p.bias ? b->get() : nullptr, p.w_t},
                   p.M,
                   p.N,
                   p.K,
                   p.K,
                   p.K,
                   0,
                   gemm_numerics(p)};
  g.num.split = p.split;  // cuBLASLt's 0 (its own choice) kept
  if (p.engine == GemmEngine::tiled) {
    const Array ws =
        zeros(std::max<size_t>(1, cuda::gemm_tiled_workspace_floats(g)), Storage::native);
    return device_call(y, [g, x, w, b, ws] { cuda::gemm_tiled(g, ws->as<float>(), nullptr); });
  }
  const bool tf32 = p.engine == GemmEngine::cublas_tf32;
  return device_call(y, [g, x, w, b, tf32, split = p.split] {
    try {
      cublas().run(g, tf32, nullptr);
    } catch (const std::exception& e) {
      // an explicit split-K that no cuBLASLt algorithm offers for this shape is refused with a
      // hint; that is the documented behaviour, not a wrong result
      if (split >= 2 && std::string(e.what()).find("split-K") != std::string::npos) {
        throw OpDeclined(e.what());
      }
      throw;
    }
  });
}

OpCall call(const ElementwiseParams& p, const OpData& d) {
  using P = ElementwiseParams;
  const Array y = zeros(p.n, p.t);
  if (p.kind == Elementwise::cast) {
    const Array src = upload(d.f[P::a], Storage::native);
    return device_call(
        y, [p, y, src] { cuda::cast(y->get(), p.t, src->get(), Storage::native, p.n, nullptr); });
  }
  const Array a = upload(d.f[P::a], p.t), b = upload(d.f[P::b], p.t);
  if (p.kind == Elementwise::add) {
    return device_call(
        y, [p, y, a, b] { cuda::add(y->get(), a->get(), b->get(), p.t, p.n, nullptr); });
  }
  return device_call(
      y, [p, y, a, b] { cuda::swiglu(y->get(), a->get(), b->get(), p.t, p.n, nullptr); });
}

OpCall call(const EmbeddingParams& p, const OpData& d) {
  const int n = static_cast<int>(d.i[EmbeddingParams::ids].size());
  const Array table = upload(d.f[EmbeddingParams::table], p.t),
              out = zeros(static_cast<size_t>(n) * p.dim, p.t);
  const Ints ids = upload(d.i[EmbeddingParams::ids]);
  return device_call(out, [p, n, table, out, ids] {
    cuda::embedding(out->get(), p.t, table->get(), p.t, ids->get(), n, p.dim, nullptr);
  });
}

OpCall call(const AllReduceParams& p, const OpData& d) {
  const Array pristine = upload(d.f[AllReduceParams::parts], p.t), parts = zeros(p.n * p.tp, p.t),
              y = zeros(p.n, p.t);
  return device_call(y, [p, pristine, parts, y] {  // the op clobbers its parts
    restore(*parts, *pristine, p.n * p.tp);
    cuda::all_reduce(y->get(), parts->get(), p.t, p.tp, p.n, p.order, nullptr);
  });
}

OpCall call(const UpcastParams& p, const OpData& d) {
  const Array w = upload(d.f[UpcastParams::w], Storage::bf16),
              up = zeros(static_cast<size_t>(p.rows - 1) * p.ld + p.cols, Storage::native);
  return {[p, w, up] {
            cuda::upcast_rows(up->get(), Storage::native, w->get(), Storage::bf16, p.rows, p.cols,
                              p.ld, nullptr);
          },
          [p, up] {  // the rows x cols block, as the CPU side holds it
            const std::vector<float> span = up->download();
            std::vector<float> block;
            for (int r = 0; r < p.rows; ++r) {
              const auto row = span.begin() + static_cast<size_t>(r) * p.ld;
              block.insert(block.end(), row, row + p.cols);
            }
            return block;
          }};
}

OpCall call(const RmsnormParams& p, const OpData& d) {
  const Array x = upload(d.f[RmsnormParams::x], p.t), w = upload(d.f[RmsnormParams::w], p.t),
              y = zeros(d.f[RmsnormParams::x].size(), p.t);
  return device_call(y, [p, x, w, y] {
    cuda::rmsnorm({{y->get(), p.t},
                   {x->get(), p.t},
                   {w->get(), p.t},
                   p.rows,
                   p.dim,
                   1e-5,
                   stored_numerics(p.t)},
                  nullptr);
  });
}

OpCall call(const RopeParams& p, const OpData& d) {
  using P = RopeParams;
  const size_t n = d.f[P::x].size();
  const Array pristine = upload(d.f[P::x], p.t), x = zeros(n, p.t),
              cs = upload(d.f[P::cos], Storage::native), sn = upload(d.f[P::sin], Storage::native);
  const Ints pos = upload(d.i[P::pos]);
  return device_call(x, [p, n, pristine, x, cs, sn, pos] {  // in place: rotate a fresh copy
    restore(*x, *pristine, n);
    cuda::rope({{x->get(), p.t},
                p.rows,
                p.heads,
                p.head_dim,
                pos->get(),
                cs->as<float>(),
                sn->as<float>(),
                stored_numerics(p.t)},
               nullptr);
  });
}

OpCall call(const AttentionParams& p, const OpData& d) {
  using P = AttentionParams;
  const Array q = upload(d.f[P::q], p.t), k = upload(d.f[P::k], p.t), v = upload(d.f[P::v], p.t),
              out = zeros(d.f[P::q].size(), p.t);
  const Ints pos = upload(d.i[P::pos]), slot = upload(d.i[P::slot]);
  cuda::AttentionArgs a = attention_call<cuda::DevicePtr>(
      p, {out->get(), p.t}, {q->get(), p.t}, {k->get(), p.t}, {v->get(), p.t}, pos->get());
  a.row_slot = slot->get();
  a.slot_stride = static_cast<size_t>(p.capacity) * p.n_kv * p.head_dim;
  if (p.tiled) {  // the rows (one sequence) in tiles of 64
    std::vector<int32_t> tiles;
    for (int r = 0; r < p.rows; r += 64) tiles.insert(tiles.end(), {r, std::min(r + 64, p.rows)});
    const Ints t = upload(tiles);
    const int n_tiles = static_cast<int>(tiles.size() / 2);
    return device_call(out, [a, q, k, v, out, pos, slot, t, n_tiles] {
      cuda::attention_tiled(a, reinterpret_cast<const cuda::AttentionTile*>(t->get()), n_tiles,
                            nullptr);
    });
  }
  const Array scratch = zeros(cuda::attention_scratch_floats(a), Storage::native);
  return device_call(out, [a, q, k, v, out, pos, slot, scratch] {
    cuda::attention(a, scratch->as<float>(), nullptr);
  });
}

OpCall call(const KvAppendParams& p, const OpData& d) {
  using P = KvAppendParams;
  const size_t slot_stride = static_cast<size_t>(p.capacity) * p.kv_dim;
  const Array k = upload(d.f[P::k], p.t), v = upload(d.f[P::v], p.t),
              caches = zeros(2 * p.slots * slot_stride, p.t);
  const Ints pos = upload(d.i[P::pos]), slot = upload(d.i[P::slot]);
  return device_call(caches, [p, k, v, caches, pos, slot, slot_stride] {
    unsigned char* base = caches->as<unsigned char>();
    cuda::kv_append(base, base + p.slots * slot_stride * cuda::storage_bytes(p.t), k->get(),
                    v->get(), p.t, p.rows, slot->get(), pos->get(), slot_stride, p.kv_dim, nullptr);
  });
}

// Device ints as floats (ids below 2^24 are exact), for the op table's float outputs.
std::vector<float> ints_as_floats(const int32_t* device, size_t n) {
  std::vector<int32_t> ids(n);
  DS_CUDA_CHECK(cudaMemcpy(ids.data(), device, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  return std::vector<float>(ids.begin(), ids.end());
}

OpCall call(const LogitsParams& p, const OpData& d) {
  const Array x = upload(d.f[LogitsParams::x], p.t);
  if (p.op == LogitsOp::argmax) {
    const Ints ids = upload(std::vector<int32_t>(2 * p.rows, -1));
    return {[p, x, ids] {
              cuda::logits_argmax(ids->get(), ids->get() + p.rows, x->get(), p.t, p.rows, p.vocab,
                                  nullptr);
            },
            [p, ids] { return ints_as_floats(ids->get(), 2 * p.rows); }};
  }
  const size_t nk = static_cast<size_t>(p.rows) * p.k;
  const Ints ids = upload(std::vector<int32_t>(nk, -1));
  const Array values = zeros(nk + p.rows, Storage::native);  // then the lse
  return {[p, nk, x, ids, values] {
            cuda::logits_topk(ids->get(), values->as<float>(), values->as<float>() + nk, x->get(),
                              p.t, p.rows, p.vocab, p.k, nullptr);
          },
          [nk, ids, values] {  // the CPU side's layout: ids, values, lse
            std::vector<float> out = ints_as_floats(ids->get(), nk);
            const std::vector<float> v = values->download();
            out.insert(out.end(), v.begin(), v.end());
            return out;
          }};
}

std::vector<OpCase> with_cuda() {
  std::vector<OpCase> cases = op_cases();
  for (OpCase& c : cases) {
    c.cuda = [params = c.params](const OpData& d) {
      return std::visit([&d](const auto& p) { return call(p, d); }, params);
    };
  }
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases_with_cuda() {
  static const std::vector<OpCase> cases = with_cuda();
  return cases;
}

}  // namespace ds::test
