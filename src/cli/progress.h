// A one-line progress indicator on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <string>

namespace ds {

class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  // Redraws at most 10 times a second.
  void update(int seq, int n_seqs, int generated, int max_new);
  void done();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  long long tokens_ = 0;
};

}  // namespace ds
