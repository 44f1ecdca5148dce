// The logits of one forward pass as a caller reads them: a whole row, or only its greedy choice,
// which a backend may compute where the logits are (the CUDA backend does it on the device, so a
// decode step copies one id per row to the host instead of a row of the vocabulary).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ds {

// The index of the largest value; among equal maxima the lowest index wins, or the highest with
// highest_id. A NaN is never larger than anything, so it is chosen only when it comes first and
// nothing after it is larger (the comparisons with it are false).
int32_t greedy_argmax(std::span<const double> values, bool highest_id);

// Row r (0 <= r < rows()) is the distribution of the token after input row r of the pass. Valid
// until the next forward pass of the runtime that returned it.
class PassLogits {
 public:
  virtual ~PassLogits() = default;
  virtual int rows() const = 0;
  virtual int vocab() const = 0;
  // Row r widened to double; the span is valid until the next row() call or forward pass.
  virtual std::span<const double> row(int r) = 0;
  // greedy_argmax(row(r), highest_id), without copying the row where the backend need not.
  virtual int32_t argmax(int r, bool highest_id) = 0;
};

// Logits held in host memory as double, (rows, vocab): the CPU backend's, and what the CUDA
// backend hands out when every row was copied anyway.
class HostPassLogits final : public PassLogits {
 public:
  // Takes the values of `rows` rows; the vector keeps its capacity across passes.
  std::vector<double>& reset(int rows, int vocab) {
    rows_ = rows;
    vocab_ = vocab;
    return values_;
  }
  int rows() const override { return rows_; }
  int vocab() const override { return vocab_; }
  std::span<const double> row(int r) override {
    return {values_.data() + static_cast<size_t>(r) * vocab_, static_cast<size_t>(vocab_)};
  }
  int32_t argmax(int r, bool highest_id) override { return greedy_argmax(row(r), highest_id); }

 private:
  std::vector<double> values_;
  int rows_ = 0, vocab_ = 0;
};

}  // namespace ds
