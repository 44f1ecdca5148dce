// Device arrays for the [cuda] tests over the backend's one buffer type (kernels/cuda/
// device_buffer.h): upload host floats in a storage type, download as floats.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/float_formats.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/ops_cuda.h"

namespace ds::test {

class DeviceArray {
 public:
  DeviceArray(size_t n, Storage t)
      : buf_(std::max<size_t>(1, n * cuda::storage_bytes(t))), n_(n), t_(t) {
    DS_CUDA_CHECK(cudaMemset(buf_.get(), 0, buf_.size()));
  }
  DeviceArray(const std::vector<float>& v, Storage t) : DeviceArray(v.size(), t) { upload(v); }

  void upload(const std::vector<float>& v) { cuda::upload(buf_.get(), v.data(), v.size(), t_); }

  std::vector<float> download() const {
    DS_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<unsigned char> raw(n_ * cuda::storage_bytes(t_));
    DS_CUDA_CHECK(cudaMemcpy(raw.data(), buf_.get(), raw.size(), cudaMemcpyDeviceToHost));
    std::vector<float> out(n_);
    cuda::widen_host(raw.data(), t_, n_, out.data());
    return out;
  }

  void* get() const { return buf_.get(); }
  template <typename U>
  U* as() const {
    return buf_.as<U>();
  }
  Storage type() const { return t_; }

 private:
  cuda::DeviceBuffer buf_;
  size_t n_;
  Storage t_;
};

// Device copy of host ints.
template <typename I>
class DeviceInts {
 public:
  explicit DeviceInts(const std::vector<I>& v) : buf_(std::max<size_t>(1, v.size() * sizeof(I))) {
    DS_CUDA_CHECK(cudaMemcpy(buf_.get(), v.data(), v.size() * sizeof(I), cudaMemcpyHostToDevice));
  }
  I* get() const { return buf_.as<I>(); }

 private:
  cuda::DeviceBuffer buf_;
};

}  // namespace ds::test
