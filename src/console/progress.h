// A one-line progress indicator on stderr, drawn only when stderr is a terminal (so pipes, logs
// and tests see nothing of it).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ds {

class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  // Redraws at most 10 times a second.
  void update(int seq, int n_seqs, int generated, int max_new);
  // "synth ######.... 3.2 GiB / 14.2 GiB  410.0 MiB/s"
  void update_bytes(uint64_t done, uint64_t total);
  // "diff ######.... 12/32 sequences"
  void update_items(int done, int total, const char* what);
  void done();

 private:
  bool due();  // enabled, and nothing drawn in the last 100 ms
  std::string bar(double fraction) const;

  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  long long tokens_ = 0;
};

}  // namespace ds
