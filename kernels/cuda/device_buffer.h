// The one device buffer type (and its pinned-host sibling) of the CUDA backend and its tests:
// memory that grows on demand; contents are not kept when it grows. Host C++ over the CUDA
// runtime API.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/float_formats.h"
#include "kernels/cuda/check.h"

namespace ds::cuda {

// How many times any DeviceBuffer or PinnedBuffer of the process has moved (been allocated
// anew): a recording of launches that holds their addresses (a CUDA graph) is valid only while
// this count is the one it was recorded at.
inline std::atomic<uint64_t>& buffer_moves() {
  static std::atomic<uint64_t> moves{0};
  return moves;
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { ensure(bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() { cudaFree(p_); }

  // At least `bytes` bytes. Growing waits for the device first: queued work may still use the
  // old memory.
  void ensure(size_t bytes) {
    if (bytes <= bytes_) return;
    if (p_ != nullptr) DS_CUDA_CHECK(cudaDeviceSynchronize());
    cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
    const cudaError_t e = cudaMalloc(&p_, bytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      p_ = nullptr;
      throw Error("CUDA: out of GPU memory allocating " + std::to_string(bytes >> 20) + " MiB",
                  "run fewer sequences at once (--batch), shorter prompts or fewer positions, a "
                  "16-bit --dtype, or on a device with more memory");
    }
    DS_CUDA_CHECK(e);
    bytes_ = bytes;
    ++buffer_moves();
  }
  void* get() const { return p_; }
  unsigned char* bytes() const { return static_cast<unsigned char*>(p_); }
  template <typename U>
  U* as() const {
    return static_cast<U*>(p_);
  }
  size_t size() const { return bytes_; }
  bool empty() const { return p_ == nullptr; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory for asynchronous copies, growing on demand.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { cudaFreeHost(p_); }
  void ensure(size_t bytes) {
    if (bytes <= bytes_) return;
    cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
    DS_CUDA_CHECK(cudaMallocHost(&p_, bytes));
    bytes_ = bytes;
    ++buffer_moves();
  }
  unsigned char* get() const { return static_cast<unsigned char*>(p_); }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// A non-blocking stream, synchronised and destroyed with its owner. Declare it before the
// members that hold its handle, so that it outlives them.
class OwnedStream {
 public:
  OwnedStream() { DS_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  ~OwnedStream() {
    cudaStreamSynchronize(s_);
    cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// n host floats into dst as storage t (rounded to nearest even when 16-bit), synchronously.
inline void upload(void* dst, const float* host, size_t n, Storage t) {
  if (n == 0) return;
  if (t == Storage::native) {
    DS_CUDA_CHECK(cudaMemcpy(dst, host, n * sizeof(float), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> bits(n);
  narrow(host, bits.data(), n, t);
  DS_CUDA_CHECK(cudaMemcpy(dst, bits.data(), n * sizeof(uint16_t), cudaMemcpyHostToDevice));
}

// n values of storage t at host memory p (e.g. pinned, after an async copy) widened to float.
inline void widen_host(const unsigned char* p, Storage t, size_t n, float* out) {
  if (t == Storage::native) {
    std::memcpy(out, p, n * sizeof(float));
    return;
  }
  std::vector<uint16_t> bits(n);
  std::memcpy(bits.data(), p, n * sizeof(uint16_t));
  widen(bits.data(), out, n, t);
}

}  // namespace ds::cuda
