// The CUDA backend's PassLogits (src/runtime/pass_logits.h): the logits stay on the device; the
// greedy choice of every row under both tie rules was copied to the host with the pass, and a
// whole row is copied only when asked for (or taken from the pass's copy of every row, when the
// trace wanted them all). Part of the CUDA module.
#pragma once

#include <cuda_runtime.h>

#include <span>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "src/runtime/pass_logits.h"

namespace ds::cuda {

class DeviceLogits final : public PassLogits {
 public:
  // Sets up the row copy's pinned buffer now, so that no buffer moves during later passes.
  DeviceLogits(int vocab, Storage t, cudaStream_t stream) : vocab_(vocab), t_(t), stream_(stream) {
    staging_.ensure(row_bytes());
    floats_.resize(vocab);
    row_.resize(vocab);
  }

  // A pass of `rows` rows: logits (rows, vocab) of t on the device; argmax (host) holds each
  // row's lowest-id greedy token, then each row's highest-id one; host_rows, when not null, holds
  // every row (pinned, a copy made by the pass).
  void set(int rows, const unsigned char* device, const int32_t* argmax,
           const unsigned char* host_rows) {
    rows_ = rows;
    device_ = device;
    argmax_ = argmax;
    host_rows_ = host_rows;
  }

  int rows() const override { return rows_; }
  int vocab() const override { return vocab_; }
  std::span<const double> row(int r) override {
    const unsigned char* from = nullptr;
    if (host_rows_ != nullptr) {
      from = host_rows_ + static_cast<size_t>(r) * row_bytes();
    } else {
      DS_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), device_ + static_cast<size_t>(r) * row_bytes(),
                                    row_bytes(), cudaMemcpyDeviceToHost, stream_));
      DS_CUDA_CHECK(cudaStreamSynchronize(stream_));
      from = staging_.get();
    }
    widen_host(from, t_, vocab_, floats_.data());
    row_.assign(floats_.begin(), floats_.end());
    return row_;
  }
  int32_t argmax(int r, bool highest_id) override { return argmax_[(highest_id ? rows_ : 0) + r]; }

 private:
  size_t row_bytes() const { return static_cast<size_t>(vocab_) * (t_ == Storage::native ? 4 : 2); }

  int vocab_;
  Storage t_;
  cudaStream_t stream_;
  int rows_ = 0;
  const unsigned char* device_ = nullptr;
  const int32_t* argmax_ = nullptr;
  const unsigned char* host_rows_ = nullptr;
  PinnedBuffer staging_;
  std::vector<float> floats_;
  std::vector<double> row_;
};

}  // namespace ds::cuda
