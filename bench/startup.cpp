// Start-up cost of the driftscope executable: wall time and peak RSS of `driftscope --version`
// and of a 1-token `generate` on the bundled model, beside /bin/true (the cost of fork + exec
// itself), each run interleaved 21 times; medians and the largest peak RSS are printed.
// Usage: bench_startup [path/to/driftscope]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Sample {
  double ms;
  long rss_kib;
};

Sample run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* null = std::freopen("/dev/null", "w", stdout);
    (void)null;
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s exited with status %d\n", argv[0].c_str(), status);
    std::exit(3);
  }
  return {ms, ru.ru_maxrss};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string exe = argc > 1 ? argv[1] : DRIFTSCOPE_EXE;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"/bin/true", {"/bin/true"}},
      {"driftscope --version", {exe, "--version"}},
      {"driftscope generate (1 token)",
       {exe, "generate", "--prompt", "Once upon a time", "--max-new", "1"}},
  };
  std::vector<std::vector<Sample>> samples(cases.size());
  for (int i = 0; i < 21; ++i) {
    for (size_t c = 0; c < cases.size(); ++c) samples[c].push_back(run(cases[c].second));
  }
  std::printf("%-32s %12s %14s\n", "command", "median ms", "peak RSS MiB");
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
    std::printf("%-32s %12.2f %14.1f   (%.1fx /bin/true)\n", cases[c].first.c_str(), med,
                rss / 1024.0, med / base);
  }
  return 0;
}
