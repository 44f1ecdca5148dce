// `driftscope generate`: run the model on a prompt and print the continuation.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "common/printable.h"
#include "src/cli/commands.h"
#include "src/cli/model_args.h"
#include "src/cli/run_config_args.h"
#include "src/console/output.h"
#include "src/experiment/generate.h"
#include "src/experiment/prompts.h"
#include "src/experiment/run_config.h"
#include "src/runtime/runtime.h"

namespace ds {
namespace {

struct GenerateArgs {
  ModelArgs model;
  RunConfigArgs run;
  bool ids = false;
  bool quiet = false;
};

// Prints text as it grows: the part of decode(tokens) not printed yet. A trailing U+FFFD may be an
// incomplete UTF-8 sequence of byte-fallback tokens, so it is held back until the next token. On a
// terminal, control characters other than newlines are shown escaped (an ESC or the C1 CSI a model
// or prompt holds would drive the terminal); into a file or a pipe the text goes as it is.
class TextStreamer {
 public:
  explicit TextStreamer(const Tokenizer& tok) : tok_(tok), terminal_(isatty(STDOUT_FILENO) != 0) {}
  void update(const std::vector<int32_t>& tokens, bool final) {
    std::string text = decode_shown(tok_, tokens);
    size_t end = text.size();
    if (!final && text.ends_with("\xEF\xBF\xBD")) end -= 3;
    if (text.compare(0, printed_.size(), printed_) == 0 && end >= printed_.size()) {
      const std::string_view grown =
          std::string_view(text).substr(printed_.size(), end - printed_.size());
      write_stdout(terminal_ ? printable(grown, /*keep_newlines=*/true) : std::string(grown));
      flush_stdout();  // a closed pipe (`generate | head -c 100`) stops generation here
      printed_ = text.substr(0, end);
    }
  }

 private:
  const Tokenizer& tok_;
  const bool terminal_;
  std::string printed_;
};

int run_generate(const GenerateArgs& a) {
  const RunConfig& rc = a.run.config;
  validate(rc);
  apply_threads(a.run);
  if (print_dry_run(a.run)) return 0;
  // A text prompt needs a tokenizer; with --prompt-ids and none found, the output is ids too.
  LoadedModel lm = load_model_and_prompt(a.model, /*need_tokenizer=*/false);
  const bool print_ids = a.ids || !lm.tokenizer;
  if (print_ids && !a.ids && !a.quiet) {
    if (lm.tokenizer_error) {
      print_note(
          "driftscope: the tokenizer beside the model cannot be loaded ({}), printing "
          "token ids\n",
          lm.tokenizer_error->what());
    } else {
      print_note("driftscope: no tokenizer beside the model, printing token ids\n");
    }
  }
  const ModelConfig& c = lm.model.config;
  validate_for_model(rc, c);
  std::vector<Prompt> prompts{{a.model.prompt, lm.prompt}};
  apply_add_bos(prompts, rc.add_bos, lm.bos_id());
  lm.prompt = prompts[0].ids;
  GenerateOptions opt;
  opt.max_new = rc.max_new;
  opt.sampling = rc.sampling();
  opt.prefill_chunk = rc.prefill_chunk;
  opt.prefix_cache = rc.prefix_cache;
  opt.eos_id = stop_token_id(rc, lm.format_stop_id());
  auto rt = make_configured_runtime(
      lm.model, rc,
      needed_capacity(static_cast<int>(lm.prompt.size()), opt.max_new, c.max_seq_len));

  std::optional<TextStreamer> streamer;
  if (!print_ids) streamer.emplace(*lm.tokenizer);
  const auto t0 = std::chrono::steady_clock::now();
  GenerateResult res = generate(*rt, lm.prompt, opt, [&](const std::vector<int32_t>& tokens) {
    if (streamer) streamer->update(tokens, false);
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (streamer) {
    streamer->update(res.tokens, true);
    write_stdout("\n");
  } else {
    fmt::print("{}\n", fmt::join(res.tokens, " "));
  }
  flush_stdout();
  if (!a.quiet) {
    const int n_new = static_cast<int>(res.tokens.size()) - res.prompt_len;
    print_note("[{} {} | prompt {} tokens, generated {} | stop: {} | {:.1f} tok/s]\n",
               lm.model.path.filename().string(), dtype_name(rc.dtype), res.prompt_len, n_new,
               res.stop_reason, secs > 0 ? n_new / secs : 0.0);
  }
  return 0;
}

}  // namespace

CommandRun register_generate(CLI::App* cmd) {
  auto args = std::make_shared<GenerateArgs>();
  cmd->description(
      "Generate text from a prompt on the CPU reference backend (greedy unless --temperature > 0). "
      "Stops at the stop token (--stop-token: by default BOS for a llama2.c .bin, as its run.c, "
      "EOS for Hugging Face), after --max-new tokens, or at the model's context length.");
  add_model_options(*cmd, args->model);
  add_run_config_options(*cmd, args->run);
  cmd->add_flag("--ids", args->ids,
                "print token ids (prompt and generated) instead of text; the default for a model "
                "without a tokenizer, prompted with --prompt-ids");
  cmd->add_flag("-q,--quiet", args->quiet, "no summary line on stderr");
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    return run_generate(*args);
  };
}

}  // namespace ds
