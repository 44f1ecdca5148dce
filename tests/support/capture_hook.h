// A tap hook for tests that keeps a copy of every tapped tensor, per site, as float32 rows in
// the order they were produced (rows of slot 0 only).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/runtime/taps.h"

namespace ds::test {

class CaptureHook : public TapHook {
 public:
  bool wants(const Site&) override { return true; }
  void on_tap(const Site& site, const TapTensor& t) override {
    auto& rows = by_site[site_name(site)];
    for (int r = 0; r < t.rows; ++r) {
      if (t.slot[r] != 0) continue;
      for (int i = 0; i < t.width; ++i) {
        const size_t k = static_cast<size_t>(r) * t.width + i;
        rows.push_back(t.f32 != nullptr ? t.f32[k] : static_cast<float>(t.f64[k]));
      }
    }
  }
  std::map<std::string, std::vector<float>> by_site;  // site -> (rows, width) row-major
};

}  // namespace ds::test
