// A float32 weight tensor as a loaded model holds it: read-only values that are either a view into
// a mapped checkpoint file (when the file stores exactly the float32 values the runtime computes
// from) or owned values (converted or re-laid-out at load). Copies share the values; whoever holds
// one keeps its file mapping or its owned buffer alive, so a runtime can use the values in place.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace ds {

class WeightTensor {
 public:
  WeightTensor() = default;
  // Owned values (implicit, so loaders can assign a std::vector<float>).
  WeightTensor(std::vector<float> values)  // NOLINT(google-explicit-constructor)
      : owner_(std::make_shared<std::vector<float>>(std::move(values))) {
    const auto& v = *static_cast<const std::vector<float>*>(owner_.get());
    data_ = v.data();
    size_ = v.size();
  }
  // n values at `data`, which `owner` (a mapped file) keeps valid.
  static WeightTensor view(std::shared_ptr<const void> owner, const float* data, size_t n) {
    WeightTensor t;
    t.owner_ = std::move(owner);
    t.data_ = data;
    t.size_ = n;
    t.mapped_ = true;
    return t;
  }

  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  float operator[](size_t i) const { return data_[i]; }
  // true when the values lie in a mapped file (nothing was copied at load)
  bool mapped() const { return mapped_; }
  // What keeps the values valid; share it to use data() beyond this tensor's lifetime.
  const std::shared_ptr<const void>& owner() const { return owner_; }
  std::vector<float> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const WeightTensor& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < b.size(); ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }

 private:
  std::shared_ptr<const void> owner_;
  const float* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace ds
