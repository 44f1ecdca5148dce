// driftscope zoom A.h5 B.h5 -o DIR (docs/cli.md, "Zoom"). Two cheap first-pass traces of the
// bundled model (fp32 batch 1 and bf16 batch 4, --probes none) part at two of four prompts. The
// replays are checked against the original traces, not against zoom's own numbers: the flips are
// where the recorded tokens differ, A's replay must reproduce A's top-K bit for bit, and B's replay
// (on A's tokens, which are B's own up to the flip) must reproduce B's top-K bit for bit through
// the flip row. The aggregate (flips.json) is recomputed from the per-sequence reports zoom
// wrote. Then resuming, --seq, and the bad input that must be refused before DIR is made.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "src/model/sha256.h"
#include "tests/support/damage_trace.h"
#include "tests/support/paths.h"
#include "tests/support/run_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text.h"
#include "tests/support/zoom_fixture.h"
#include "trace/reader.h"

namespace fs = std::filesystem;
using ds::test::check_input_error;
using ds::test::damage;
using ds::test::first_pass;
using ds::test::flip_step;
using ds::test::has;
using ds::test::run_cli;
using nlohmann::json;

namespace {

constexpr int kLayers = 4;  // the bundled kjv-llama

// Top-K rows [0, n) of `seq_x` in x equal those of `seq_y` in y, ids and logits bit for bit.
void check_same_topk(const ds::trace::TraceReader& x, int seq_x, const ds::trace::TraceReader& y,
                     int seq_y, int64_t n) {
  const auto tx = x.topk(seq_x, 0, n), ty = y.topk(seq_y, 0, n);
  REQUIRE(tx.k == ty.k);
  CHECK(tx.ids == ty.ids);
  CHECK(tx.logits == ty.logits);
}

// The verdict blocks of an attribution report in forward order (attention and MLP per layer when
// split, else whole layers; final_norm), as docs/metrics.md §10 and §12 define them.
std::vector<json> verdict_blocks(const json& attribution) {
  std::vector<json> out;
  for (const auto& b : attribution["blocks"]) {
    const std::string kind = b["kind"];
    if (kind == "logits" || kind == "embed") continue;
    if (attribution["split"].get<bool>() == (kind == "layer")) continue;
    out.push_back(b);
  }
  return out;
}

// DIR/flips.json against the per-sequence reports zoom wrote (seq-<i>/diff.json and
// attribution.json) and the flips found from the traces' tokens (`steps`: seq -> step), each
// number recomputed here from those (docs/metrics.md §12).
void check_aggregate(const fs::path& z, const std::map<int, int>& steps) {
  const json agg = ds::test::slurp_json(z / "flips.json");
  REQUIRE(agg["format"] == "driftscope-flips");
  CHECK(agg["pairs"] == steps.size());
  CHECK(agg["flips"] == steps.size());
  const double t = agg["near_tie_logit"];
  std::vector<int> sorted;
  int near = 0, born_none = 0;
  std::vector<int> above(kLayers, 0);  // per layer: flips above L<l>/out's floor in the diff
  REQUIRE(agg["sequences"].size() == steps.size());
  for (const json& c : agg["sequences"]) {
    const int i = c["seq"];
    INFO("seq " << i);
    REQUIRE(steps.count(i) == 1);
    const fs::path d = z / ("seq-" + std::to_string(i));
    const json sd = ds::test::slurp_json(d / "diff.json")["sequences"][0];
    const json at = ds::test::slurp_json(d / "attribution.json");
    CHECK(c["flipped"] == true);
    CHECK(c["step"] == steps.at(i));
    const int row = sd["prompt_len"][0].get<int>() + steps.at(i) - 1;
    CHECK(c["row"] == row);
    const double margin = sd["first_flip"]["margin_logit_a"];
    CHECK(c["margin_logit_a"].get<double>() == Approx(margin).margin(1e-12));
    CHECK(c["margin_class"] == (margin < t ? "near_tie" : "accumulated"));
    near += margin < t;
    sorted.push_back(steps.at(i));
    CHECK(c["onset"].is_null() == sd["onset"].is_null());
    if (!sd["onset"].is_null()) CHECK(c["onset"]["site"] == sd["onset"]["site"]);
    for (const json& l : sd["layers"]) {
      CHECK(c["layer_rel_l2"][l["layer"].get<int>()].get<double>() ==
            Approx(l["rel_l2"][row].get<double>()).margin(1e-12));
      for (const json& site : sd["drift"]) {
        if (site["site"] == l["site"])
          above[l["layer"].get<int>()] += l["rel_l2"][row].get<double>() > site["noise_floor"];
      }
    }
    // born in: the first verdict block above the attribution's floor (of B's bf16 activations,
    // not the float32 storage of the sites); most local: the largest, and its share
    const double floor = at["noise_floor"];
    CHECK(agg["noise_floor"] == floor);
    CHECK(agg["storage"] == at["storage"]);
    json born, top;
    double sum = 0;
    for (const json& b : verdict_blocks(at)) {
      const double local = b["by_sequence"]["local"][0];
      sum += local;
      if (born.is_null() && local > floor) born = b;
      if (top.is_null() || local > top["by_sequence"]["local"][0].get<double>()) top = b;
    }
    born_none += born.is_null();
    CHECK(c["birth"].is_null() == born.is_null());
    if (!born.is_null()) CHECK(c["birth"]["block"] == born["name"]);
    REQUIRE(!top.is_null());
    CHECK(c["top"]["block"] == top["name"]);
    CHECK(c["top"]["share"].get<double>() ==
          Approx(top["by_sequence"]["local"][0].get<double>() / sum).epsilon(1e-9));
  }
  std::sort(sorted.begin(), sorted.end());
  CHECK(agg["steps"]["values"] == json(sorted));
  CHECK(agg["margins"]["near_tie"] == near);
  CHECK(agg["margins"]["accumulated"] == static_cast<int>(steps.size()) - near);
  CHECK(agg["birth"]["none"] == born_none);
  REQUIRE(agg["layers"].size() == kLayers);
  for (int l = 0; l < kLayers; ++l) {
    CHECK(agg["layers"][l]["above_floor"] == above[l]);
    CHECK(agg["layers"][l]["site_noise_floor"] == 0x1p-23);  // float32 storage, the default
    CHECK(agg["layers"][l]["site_storage"] == "float32");
  }
  const std::string near_ties = std::to_string(steps.size()) + " flips were near-ties under";
  CHECK(has(agg["summary"].get<std::string>(), near_ties));
  CHECK(has(ds::test::slurp(z / "flips.txt"), near_ties));  // the summary, wrapped
  CHECK(has(ds::test::slurp(z / "flips.html"), "<html"));
}

// The replays in z against the original traces: each flipped sequence (`steps`: seq -> step)
// replayed on A's tokens to its flip + `after`, every probe, A's and B's top-K bit for bit (B's
// through the flip row), its reports; the neighbours on their own tokens (B's for B).
void check_replays(const fs::path& z, const ds::trace::TraceReader& ta,
                   const ds::trace::TraceReader& tb, const std::map<int, int>& steps, int after) {
  const auto ra = ds::trace::TraceReader::open(z / "a.h5");
  const auto rb = ds::trace::TraceReader::open(z / "b.h5");
  const json plan = ds::test::slurp_json(z / "zoom.json");
  std::vector<int> flipped;
  for (const auto& [i, step] : steps) flipped.push_back(i);
  for (size_t k = 0; k < flipped.size(); ++k) {
    const json& zs = plan["sequences"][k];
    const int i = flipped[k];
    const auto sa = ta.sequence(i), sb = tb.sequence(i);
    const int step = flip_step(sa, sb), ri = zs["replay_index"];
    INFO("seq " << i << " flips at step " << step);
    CHECK(zs["seq"] == i);
    CHECK(zs["flip_step"] == step);
    CHECK(ri == i);
    const int replayed = std::min(sa.gen_len, step + 1 + after);
    CHECK(zs["replayed_tokens"] == replayed);
    // Both replays consumed A's tokens up to the flip plus --after, with every probe.
    const auto za = ra.sequence(ri), zb = rb.sequence(ri);
    const std::vector<int32_t> prefix(sa.tokens.begin(),
                                      sa.tokens.begin() + sa.prompt_len + replayed);
    CHECK(za.tokens == prefix);
    CHECK(zb.tokens == prefix);
    CHECK(za.sites.size() == 2 + 6 * kLayers);
    // Same configuration, same tokens, same batch rows: the original numbers, bit for bit.
    check_same_topk(ra, ri, ta, i, za.rows);
    const int flip_row = sa.prompt_len + step - 1;  // the logits that chose the flipped token
    REQUIRE(zb.rows > flip_row);
    check_same_topk(rb, ri, tb, i, flip_row + 1);
    // The per-sequence reports: the original flip, reproduced by B's replay; an attribution.
    const json d = ds::test::slurp_json(z / ("seq-" + std::to_string(i)) / "diff.json");
    CHECK(d["sequences"][0]["index"] == i);
    CHECK(d["sequences"][0]["first_flip"]["step"] == step);
    CHECK(has(d["sequences"][0].dump(), "B's replay reproduces it"));
    CHECK(fs::exists(z / ("seq-" + std::to_string(i)) / "attribution.json"));
  }
  // The neighbours rode along on their own tokens (B's for B), as far as the group's zoom runs.
  int longest = 0;
  for (const auto& zs : plan["sequences"])
    longest = std::max(longest, zs["replayed_tokens"].get<int>());
  for (int i = 0; i < 4; ++i) {
    if (std::find(flipped.begin(), flipped.end(), i) != flipped.end()) continue;
    const auto sb = tb.sequence(i);
    const int n = std::min(sb.gen_len, longest);
    CHECK(plan["forced_b"][i] == n);
    CHECK(rb.sequence(i).tokens ==
          std::vector<int32_t>(sb.tokens.begin(), sb.tokens.begin() + sb.prompt_len + n));
  }
}

fs::file_time_type mtime(const fs::path& p) {
  return fs::last_write_time(p);
}

}  // namespace

TEST_CASE("zoom: replays reproduce the original runs up to each flip", "[cli][zoom]") {
  ds::test::TempDir dir;
  const auto a = first_pass(dir, "a", ""), b = first_pass(dir, "b", "--dtype bf16 --batch 4");
  const auto z = dir.path() / "z";
  const int after = 2;
  const std::string zoom =
      "zoom " + a.string() + " " + b.string() + " -o " + z.string() + " --after 2";
  auto r = run_cli(zoom);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  const auto ta = ds::trace::TraceReader::open(a), tb = ds::trace::TraceReader::open(b);
  const json plan = ds::test::slurp_json(z / "zoom.json");
  std::vector<int> flipped;
  std::map<int, int> steps;
  for (int i : ta.sequence_indices()) {
    const int step = flip_step(ta.sequence(i), tb.sequence(i));
    if (step < 0) continue;
    flipped.push_back(i);
    steps[i] = step;
  }
  REQUIRE(flipped.size() >= 1);  // the test needs flips (fp32 vs bf16 part at 2 of 4 prompts)
  REQUIRE(flipped.size() < 4);   // and a sequence that rides along in B's batch of 4
  REQUIRE(plan["sequences"].size() == flipped.size());
  CHECK(plan["replay"] == json({0, 1, 2, 3}));  // the whole batch group of B
  check_replays(z, ta, tb, steps, after);
  check_aggregate(z, steps);
  CHECK(r.out == ds::test::slurp(z / "flips.txt"));

  // The same command again keeps both replays; another --after in the same folder is refused.
  const auto ma = mtime(z / "a.h5"), mb = mtime(z / "b.h5");
  const std::string state = ds::test::slurp(z / "zoom.json");
  r = run_cli(zoom);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "0 replay(s) to run"));
  CHECK(mtime(z / "a.h5") == ma);
  CHECK(mtime(z / "b.h5") == mb);
  check_input_error(
      run_cli("zoom " + a.string() + " " + b.string() + " -o " + z.string() + " --after 3"),
      "holds another zoom");
  CHECK(ds::test::slurp(z / "zoom.json") == state);

  // --seq: a sequence that did not flip is replayed whole and left out of the aggregate, named.
  REQUIRE(steps.count(0) == 0);
  const auto z2 = dir.path() / "z2";
  r = run_cli("zoom -q " + a.string() + " " + b.string() + " -o " + z2.string() + " --seq 0," +
              std::to_string(flipped[0]));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json p2 = ds::test::slurp_json(z2 / "zoom.json");
  REQUIRE(p2["sequences"].size() == 2);
  CHECK(p2["sequences"][0]["flip_step"].is_null());
  CHECK(p2["sequences"][0]["replayed_tokens"] == ta.sequence(0).gen_len);
  const json agg2 = ds::test::slurp_json(z2 / "flips.json");
  CHECK(agg2["pairs"] == 2);
  CHECK(agg2["flips"] == 1);
  CHECK(agg2["notes"] == json({"sequence 0 left out: no flip (drift without flip)"}));
}

TEST_CASE("zoom: bad input is refused before the output folder is made", "[cli][zoom]") {
  ds::test::TempDir dir;
  const auto a = first_pass(dir, "a", ""), b = first_pass(dir, "b", "--dtype bf16");
  const auto z = dir.path() / "z";
  auto zoom = [&](const fs::path& x, const fs::path& y, const std::string& needle,
                  const std::string& flags = "") {
    INFO("zoom " << x.filename() << " " << y.filename() << " " << flags);
    check_input_error(
        run_cli("zoom " + x.string() + " " + y.string() + " -o " + z.string() + " " + flags),
        needle);
    CHECK_FALSE(fs::exists(z));
  };
  zoom(a, b, "--gpus-per-task -1 is negative", "--slurm --gpus-per-task -1");
  zoom(a, b, "go with --slurm", "--partition p");
  zoom(a, a, "no sequence flipped");
  zoom(a, b, "sequence 7 is not in both traces", "--seq 7");
  zoom(a, first_pass(dir, "two", "", 2), "different sequences (2 only in A");
  const auto other = dir.path() / "other.txt";
  {
    std::ofstream out(other);
    for (const char* s : {"In the beginning", "And the king said", "Blessed are the", "Amen"})
      out << s << "\n";
  }
  const auto c = dir.path() / "c.h5";
  REQUIRE(run_cli("run -q -n 24 --probes none --prompts " + other.string() + " -o " + c.string())
              .exit_code == 0);
  zoom(a, c, "prompts differ (sequence 2)");
  const auto m = first_pass(dir, "m", "--model " + ds::test::source_dir() + "/models/kjv-mistral");
  zoom(a, m, "different models");
  CHECK_FALSE(has(run_cli("zoom " + a.string() + " " + m.string() + " -o " + z.string()).err,
                  "--allow-model-mismatch"));  // diff's flag, which zoom does not have

  // Damaged: cut short (a partial copy), incomplete, a chunk unreadable.
  setenv("DRIFTSCOPE_READ_STALL_SECONDS", "2", 1);  // should a damaged read hang, fail fast
  const auto cut = dir.path() / "cut.h5";
  fs::copy_file(b, cut);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  zoom(a, cut, "is damaged");
  const auto incomplete = dir.path() / "incomplete.h5";
  fs::copy_file(b, incomplete);
  REQUIRE(damage("int-attr " + incomplete.string() + " / complete 0") == 0);
  zoom(a, incomplete, "is incomplete");
  // deflated: a zeroed compressed chunk is unreadable (diff skips the sequence, a flipped one)
  const auto zeroed = first_pass(dir, "zeroed", "--dtype bf16 --compression deflate");
  REQUIRE(damage("zero-chunk " + zeroed.string() + " seq/2/tokens 0") == 0);
  zoom(a, zeroed, "seq 2, sequence not read");
  unsetenv("DRIFTSCOPE_READ_STALL_SECONDS");
}

// A trace of the Python recorder (a driftscope trace given its producer and configuration): its
// replay is the recorder's command with the recorded options, found as $DRIFTSCOPE_TRACE (here a
// script that writes its arguments and fails) or driftscope-trace on PATH; without either, zoom
// refuses before DIR is made, naming the recorder, how to install it and the exact command.
TEST_CASE("zoom: a recorder trace is replayed by the recorder or refused without it",
          "[cli][zoom]") {
  ds::test::TempDir dir;
  const auto a = first_pass(dir, "a", ""), b = first_pass(dir, "b", "--dtype bf16");
  const auto py = dir.path() / "py.h5";
  fs::copy_file(b, py);
  const std::string config = R"({"device": "cpu", "dtype": "bf16", "batch": 1,
      "tie_break": "lowest_id", "add_bos": "auto", "repetition_penalty": 1.0, "max_new": 24,
      "temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": 0,
      "engine": {"name": "transformers", "device": "cpu", "attn_implementation": "sdpa",
                 "threads": 3},
      "trace": {"probes": "none", "hidden_dtype": "bf16", "topk": 20, "full_logits": false,
                "compression": "deflate1"}})";
  REQUIRE(damage("attr " + py.string() +
                 " / producer 'driftscope_trace 0.1.0 (transformers 4.46.3, torch 2.5.1)'") == 0);
  REQUIRE(damage("attr " + py.string() + " /meta config_json '" + config + "'") == 0);
  const auto z = dir.path() / "z";
  const json model = json::parse(ds::trace::TraceReader::open(b).model_json());
  // no word of this test needs quoting: the command line is its words joined by spaces
  const std::string cmd =
      "run -m " + model["path"].get<std::string>() + " --tokenizer " +
      model["tokenizer"]["path"].get<std::string>() +
      " --dtype bf16 --device cpu --batch 1 --attn-implementation sdpa --threads 3 --tie-break "
      "lowest_id --add-bos auto --repetition-penalty 1.0 --temperature 0.0 --top-p 1.0 --top-k 0 "
      "--seed 0 -n 24 --hidden-dtype bf16 --trace-topk 20 --compression deflate --prompts " +
      (z / "prompts-b.jsonl").string() + " --probes all -o " + (z / "b.h5").string() +
      " --force -q";

  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", dir.path().c_str(), 1);  // no driftscope-trace there
  unsetenv("DRIFTSCOPE_TRACE");
  const auto r = run_cli("zoom " + a.string() + " " + py.string() + " -o " + z.string());
  setenv("PATH", path.c_str(), 1);
  check_input_error(r, "was written by driftscope_trace 0.1.0 (transformers");
  CHECK(has(r.err, "driftscope-trace is not on PATH"));
  CHECK(has(r.err, "pip install './python[transformers]'"));
  CHECK(has(r.err, "its replay is: driftscope-trace " + cmd));
  CHECK_FALSE(fs::exists(z));

  const auto fake = dir.path() / "fake-recorder";
  const auto args = dir.path() / "args.txt";
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << args.string() << "\nexit 3\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  setenv("DRIFTSCOPE_TRACE", fake.c_str(), 1);
  const auto failed = run_cli("zoom -q " + a.string() + " " + py.string() + " -o " + z.string());
  unsetenv("DRIFTSCOPE_TRACE");
  INFO(failed.err);
  CHECK(failed.exit_code == 1);
  CHECK(has(failed.err, "zoom replay(s) missing: b"));
  std::string got;  // the arguments the recorder was given, one a line
  std::ifstream in(args);
  for (std::string line; std::getline(in, line);) got += (got.empty() ? "" : " ") + line;
  CHECK(got == cmd);  // the recorded --threads, none appended
  const json state = json::parse(std::ifstream(z / "zoom.json"));
  CHECK(state["runs"][1]["config"].is_null());
  CHECK(state["runs"][1]["command"] == fake.string() + " " + cmd);
  CHECK(state["runs"][0]["status"] == "done");
  CHECK(state["runs"][1]["status"] == "missing");
  // DIR/configs/ holds the configuration files of driftscope's replays alone
  CHECK(fs::exists(z / "configs" / "a.toml"));
  CHECK_FALSE(fs::exists(z / "configs" / "b.toml"));
  // Both sides of the recorder: no configuration file, so no DIR/configs/.
  const auto py_a = dir.path() / "py-a.h5";
  fs::copy_file(a, py_a);
  REQUIRE(damage("attr " + py_a.string() +
                 " / producer 'driftscope_trace 0.1.0 (transformers 4.46.3, torch 2.5.1)'") == 0);
  REQUIRE(damage("attr " + py_a.string() + " /meta config_json '" + config + "'") == 0);
  const auto z3 = dir.path() / "z3";
  setenv("DRIFTSCOPE_TRACE", fake.c_str(), 1);
  const auto both = run_cli("zoom -q " + py_a.string() + " " + py.string() + " -o " + z3.string());
  unsetenv("DRIFTSCOPE_TRACE");
  INFO(both.err);
  CHECK(both.exit_code == 1);
  CHECK(has(both.err, "zoom replay(s) missing: a, b"));
  CHECK(fs::exists(z3 / "zoom.json"));
  CHECK_FALSE(fs::exists(z3 / "configs"));

  // The llama.cpp recorder's replay: the GGUF of model_json's "gguf", its Hugging Face source,
  // the KV cache type and threads of the engine block.
  const std::string llama = R"({"device": "cpu", "dtype": "fp32", "batch": 1,
      "tie_break": "highest_id", "add_bos": "on", "repetition_penalty": 1.1, "max_new": 24,
      "temperature": 0.5, "top_p": 0.9, "top_k": 40, "seed": 7,
      "engine": {"name": "llama.cpp", "kv_type": "f16", "threads": 2, "device": "cpu"},
      "trace": {"probes": "none", "hidden_dtype": "f32", "topk": 8, "full_logits": true,
                "compression": "none"}})";
  // the GGUF the recorder loads is verified against its recorded sha256 before the replay
  const fs::path gguf = dir.path() / "m-Q8_0.gguf";
  std::ofstream(gguf) << "GGUF, as far as this test goes";
  json gguf_model = model;
  const auto as_hex = [](const json& j) {
    std::string hex = "hex:";
    for (unsigned char c : j.dump()) {
      char byte[3];
      std::snprintf(byte, sizeof byte, "%02x", c);
      hex += byte;
    }
    return hex;
  };
  gguf_model["gguf"] = {{"path", gguf.string()}, {"sha256", "00"}};
  REQUIRE(damage("attr " + py.string() + " /meta config_json '" + llama + "'") == 0);
  REQUIRE(damage("attr " + py.string() + " /meta model_json " + as_hex(gguf_model)) == 0);
  check_input_error(
      run_cli("zoom " + a.string() + " " + py.string() + " -o " + (dir.path() / "z4").string()),
      "its file '" + gguf.string() + "' has changed since the trace was written");
  CHECK_FALSE(fs::exists(dir.path() / "z4"));
  gguf_model["gguf"]["sha256"] = ds::sha256_file(gguf);
  const std::string hex = as_hex(gguf_model);
  REQUIRE(damage("attr " + py.string() + " /meta model_json " + hex) == 0);
  const auto z2 = dir.path() / "z2";
  setenv("DRIFTSCOPE_TRACE", (dir.path() / "missing").c_str(), 1);
  const auto refused = run_cli("zoom " + a.string() + " " + py.string() + " -o " + z2.string());
  check_input_error(
      refused, "DRIFTSCOPE_TRACE='" + (dir.path() / "missing").string() + "' names no executable");
  CHECK(has(refused.err, "pip install './python[llamacpp]'"));
  CHECK_FALSE(fs::exists(z2));
  setenv("DRIFTSCOPE_TRACE", (fake.string() + " --extra-word").c_str(), 1);  // a command's words
  CHECK(run_cli("zoom -q " + a.string() + " " + py.string() + " -o " + z2.string()).exit_code == 1);
  unsetenv("DRIFTSCOPE_TRACE");
  got.clear();
  std::ifstream in2(args);
  for (std::string line; std::getline(in2, line);) got += (got.empty() ? "" : " ") + line;
  CHECK(got == "--extra-word llamacpp -m " + gguf.string() + " --source-model " +
                   model["path"].get<std::string>() +
                   " --kv-type f16 --threads 2 --tie-break highest_id --add-bos on "
                   "--repetition-penalty 1.1 --temperature 0.5 --top-p 0.9 --top-k 40 --seed 7 -n "
                   "24 --hidden-dtype f32 --trace-topk 8 --full-logits --compression none "
                   "--prompts " +
                   (z2 / "prompts-b.jsonl").string() + " --probes all -o " +
                   (z2 / "b.h5").string() + " --force -q");
}
