// The Runtime interface's own parts (runtime.h): the precision knob's names and storages, the
// single-sequence forward, and the choice of backend. The backends live in cpu_runtime.cpp and
// cuda/cuda_runtime.cpp (the latter in the CUDA module, reached through cuda_loader.cpp).
#include "src/runtime/runtime.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "src/runtime/numerics_plan.h"

namespace ds {

DType parse_dtype(const std::string& s) {
  if (s == "fp64") return DType::fp64;
  if (s == "fp32") return DType::fp32;
  if (s == "fp16") return DType::fp16;
  if (s == "bf16") return DType::bf16;
  if (s == "layercast") return DType::layercast;
  throw Error(fmt::format("unknown dtype '{}'", s),
              "--dtype takes fp64, fp32, fp16, bf16 or layercast");
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::fp64:
      return "fp64";
    case DType::fp32:
      return "fp32";
    case DType::fp16:
      return "fp16";
    case DType::bf16:
      return "bf16";
    case DType::layercast:
      return "layercast";
  }
  return "?";
}

Storage weight_storage(DType d) {
  switch (d) {
    case DType::fp16:
      return Storage::f16;
    case DType::bf16:
    case DType::layercast:
      return Storage::bf16;
    default:
      return Storage::native;
  }
}

Storage activation_storage(DType d) {
  switch (d) {
    case DType::fp16:
      return Storage::f16;
    case DType::bf16:
      return Storage::bf16;
    default:
      return Storage::native;
  }
}

int32_t greedy_argmax(std::span<const double> values, bool highest_id) {
  int32_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[best] || (highest_id && values[i] == values[best])) {
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

void Runtime::forward(std::span<const BatchRow> rows, std::vector<double>& logits) {
  PassLogits& out = forward(rows);
  logits.resize(static_cast<size_t>(out.rows()) * out.vocab());
  for (int r = 0; r < out.rows(); ++r) {
    const std::span<const double> row = out.row(r);
    std::copy(row.begin(), row.end(), logits.begin() + static_cast<ptrdiff_t>(r) * out.vocab());
  }
}

void Runtime::forward(std::span<const int32_t> tokens, int pos, std::vector<double>& logits) {
  std::vector<BatchRow> rows(tokens.size());
  for (size_t r = 0; r < tokens.size(); ++r) rows[r] = {0, pos + static_cast<int>(r), tokens[r]};
  forward(rows, logits);
}

void Runtime::set_shadow_source(ShadowSource* source) {
  if (source != nullptr) {
    throw Error("this runtime cannot run shadow layers", "run attribute with --device cpu");
  }
}

void Runtime::set_plan(NumericsPlan /*plan*/) {
  throw Error("this runtime takes no numerics plan");
}

std::unique_ptr<Runtime> make_runtime(const Model& model, const Numerics& numerics, int capacity,
                                      int slots) {
  return numerics.device == Device::cuda ? make_cuda_runtime(model, numerics, capacity, slots)
                                         : make_cpu_runtime(model, numerics, capacity, slots);
}

}  // namespace ds
