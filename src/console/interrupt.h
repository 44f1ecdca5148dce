// Ctrl-C / SIGTERM / SIGHUP handling for long commands: the first signal asks the work to stop at
// the next step boundary (so traces stay consistent); a second one exits at once. The same
// signal from a second sender within 0.5 s is the first one again: `pkill` reaches a watched
// command and its watcher, which passes it on.
#pragma once

namespace ds {

// `doing` completes the line printed at the first signal: "interrupted, <doing> (again to
// abort)".
void install_interrupt_handlers(const char* doing = "finishing the trace");
bool interrupt_requested();

// For every command, from its start: SIGINT, SIGTERM and SIGHUP end the process as they would,
// after removing the hidden ".creating" files it was writing (common/output_file.h,
// CreatingFiles), so an interrupted command leaves nothing hidden behind. Commands that stop
// gracefully replace these with install_interrupt_handlers (whose abort removes them too).
void install_cleanup_handlers();

}  // namespace ds
