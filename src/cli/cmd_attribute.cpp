// `driftscope attribute A.h5 [--config B.toml | run-config flags]`: where drift is born. B runs
// teacher-forced on A's tokens with every layer shadowed on A's recorded inputs
// (src/experiment/attribution_run.h); diff/attribution.h turns the pairs into local vs inherited
// error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "diff/attribution.h"
#include "src/cli/commands.h"
#include "src/cli/diff_report.h"
#include "src/cli/model_args.h"
#include "src/cli/output.h"
#include "src/cli/report_file.h"
#include "src/cli/run_config_args.h"
#include "src/experiment/attribution_run.h"
#include "src/experiment/run_metadata.h"
#include "trace/reader.h"
#include "trace/schema.h"
#include "viewer/attribution_html.h"
#include "viewer/attribution_json.h"
#include "viewer/attribution_terminal.h"

namespace ds {
namespace {

struct AttributeArgs {
  std::string a;
  ModelArgs model;
  RunConfigArgs run;
  std::string json;
  std::string html;
  int width = 100;
  bool quiet = false;
};

// The sha256 of every model file a model_json lists.
std::set<std::string> file_hashes(const std::string& model_json) {
  std::set<std::string> out;
  const auto j = nlohmann::json::parse(model_json, nullptr, false);
  if (j.is_object() && j.contains("files") && j["files"].is_array()) {
    for (const auto& f : j["files"]) {
      if (f.contains("sha256") && f["sha256"].is_string())
        out.insert(f["sha256"].get<std::string>());
    }
  }
  return out;
}

// "dtype=bf16 split_k=2": B's fields that differ from A's recorded configuration (sampling and
// generation length aside: B is teacher-forced on A's tokens).
std::string config_difference(const std::string& a_json, const RunConfig& b) {
  const auto a = nlohmann::json::parse(a_json, nullptr, false);
  const auto bj = nlohmann::json::parse(to_json(b));
  std::string out;
  for (const auto& [key, value] : bj.items()) {
    if (key == "max_new" || key == "temperature" || key == "top_p" || key == "top_k" ||
        key == "seed" || key == "tie_break" || key == "repetition_penalty") {
      continue;
    }
    if (a.is_object() && a.contains(key) && a[key] == value) continue;
    out += (out.empty() ? "" : " ") + key + "=" +
           (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out.empty() ? "the same configuration as A" : out;
}

h5::Elem storage_elem(const std::string& dtype) {
  switch (activation_storage(parse_dtype(dtype))) {
    case Storage::bf16:
      return h5::Elem::BF16;
    case Storage::f16:
      return h5::Elem::F16;
    default:
      return h5::Elem::F32;  // fp32, layercast, and fp64 (compared in float32)
  }
}

int run_attribute(const AttributeArgs& args) {
  check_report_output(args.json, {args.a}, "--json");
  check_report_output(args.html, {args.a}, "--html");
  const RunConfig& rc = args.run.config;
  check_attribution_device(rc);
  apply_threads(args.run);  // before validate, which would look for the CUDA module
  validate(rc);
  if (print_dry_run(args.run)) return 0;
  const auto a = trace::TraceReader::open(args.a);
  LoadedModel lm =
      load_model_and_prompt(args.model, /*need_tokenizer=*/false, /*want_prompt=*/false);
  const ModelConfig& c = lm.model.config;
  const std::set<std::string> recorded = file_hashes(a.model_json());
  const std::set<std::string> loaded =
      file_hashes(model_identity_json(lm.model, nullptr, lm.tokenizer_path));
  if (!recorded.empty() && recorded != loaded) {
    throw Error(
        fmt::format("trace '{}' was recorded with other model files than the model loaded", args.a),
        "pass the model of A with --model");
  }
  // attention and MLP are separated when A holds every L<l>/resid_mid
  bool split = !a.sequence_indices().empty();
  if (split) {
    const trace::SequenceInfo s0 = a.sequence(a.sequence_indices().front());
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string want = trace::layer_site(l, "resid_mid");
      bool found = false;
      for (const auto& site : s0.sites) found |= site.name == want;
      split &= found;
    }
  }
  diff::AttributionBuilder builder(a, c.n_layers, split, storage_elem(rc.dtype));
  AttributionRunOptions opt;
  opt.config = rc;
  opt.split_mlp = split;
  run_attribution(lm.model, a, opt, [&](const PairedRows& p) {
    diff::TapOrigin o = diff::TapOrigin::run;
    if (p.shadow) {
      switch (*p.shadow) {
        case ShadowKind::layer:
          o = diff::TapOrigin::layer_shadow;
          break;
        case ShadowKind::mlp:
          o = diff::TapOrigin::mlp_shadow;
          break;
        case ShadowKind::head:
          o = diff::TapOrigin::head_shadow;
          break;
      }
    }
    builder.add(o, p.seq, p.site, p.first_pos, p.rows, p.width, p.b, p.a);
  });
  const auto a_config = nlohmann::json::parse(a.config_json(), nullptr, false);
  const std::string a_dtype =
      a_config.is_object() && a_config.contains("dtype") && a_config["dtype"].is_string()
          ? a_config["dtype"].get<std::string>()
          : std::string("?");
  const diff::AttributionReport report =
      builder.finish(a_dtype, config_difference(a.config_json(), rc), to_json(rc));
  if (!args.json.empty()) write_json_text(viewer::render_attribution_json(report), args.json);
  if (!args.html.empty()) write_html_text(viewer::render_attribution_html(report), args.html);
  if (!args.quiet && args.json != "-") {
    const std::string text = viewer::render_attribution_terminal(report, args.width);
    write_stdout(text);
  }
  return 0;
}

}  // namespace

CommandRun register_attribute(CLI::App& app) {
  auto args = std::make_shared<AttributeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "attribute",
      "Where drift is born: run configuration B (run-config flags or --config B.toml) "
      "teacher-forced on reference trace A's tokens, and replay every layer of B on A's recorded "
      "input to that layer. Local error = B's layer on A's input vs A's output of that layer; "
      "inherited = total drift (B's own run vs A) minus local. Ranks layers by local error, marks "
      "the origins (local error above the noise floor) and says in one line where error is "
      "born. A needs embed, L*/out and final_norm (run --probes 'embed,L*/out,final_norm'); with "
      "L*/resid_mid too (--probes all) attention and MLP are told apart. CPU only. B consumes "
      "A's tokens, so the sampling and generation-length flags have no effect. "
      "Metrics: docs/metrics.md §10.");
  cmd->add_option("a", args->a, "reference trace (.h5), recorded with hidden states in f32")
      ->required();
  cmd->add_option("-m,--model", args->model.model,
                  "the model A was recorded with (llama2.c .bin or Hugging Face directory); "
                  "default: the bundled kjv-llama");
  add_run_config_options(*cmd, args->run);
  cmd->add_option("--json", args->json, "write the report as JSON to FILE, or - for stdout");
  cmd->add_option("--html", args->html,
                  "write the report as one self-contained HTML page to FILE (docs/html-report.md)");
  add_width_option(*cmd, args->width,
                   fmt::format("report width in columns, {}..{}", kMinReportWidth, kMaxReportWidth))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", args->quiet, "no terminal report");
  return [args, cmd] {
    apply_config_file(*cmd, args->run);
    return run_attribute(*args);
  };
}

}  // namespace ds
