// SIGINT / SIGTERM -> a flag polled between generation steps.
#include "src/cli/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ds {
namespace {

std::atomic<int> g_signals{0};

// Async-signal-safe: only write(), signal() and raise().
void say(const char* msg, size_t n) {
  [[maybe_unused]] auto w = ::write(2, msg, n);
}

void on_signal(int sig) {
  if (g_signals.fetch_add(1) >= 1) {  // the second signal: die of it, as promised
    const char msg[] = "\ndriftscope: aborted\n";
    say(msg, sizeof(msg) - 1);
    std::signal(sig, SIG_DFL);
    std::raise(sig);  // blocked while this handler runs: delivered, default action, on return
    return;
  }
  const char msg[] = "\ndriftscope: interrupted, finishing the trace (again to abort)\n";
  say(msg, sizeof(msg) - 1);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);  // one handler at a time: a SIGTERM cannot cut into a SIGINT's
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() {
  return g_signals.load() > 0;
}

}  // namespace ds
