// CLI flags of the run configuration; every knob of docs/configurations.md.
#include "src/cli/run_config_args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <sstream>

#include "common/error.h"
#include "kernels/cpu/cpu_exec.h"
#include "src/model/text_file.h"

namespace ds {

CLI::Validator seed_in_range() {
  return CLI::Validator(
      [](std::string& v) {
        try {
          parse_seed(v);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      "", "SEED");
}

// One piece: a flat list of options, one per run-config field, in the order --help shows them.
void add_run_config_options(CLI::App& cmd, RunConfigArgs& a) {
  RunConfig& c = a.config;
  cmd.add_option("--config", a.config_file,
                 "read the run configuration from a TOML file (keys: the field names, e.g. "
                 "dtype = \"bf16\"); flags given on the command line win");
  const char* g = "Run configuration (docs/configurations.md)";
  cmd.add_option("--device", c.device, "backend: cpu (reference; emulates GPU numerics) or cuda")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--dtype", c.dtype, "precision: fp64 (oracle), fp32, fp16, bf16, layercast")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--accum", c.accum, "GEMM/attention accumulation: fp32, fp16")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--batch", c.batch, "prompts co-batched in each forward pass")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--gemm-policy", c.gemm_policy,
                 "invariant (same reduction order for any batch) or heuristic (split-K from the "
                 "GEMM shape, like BLAS libraries)")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--split-k", c.split_k, "K-split of every GEMM: auto or N")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--tp", c.tp, "tensor-parallel degree (row-parallel layers reduce in tp shards)")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--allreduce", c.allreduce, "order of the tp all-reduce: ring, tree")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--attn-splits", c.attn_splits, "split-KV attention chunks: auto or N")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--prefill-chunk", c.prefill_chunk, "prompt tokens per prefill pass; 0 = all")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--prefix-cache", c.prefix_cache,
                 "on: the prompt prefix's KV comes from an earlier pass of its own")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--tie-break", c.tie_break, "greedy ties: lowest_id, highest_id")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--add-bos", c.add_bos, "auto (tokenizer config), on, off")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--repetition-penalty", c.repetition_penalty, "1 = off")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("-n,--max-new", c.max_new, "maximum number of new tokens per prompt")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--stop-token", c.stop_token,
                 "token that ends a sequence: auto (llama2.c .bin: BOS, id 1, as llama2.c's run.c; "
                 "Hugging Face: the EOS of tokenizer.json or config.json), none, or a token id")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--temperature", c.temperature, "0 = greedy")->capture_default_str()->group(g);
  cmd.add_option("--top-p", c.top_p, "nucleus sampling mass, 0 < p <= 1")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--top-k", c.top_k, "sample among the k most likely tokens; 0 = all")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--seed", c.seed,
                 "seed of the sampling noise, drawn per (prompt, step) so runs share it")
      ->check(seed_in_range())
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--kernel", c.kernel,
                 "op implementations, comma-separated: gemm=cublas (cuBLASLt) or gemm=tiled (own "
                 "kernel in the CPU reference's reduction order), GPU only; attention=rowwise "
                 "(whole-row softmax) or attention=tiled (FlashAttention-2's 64-key tiles, tensor "
                 "cores on the GPU, emulated on the CPU)")
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--tf32", c.tf32, "GPU only: TF32 tensor cores for fp32 cuBLAS GEMMs: off, on")
      ->capture_default_str()
      ->group(g);
  // Test-only (hidden from --help): plants a cause at one op (src/experiment/perturb.h).
  cmd.add_option("--test-perturb", c.test_perturb,
                 "test-only: perturb one op's output, <op>:<bf16|f16|+ulp|-ulp>")
      ->group("");
  cmd.add_flag("--dry-run", a.dry_run, "print the resolved configuration and exit");
  // Not a field of RunConfig: threads change the speed of the CPU backend, never its numbers.
  cmd.add_option("--threads", a.threads,
                 fmt::format("threads of the CPU backend, 1..{0} (default: every core this "
                             "process may use, at most {0}); any N gives the same bits",
                             ops::kMaxCpuThreads))
      ->type_name("N");
}

void add_compression_option(CLI::App& cmd, std::string& compression) {
  cmd.add_option("--compression", compression,
                 "filters of the trace's datasets: none (no filter: the cheapest to write and to "
                 "diff), deflate (HDF5 shuffle + deflate level 1: up to 16% smaller when "
                 "generation is fast, e.g. a small model with long sequences), or deflate1 ... "
                 "deflate9 (shuffle + deflate at that level); the values read back are the same "
                 "bits with any choice (docs/trace-format.md)")
      ->type_name("NAME")
      ->capture_default_str();
}

void apply_threads(const RunConfigArgs& a) {
  if (a.threads) {
    const std::string range = fmt::format(
        "--threads takes 1..{}; without it the CPU backend uses every core", ops::kMaxCpuThreads);
    if (*a.threads < 1) throw Error(fmt::format("--threads {} must be >= 1", *a.threads), range);
    if (*a.threads > ops::kMaxCpuThreads) {
      throw Error(fmt::format("--threads {} is more than {}", *a.threads, ops::kMaxCpuThreads),
                  range);
    }
    ops::set_cpu_threads(*a.threads);
  }
  // started now: a system that refuses them says so before any output file, and loading the
  // model scans its weights on them (check_finite_weights)
  ops::start_cpu_threads();
}

void apply_config_file(CLI::App& cmd, const RunConfigArgs& a) {
  if (a.config_file.empty()) return;
  std::istringstream in(read_text_file(
      a.config_file, kMaxRunConfigBytes, "config file",
      "--config takes a TOML file of run-config fields, such as configs/bf16-bs8.toml"));
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::Error& e) {
    throw Error(fmt::format("{}: {}", a.config_file, e.what()),
                "a run configuration is TOML, one 'field = value' a line (docs/configurations.md)");
  }
  for (const auto& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section markers
    std::string name = item.name;
    for (char& ch : name) ch = ch == '_' ? '-' : ch;
    CLI::Option* op = cmd.get_option_no_throw("--" + name);
    if (op == nullptr || name == "config" || name == "dry-run" || name == "threads" ||
        name == "compression") {
      throw Error(fmt::format("{}: unknown key '{}'", a.config_file, item.fullname()),
                  "keys are run-config fields: dtype, accum, batch, gemm_policy, split_k, tp, ...");
    }
    if (op->count() > 0) continue;  // given on the command line
    try {
      op->add_result(item.inputs);
      op->run_callback();
    } catch (const CLI::Error& e) {
      throw Error(fmt::format("{}: bad value for '{}': {}", a.config_file, item.name, e.what()),
                  "docs/configurations.md lists each field's values");
    }
  }
}

RunConfig with_given_flags(const CLI::App& cmd, RunConfig base,
                           const std::function<bool(const std::string&)>& pick) {
  CLI::App scratch;
  RunConfigArgs r{base, {}, false, {}};
  add_run_config_options(scratch, r);
  for (CLI::Option* op : scratch.get_options()) {
    if (op->get_lnames().empty() || op->get_expected_min() == 0) continue;  // --help, --dry-run
    const std::string name = op->get_lnames().front();
    const CLI::Option* given = cmd.get_option_no_throw("--" + name);
    if (name == "config" || given == nullptr || given->count() == 0 || !pick(name)) continue;
    op->add_result(given->results());
    op->run_callback();
  }
  return r.config;
}

RunConfig with_config_file(RunConfig base, const std::string& file) {
  if (file.empty()) return base;
  CLI::App scratch;
  RunConfigArgs r{base, file, false, {}};
  add_run_config_options(scratch, r);
  apply_config_file(scratch, r);
  return r.config;
}

bool print_dry_run(const RunConfigArgs& a) {
  if (!a.dry_run) return false;
  fmt::print("{}", to_toml(a.config));
  return true;
}

}  // namespace ds
