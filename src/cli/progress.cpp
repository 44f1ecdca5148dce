// Progress line: "run  [seq 3/10] ######....  57/256 tokens  812 tok/s".
#include "src/cli/progress.h"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>

namespace ds {

Progress::Progress(std::string label)
    : label_(std::move(label)),
      enabled_(::isatty(2) != 0),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { done(); }

void Progress::update(int seq, int n_seqs, int generated, int max_new) {
  ++tokens_;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const int width = 24;
  const int filled = max_new > 0 ? std::min(width, generated * width / max_new) : width;
  fmt::print(stderr, "\r{} [seq {}/{}] {}{} {}/{} tokens  {:.0f} tok/s ", label_, seq + 1, n_seqs,
             std::string(filled, '#'), std::string(width - filled, '.'), generated, max_new,
             secs > 0 ? tokens_ / secs : 0.0);
  drawn_ = true;
}

void Progress::done() {
  if (drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace ds
