// Device buffers for the [cuda] tests: upload host floats in a storage type, download as floats.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "kernels/cuda/ops_cuda.h"

namespace ds::test {

inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Rounds v to the storage type (what the device holds after upload).
inline float round_to(float v, cuda::DT t) {
  return t == cuda::DT::f32 ? v : (t == cuda::DT::f16 ? round_to_f16(v) : round_to_bf16(v));
}

class DeviceArray {
 public:
  DeviceArray(size_t n, cuda::DT t) : n_(n), t_(t) {
    cuda_ok(cudaMalloc(&p_, std::max<size_t>(1, n * cuda::dt_bytes(t))), "cudaMalloc");
    cuda_ok(cudaMemset(p_, 0, std::max<size_t>(1, n * cuda::dt_bytes(t))), "cudaMemset");
  }
  DeviceArray(const std::vector<float>& v, cuda::DT t) : DeviceArray(v.size(), t) { upload(v); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p_); }

  void upload(const std::vector<float>& v) {
    if (t_ == cuda::DT::f32) {
      cuda_ok(cudaMemcpy(p_, v.data(), v.size() * 4, cudaMemcpyHostToDevice), "upload");
      return;
    }
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      bits[i] = t_ == cuda::DT::f16 ? f32_to_f16_bits(v[i]) : f32_to_bf16_bits(v[i]);
    }
    cuda_ok(cudaMemcpy(p_, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), "upload");
  }

  std::vector<float> download() const {
    cuda_ok(cudaDeviceSynchronize(), "kernel");
    std::vector<float> out(n_);
    if (t_ == cuda::DT::f32) {
      cuda_ok(cudaMemcpy(out.data(), p_, n_ * 4, cudaMemcpyDeviceToHost), "download");
      return out;
    }
    std::vector<uint16_t> bits(n_);
    cuda_ok(cudaMemcpy(bits.data(), p_, n_ * 2, cudaMemcpyDeviceToHost), "download");
    for (size_t i = 0; i < n_; ++i) {
      out[i] = t_ == cuda::DT::f16 ? f16_bits_to_f32(bits[i]) : bf16_bits_to_f32(bits[i]);
    }
    return out;
  }

  void* get() const { return p_; }
  template <typename U>
  U* as() const {
    return static_cast<U*>(p_);
  }
  cuda::DT type() const { return t_; }

 private:
  void* p_ = nullptr;
  size_t n_;
  cuda::DT t_;
};

// Device copy of host ints.
template <typename I>
class DeviceInts {
 public:
  explicit DeviceInts(const std::vector<I>& v) {
    cuda_ok(cudaMalloc(&p_, std::max<size_t>(1, v.size() * sizeof(I))), "cudaMalloc");
    cuda_ok(cudaMemcpy(p_, v.data(), v.size() * sizeof(I), cudaMemcpyHostToDevice), "upload");
  }
  DeviceInts(const DeviceInts&) = delete;
  DeviceInts& operator=(const DeviceInts&) = delete;
  ~DeviceInts() { cudaFree(p_); }
  I* get() const { return static_cast<I*>(p_); }

 private:
  void* p_ = nullptr;
};

}  // namespace ds::test
