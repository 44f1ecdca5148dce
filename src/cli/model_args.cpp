// The model and prompt options.
#include "src/cli/model_args.h"

#include <CLI/CLI.hpp>

namespace ds {

void add_model_options(CLI::App& cmd, ModelArgs& args) {
  cmd.add_option("-m,--model", args.model,
                 "Hugging Face model directory or llama2.c .bin (default: bundled kjv-llama)");
  cmd.add_option("--tokenizer", args.tokenizer,
                 "tokenizer.json, model directory or llama2.c tokenizer.bin (default: beside the "
                 "model)");
  auto* p = cmd.add_option("-p,--prompt", args.prompt,
                           "prompt text (BOS added as the tokenizer's config says); default: BOS "
                           "only");
  auto* ids = cmd.add_option("--prompt-ids", args.prompt_ids,
                             "prompt as token ids, e.g. 1,403,407 (used as given: no BOS added)");
  p->excludes(ids);
  cmd.add_flag("--no-special-in-text", args.no_special_in_text,
               "encode special-token markup in prompts (e.g. <|im_start|>) as plain text");
}

}  // namespace ds
