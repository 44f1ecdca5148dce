// Ctrl-C / SIGTERM / SIGHUP handling for long commands: the first signal asks the work to stop at
// the next step boundary (so traces stay consistent); a second one exits at once.
#pragma once

namespace ds {

// `doing` completes the line printed at the first signal: "interrupted, <doing> (again to
// abort)".
void install_interrupt_handlers(const char* doing = "finishing the trace");
bool interrupt_requested();

}  // namespace ds
