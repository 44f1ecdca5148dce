// Recordings of forward passes (CUDA graphs), replayed instead of launching a pass's kernels one
// by one when a later pass has the same shape: a decode step of the same batch launches the same
// kernels on the same buffers every time, only the tokens and positions (device memory) differ.
// A pass key is seen once eagerly (which sizes every buffer it uses), recorded the second time,
// replayed from then on; a recording is dropped when any device or pinned buffer has moved since
// (kernels/cuda/device_buffer.h buffer_moves). Part of the CUDA module.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"

namespace ds::cuda {

// `Saved`: what the backend must restore on a replay of what it did while recording (its list of
// pending taps).
template <typename Saved>
class PassGraphs {
 public:
  enum class Step { eager, record, replay };

  PassGraphs() = default;
  PassGraphs(const PassGraphs&) = delete;
  PassGraphs& operator=(const PassGraphs&) = delete;
  ~PassGraphs() { clear(); }

  // The stream the passes run on.
  void set_stream(cudaStream_t s) { stream_ = s; }

  // What this pass does: replay a recording of `key`, record it (the capture starts now), or run
  // eagerly. A capture left open by a pass that threw is closed and dropped first.
  Step begin(std::vector<int64_t> key) {
    abandon();
    drop_stale();
    for (Entry& e : entries_) {
      if (e.key == key) {
        e.last_use = ++clock_;
        current_ = &e;
        return step_ = Step::replay;
      }
    }
    current_ = nullptr;
    if (seen_.count(key) == 0) {
      if (seen_.size() >= kSeenKeys) seen_.clear();  // many one-off shapes: forget them
      seen_.insert(std::move(key));
      return step_ = Step::eager;
    }
    key_ = std::move(key);
    moves_at_capture_ = buffer_moves().load();
    DS_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    return step_ = Step::record;
  }

  Step step() const { return step_; }
  // On a replay: what the pass saved when it was recorded.
  const Saved& saved() const { return current_->saved; }

  // After the pass's last launch: a recording is kept with `saved` and launched; a replay is
  // launched. Nothing happens for an eager pass.
  void end(const Saved& saved) {
    if (step_ == Step::record) {
      cudaGraph_t graph = nullptr;
      DS_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
      if (buffer_moves().load() != moves_at_capture_) {
        cudaGraphDestroy(graph);
        throw Error("CUDA graph: a buffer moved while a pass was recorded (a driftscope bug)",
                    "set DRIFTSCOPE_CUDA_GRAPHS=0 to run without graphs, and report it");
      }
      cudaGraphExec_t exec = nullptr;
      const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      DS_CUDA_CHECK(made);
      if (entries_.size() >= kEntries) evict();
      entries_.push_back({std::move(key_), exec, moves_at_capture_, ++clock_, saved});
      current_ = &entries_.back();
    }
    if (step_ != Step::eager) DS_CUDA_CHECK(cudaGraphLaunch(current_->exec, stream_));
    step_ = Step::eager;
  }

  // Forgets every recording and every key seen (a new tap hook changes what a pass launches).
  void clear() {
    abandon();
    for (Entry& e : entries_) cudaGraphExecDestroy(e.exec);
    entries_.clear();
    seen_.clear();
    current_ = nullptr;
  }

  // Ends a capture a failed pass left open, keeping nothing of it.
  void abandon() {
    if (stream_ == nullptr) return;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
      cudaGraph_t graph = nullptr;
      cudaStreamEndCapture(stream_, &graph);
      if (graph != nullptr) cudaGraphDestroy(graph);
      cudaGetLastError();
    }
    step_ = Step::eager;
  }

 private:
  static constexpr size_t kEntries = 8;    // recordings kept (the least recently used goes)
  static constexpr size_t kSeenKeys = 64;  // keys remembered as seen once
  struct Entry {
    std::vector<int64_t> key;
    cudaGraphExec_t exec;
    uint64_t moves;
    uint64_t last_use;
    Saved saved;
  };

  void drop_stale() {
    const uint64_t now = buffer_moves().load();
    for (size_t i = 0; i < entries_.size();) {
      if (entries_[i].moves != now) {
        cudaGraphExecDestroy(entries_[i].exec);
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  void evict() {
    size_t oldest = 0;
    for (size_t i = 1; i < entries_.size(); ++i) {
      if (entries_[i].last_use < entries_[oldest].last_use) oldest = i;
    }
    cudaGraphExecDestroy(entries_[oldest].exec);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));
  }

  cudaStream_t stream_ = nullptr;
  std::vector<Entry> entries_;
  std::set<std::vector<int64_t>> seen_;
  std::vector<int64_t> key_;  // the key being recorded
  Entry* current_ = nullptr;  // the recording being replayed or just made
  uint64_t moves_at_capture_ = 0;
  uint64_t clock_ = 0;
  Step step_ = Step::eager;
};

}  // namespace ds::cuda
