// Ctrl-C / SIGTERM handling for long commands: the first signal asks the work to stop at the
// next step boundary (so traces stay consistent); a second one exits at once.
#pragma once

namespace ds {

void install_interrupt_handlers();
bool interrupt_requested();

}  // namespace ds
