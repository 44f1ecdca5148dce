// Start-up cost of the driftscope executable: wall time and peak RSS of `driftscope --version`
// and of a 1-token `generate` on the bundled model, beside /bin/true (the cost of fork + exec
// itself), each run interleaved 21 times; medians and the largest peak RSS are printed.
// Usage: bench_startup [path/to/driftscope ...]   (several executables: measured side by side,
// e.g. a build before a change against one after it)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/child_process.h"

namespace {

struct Sample {
  double ms;
  long rss_kib;
};

Sample run(const std::vector<std::string>& argv) {
  const ds::bench::ChildRun c = ds::bench::run_child(argv, /*quiet_stdout=*/true);
  return {c.wall * 1e3, c.max_rss_kb};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> exes;
  for (int i = 1; i < argc; ++i) exes.emplace_back(argv[i]);
  if (exes.empty()) exes.emplace_back(DRIFTSCOPE_EXE);
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"/bin/true", {"/bin/true"}}};
  for (const std::string& exe : exes) {
    cases.push_back({exe + " --version", {exe, "--version"}});
    cases.push_back({exe + " generate (1 token)",
                     {exe, "generate", "--prompt", "Once upon a time", "--max-new", "1"}});
  }
  std::vector<std::vector<Sample>> samples(cases.size());
  for (int i = 0; i < 21; ++i) {
    for (size_t c = 0; c < cases.size(); ++c) samples[c].push_back(run(cases[c].second));
  }
  std::printf("%-60s %10s %13s\n", "command", "median ms", "peak RSS MiB");
  double base = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<double> ms;
    long rss = 0;
    for (const Sample& s : samples[c]) {
      ms.push_back(s.ms);
      rss = std::max(rss, s.rss_kib);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    if (c == 0) base = med;
    std::printf("%-60s %10.2f %13.1f   (%.1fx /bin/true)\n", cases[c].first.c_str(), med,
                rss / 1024.0, med / base);
  }
  return 0;
}
