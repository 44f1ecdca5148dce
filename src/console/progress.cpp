// Progress lines: "run [seq 3/10] ######....  57/256 tokens  812 tok/s", and bytes or items.
#include "src/console/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "src/console/output.h"
#include "src/model/memory.h"

namespace ds {

Progress::Progress(std::string label)
    : label_(std::move(label)),
      enabled_(::isatty(2) != 0),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  done();
}

bool Progress::due() {
  if (!enabled_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return false;
  last_ = now;
  drawn_ = true;
  return true;
}

std::string Progress::bar(double fraction) const {
  const int width = 24;
  const int filled = std::clamp(static_cast<int>(fraction * width), 0, width);
  return std::string(filled, '#') + std::string(width - filled, '.');
}

void Progress::update(int seq, int n_seqs, int generated, int max_new) {
  ++tokens_;
  if (!due()) return;
  const double secs = std::chrono::duration<double>(last_ - start_).count();
  print_note("\r{} [seq {}/{}] {} {}/{} tokens  {:.0f} tok/s ", label_, seq + 1, n_seqs,
             bar(max_new > 0 ? static_cast<double>(generated) / max_new : 1.0), generated, max_new,
             secs > 0 ? tokens_ / secs : 0.0);
}

void Progress::update_bytes(uint64_t done, uint64_t total) {
  if (!due()) return;
  const double secs = std::chrono::duration<double>(last_ - start_).count();
  print_note("\r{} {} {} / {}  {}/s ", label_,
             bar(total > 0 ? static_cast<double>(done) / total : 1.0), format_bytes(done),
             format_bytes(total), format_bytes(secs > 0 ? static_cast<uint64_t>(done / secs) : 0));
}

void Progress::update_items(int done, int total, const char* what) {
  if (!due()) return;
  print_note("\r{} {} {}/{} {} ", label_, bar(total > 0 ? static_cast<double>(done) / total : 1.0),
             done, total, what);
}

void Progress::done() {
  if (drawn_) print_note("\r\033[K");
  drawn_ = false;
}

}  // namespace ds
