// SIGINT / SIGTERM / SIGHUP -> a flag polled between generation steps (or by a sweep's wait).
#include "src/cli/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace ds {
namespace {

std::atomic<int> g_signals{0};
const char* g_doing = "finishing the trace";

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
  const char head[] = "\ndriftscope: interrupted, ";
  const char tail[] = " (again to abort)\n";
  say(head, sizeof(head) - 1);
  say(g_doing, std::strlen(g_doing));  // async-signal-safe in glibc
  say(tail, sizeof(tail) - 1);
}

}  // namespace

void install_interrupt_handlers(const char* doing) {
  g_doing = doing;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);  // one handler at a time: a SIGTERM cannot cut into a SIGINT's
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

bool interrupt_requested() {
  return g_signals.load() > 0;
}

}  // namespace ds
