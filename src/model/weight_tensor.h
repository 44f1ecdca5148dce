// A weight tensor as a loaded model holds it: read-only values in the format the checkpoint
// stores them, float32 or the bit patterns of bf16 / fp16 (widening either to float32 is exact),
// either a view into a mapped checkpoint file (nothing copied) or owned values (where the layout
// had to change at load, or the file's bytes were not aligned for their type). Copies share the
// values; whoever holds one keeps its file mapping or its owned buffer alive, so a runtime can
// use the values in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/error.h"
#include "common/float_formats.h"

namespace ds {

class WeightTensor {
 public:
  WeightTensor() = default;
  // Owned float32 values (implicit, so loaders can assign a std::vector<float>).
  WeightTensor(std::vector<float> values) {  // NOLINT(google-explicit-constructor)
    adopt(std::move(values), Storage::native);
  }
  // Owned bit patterns of a 16-bit format (Storage::bf16 or Storage::f16).
  static WeightTensor owned_halves(std::vector<uint16_t> bits, Storage format) {
    WeightTensor t;
    t.adopt(std::move(bits), format);
    return t;
  }
  // n values of `format` (native = float32) at `data`, which `owner` (a mapped file) keeps valid.
  static WeightTensor view(std::shared_ptr<const void> owner, const void* data, Storage format,
                           size_t n) {
    WeightTensor t;
    t.owner_ = std::move(owner);
    t.data_ = data;
    t.size_ = n;
    t.format_ = format;
    t.mapped_ = true;
    return t;
  }

  // How the values are stored: native = float32, bf16 or f16 = their bit patterns.
  Storage format() const { return format_; }
  // Bytes per value as stored (4 or 2) and of the whole tensor.
  size_t value_bytes() const { return format_ == Storage::native ? 4 : 2; }
  size_t bytes() const { return size_ * value_bytes(); }
  // The stored values, untyped (for kernels that read every format).
  const void* raw() const { return data_; }
  // The float32 values; only for a float32 tensor (a 16-bit one has no float32 copy).
  const float* data() const {
    if (format_ != Storage::native) throw Error("internal: float32 values of a 16-bit tensor");
    return static_cast<const float*>(data_);
  }
  // The bit patterns of a bf16 or f16 tensor.
  const uint16_t* halves() const {
    if (format_ == Storage::native) throw Error("internal: 16-bit values of a float32 tensor");
    return static_cast<const uint16_t*>(data_);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Value i widened to float32 (exact).
  float operator[](size_t i) const {
    switch (format_) {
      case Storage::bf16:
        return bf16_bits_to_f32(static_cast<const uint16_t*>(data_)[i]);
      case Storage::f16:
        return f16_bits_to_f32(static_cast<const uint16_t*>(data_)[i]);
      default:
        return static_cast<const float*>(data_)[i];
    }
  }
  // true when the values lie in a mapped file (nothing was copied at load)
  bool mapped() const { return mapped_; }
  // What keeps the values valid; share it to use the values beyond this tensor's lifetime.
  const std::shared_ptr<const void>& owner() const { return owner_; }
  // Every value widened to float32 (a copy: for tests, tools and small tensors).
  std::vector<float> to_vector() const {
    std::vector<float> out(size_);
    if (format_ == Storage::native) {
      for (size_t i = 0; i < size_; ++i) out[i] = static_cast<const float*>(data_)[i];
    } else {
      widen(halves(), out.data(), size_, format_);
    }
    return out;
  }

  friend bool operator==(const WeightTensor& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < b.size(); ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }

 private:
  template <typename V>
  void adopt(V values, Storage format) {
    auto p = std::make_shared<const V>(std::move(values));
    data_ = p->data();
    size_ = p->size();
    owner_ = std::move(p);
    format_ = format;
  }

  std::shared_ptr<const void> owner_;
  const void* data_ = nullptr;
  size_t size_ = 0;
  Storage format_ = Storage::native;
  bool mapped_ = false;
};

}  // namespace ds
