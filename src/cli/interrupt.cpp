// SIGINT / SIGTERM -> a flag polled between generation steps.
#include "src/cli/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ds {
namespace {

std::atomic<int> g_signals{0};

void on_signal(int sig) {
  if (g_signals.fetch_add(1) >= 1) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  const char msg[] = "\ndriftscope: interrupted, finishing the trace (again to abort)\n";
  [[maybe_unused]] auto n = ::write(2, msg, sizeof(msg) - 1);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_signals.load() > 0; }

}  // namespace ds
