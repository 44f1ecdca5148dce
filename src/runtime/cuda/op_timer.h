// Device time per op label of the CUDA backend, from events around each op (set
// DRIFTSCOPE_CUDA_OP_TIMES=1; graphs are then off, since a replay runs no op scope). The totals
// are printed to stderr when the runtime goes away: where a prefill or a decode step spends its
// time. Part of the CUDA module.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/check.h"

namespace ds::cuda {

class OpTimer {
 public:
  explicit OpTimer(cudaStream_t stream) : stream_(stream) {}
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;
  ~OpTimer() {
    print();
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  }

  // An event pair around launches labelled `label`: begin() before, end() after.
  void begin(const std::string& label) {
    cudaEvent_t start = take();
    DS_CUDA_CHECK(cudaEventRecord(start, stream_));
    open_.push_back({label, start});
  }
  void end() {
    if (open_.empty()) return;
    auto [label, start] = std::move(open_.back());
    open_.pop_back();
    cudaEvent_t stop = take();
    DS_CUDA_CHECK(cudaEventRecord(stop, stream_));
    done_.push_back({label, start, stop});
  }
  // After the stream is synchronised: adds the pass's times to the totals.
  void collect() {
    for (const Timed& t : done_) {
      float ms = 0;
      DS_CUDA_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
      auto& [total, count] = totals_[t.label];
      total += ms;
      ++count;
      pool_.push_back(t.start);
      pool_.push_back(t.stop);
    }
    done_.clear();
    ++passes_;
  }

 private:
  struct Timed {
    std::string label;
    cudaEvent_t start, stop;
  };
  cudaEvent_t take() {
    cudaEvent_t e = nullptr;
    if (!pool_.empty()) {
      e = pool_.back();
      pool_.pop_back();
    } else {
      DS_CUDA_CHECK(cudaEventCreate(&e));
    }
    return e;
  }
  void print() const {
    double all = 0;
    for (const auto& [label, tc] : totals_) all += tc.first;
    std::fprintf(stderr, "driftscope: CUDA op times over %d passes (ms, share, launches)\n",
                 passes_);
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [label, tc] : totals_) order.push_back({tc.first, label});
    std::sort(order.rbegin(), order.rend());
    for (const auto& [ms, label] : order) {
      std::fprintf(stderr, "  %-22s %10.3f  %5.1f%%  %d\n", label.c_str(), ms,
                   all > 0 ? 100 * ms / all : 0.0, totals_.at(label).second);
    }
  }

  cudaStream_t stream_;
  std::vector<std::pair<std::string, cudaEvent_t>> open_;
  std::vector<Timed> done_;
  std::vector<cudaEvent_t> pool_;
  std::map<std::string, std::pair<double, int>> totals_;
  int passes_ = 0;
};

}  // namespace ds::cuda
