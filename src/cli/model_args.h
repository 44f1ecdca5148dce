// Options shared by every command that runs a model: --model, --tokenizer, --prompt, --prompt-ids.
// What they load: src/workflow/loaded_model.h.
#pragma once

#include "src/workflow/loaded_model.h"

namespace CLI {
class App;
}

namespace ds {

void add_model_options(CLI::App& cmd, ModelArgs& args);

}  // namespace ds
