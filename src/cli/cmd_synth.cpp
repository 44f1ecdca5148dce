// `driftscope synth`: write a Hugging Face checkpoint of a real model's shape with seeded random
// weights, for benchmarks at real size (the values are not meaningful; speed and memory are).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "common/error.h"
#include "src/cli/commands.h"
#include "src/cli/run_config_args.h"
#include "src/console/interrupt.h"
#include "src/console/output.h"
#include "src/console/progress.h"
#include "src/model/memory.h"
#include "src/model/synth.h"

namespace ds {
namespace {

struct SynthArgs {
  std::string shape;
  std::string out;
  std::string dtype = traits(SynthOptions{}.dtype).name;  // --dtype, parse_synth_dtype
  SynthOptions opt;
  bool list = false;
};

int run_synth(const SynthArgs& a) {
  if (a.list || a.shape.empty()) {
    fmt::print("{:<12} {:>6} {:>7} {:>7} {:>6} {:>5} {:>7} {:>15} {:>10}\n", "shape", "dim",
               "hidden", "layers", "heads", "kv", "vocab", "parameters", "bf16 GiB");
    for (const auto& s : synth_shapes()) {
      const auto& c = s.config;
      const int64_t n = parameter_count(c);
      fmt::print("{:<12} {:>6} {:>7} {:>7} {:>6} {:>5} {:>7} {:>15} {:>10.2f}\n", s.name, c.dim,
                 c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, n,
                 2.0 * n / (1 << 30));
    }
    if (!a.list) throw Error("synth needs --shape", "choose one of the shapes listed above");
    return 0;
  }
  if (a.out.empty()) throw Error("synth needs an output folder", "pass -o DIR");
  if (std::filesystem::exists(a.out) && !std::filesystem::is_directory(a.out)) {
    throw Error(fmt::format("'{}' exists and is not a folder", a.out),
                "synth -o takes a folder (it writes config.json and safetensors files into it); "
                "choose another path");  // --force overwrites a folder's files, never a file
  }
  const SynthShape& shape = synth_shape(a.shape);
  SynthOptions opt = a.opt;
  opt.dtype = parse_synth_dtype(a.dtype);
  Progress progress("synth");
  opt.progress = [&](uint64_t done, uint64_t total) { progress.update_bytes(done, total); };
  // Ctrl-C, SIGTERM, SIGHUP: stop after the block being written and remove what was begun (its
  // hidden .creating file among them), so that nothing blocks the next synth into the folder
  install_interrupt_handlers("removing the files synth began");
  opt.should_stop = interrupt_requested;
  try {
    write_synthetic_checkpoint(shape, opt, a.out);
  } catch (const SynthInterrupted& e) {
    progress.done();
    print_note("driftscope: {}\n", e.what());
    return 130;
  }
  progress.done();
  ModelConfig c = shape.config;
  if (a.opt.layers > 0) c.n_layers = a.opt.layers;
  print_note("driftscope: wrote {} ({}, {} parameters, {}, seed {})\n", a.out, shape.name,
             parameter_count(c), a.dtype, a.opt.seed);
  print_note(
      "memory: a CPU run needs {} (the {} weights, used where they lie in the file) plus {} of "
      "KV cache per token\n",
      format_bytes(weight_bytes(c, traits(opt.dtype).bytes)), a.dtype,
      format_bytes(kv_bytes_per_token(c, 4)));
  print_note("no tokenizer: generate --model {} --prompt-ids 1 prints token ids\n", a.out);
  return 0;
}

}  // namespace

CommandRun register_synth(CLI::App* cmd) {
  auto args = std::make_shared<SynthArgs>();
  cmd->description(
      "Write a Hugging Face checkpoint of a real model's shape (llama2-7b, llama3-8b, qwen2-7b, "
      "mistral-7b, ...) with seeded random weights, for speed and memory benchmarks. No "
      "tokenizer: prompt it with --prompt-ids, and generate prints token ids. Prints the memory a "
      "CPU run of it needs.");
  cmd->add_option("--shape", args->shape, "model shape (see --list)");
  cmd->add_option("-o,--output", args->out, "folder to write");
  cmd->add_option("--dtype", args->dtype, "tensor dtype: bf16, f16, f32")->capture_default_str();
  cmd->add_option("--seed", args->opt.seed, "seed of the random weights")
      ->check(seed_in_range())
      ->capture_default_str();
  cmd->add_option("--layers", args->opt.layers, "keep only the first N layers (0 = all)")
      ->capture_default_str();
  cmd->add_flag("--force", args->opt.force, "overwrite a non-empty output folder");
  cmd->add_flag("--list", args->list, "list the shapes with parameter counts");
  return [args] { return run_synth(*args); };
}

}  // namespace ds
