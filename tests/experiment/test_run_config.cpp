// The run configuration's field table (src/experiment/run_config.h) and its files
// (run_config_file.h): values parsed once into their type and written canonical, so that a
// written configuration reads back to the same one; TOML read as TOML, its tables, dotted keys
// and keys that are no field refused.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/experiment/run_config_file.h"

using Catch::Contains;

namespace {

ds::RunConfig with(const std::string& field, const std::string& word) {
  ds::RunConfig c;
  ds::set_field(c, field, word);
  return c;
}

std::string refusal(const std::string& toml) {
  try {
    ds::config_from_toml(toml, "c.toml");
  } catch (const ds::Error& e) {
    return std::string(e.what()) + "\nhint: " + e.hint();
  }
  return "";
}

// The defaults, and configurations that differ from them in every field, some at their extremes.
std::vector<ds::RunConfig> varied_configs() {
  std::vector<ds::RunConfig> out(1);
  for (const char* words :
       {"device=cuda dtype=bf16 accum=fp16 batch=8 gemm_policy=heuristic split_k=3 tp=4 "
        "allreduce=tree attn_splits=2 prefill_chunk=16 prefix_cache=on tie_break=highest_id "
        "add_bos=off repetition_penalty=1.1 max_new=7 stop_token=none temperature=0.7 top_p=0.95 "
        "top_k=40 seed=18446744073709551615 kernel=gemm=tiled tf32=on",
        "dtype=layercast stop_token=2 temperature=1e-05 top_p=0.1 seed=1 kernel=attention=tiled "
        "add_bos=on repetition_penalty=0.3333333333333333 prefill_chunk=-1 "
        "test_perturb=L2/mlp_add:+ulp"}) {
    ds::RunConfig& c = out.emplace_back();
    std::istringstream in(words);
    std::string item;
    while (in >> item) {
      const auto eq = item.find('=');
      ds::set_field(c, item.substr(0, eq), item.substr(eq + 1));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("run config: one field per member, named once, each in the TOML and JSON written",
          "[config]") {
  std::set<std::string> names;
  const ds::RunConfig c;
  const std::string toml = ds::to_toml(c), json = ds::to_json(c);
  for (const ds::RunConfigField& f : ds::run_config_fields()) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
    CHECK(ds::find_run_config_field(f.name) == &f);
    // a test-only field is written only when set
    CHECK((toml.find(std::string(f.name) + "=") != std::string::npos) != f.test_only);
    CHECK((json.find("\"" + std::string(f.name) + "\":") != std::string::npos) != f.test_only);
    // a choice field (its values single words): every value it lists parses, and is written
    // back as listed
    std::vector<std::string> listed;
    const std::string allowed = f.allowed;
    for (size_t at = 0; at <= allowed.size();) {
      const size_t comma = std::min(allowed.find(", ", at), allowed.size());
      listed.push_back(allowed.substr(at, comma - at));
      at = comma + 2;
    }
    const bool choice =
        listed.size() > 1 && std::none_of(listed.begin(), listed.end(),
                                          [](auto& v) { return v.find(' ') != std::string::npos; });
    for (const auto& v : choice ? listed : std::vector<std::string>{}) {
      CHECK(ds::field_text(with(f.name, v), f.name) == v);
    }
  }
  CHECK(ds::find_run_config_field("split-k") == ds::find_run_config_field("split_k"));
  CHECK(ds::find_run_config_field("force") == nullptr);
  CHECK(
      ds::to_toml(with("test_perturb", "L1/out:bf16")).ends_with("test_perturb=\"L1/out:bf16\"\n"));
  // the defaults as --dry-run has always printed them
  CHECK(toml ==
        "device=\"cpu\"\ndtype=\"fp32\"\naccum=\"fp32\"\nbatch=1\ngemm_policy=\"invariant\"\n"
        "split_k=\"auto\"\ntp=1\nallreduce=\"ring\"\nattn_splits=\"auto\"\nprefill_chunk=0\n"
        "prefix_cache=\"off\"\ntie_break=\"lowest_id\"\nadd_bos=\"auto\"\nrepetition_penalty=1\n"
        "max_new=256\nstop_token=\"auto\"\ntemperature=0\ntop_p=1\ntop_k=0\nseed=0\n"
        "kernel=\"gemm=cublas\"\ntf32=\"off\"\n");
  CHECK(json ==
        R"({"device":"cpu","dtype":"fp32","accum":"fp32","batch":1,"gemm_policy":"invariant",)"
        R"("split_k":"auto","tp":1,"allreduce":"ring","attn_splits":"auto","prefill_chunk":0,)"
        R"("prefix_cache":"off","tie_break":"lowest_id","add_bos":"auto",)"
        R"("repetition_penalty":1.0,"max_new":256,"stop_token":"auto","temperature":0.0,)"
        R"("top_p":1.0,"top_k":0,"seed":0,"kernel":"gemm=cublas","tf32":"off"})");
}

TEST_CASE("run config: values are parsed once and written canonical", "[config]") {
  // 4 and 04 are one value (and 010 is ten, not octal eight as CLI11 read it)
  CHECK(with("split_k", "04") == with("split_k", "4"));
  CHECK(ds::field_text(with("split_k", "04"), "split_k") == "4");
  CHECK(with("batch", "010").batch == 10);
  CHECK(with("seed", "07") == with("seed", "7"));
  CHECK(with("stop_token", "02") == with("stop_token", "2"));
  CHECK(with("temperature", "0.50") == with("temperature", "0.5"));
  // the kernel list: order and defaults spelled out or not, one configuration
  const ds::RunConfig tiled = with("kernel", "attention=tiled");
  CHECK(tiled == with("kernel", "gemm=cublas,attention=tiled"));
  CHECK(tiled == with("kernel", "attention=tiled,gemm=cublas"));
  CHECK(ds::field_text(tiled, "kernel") == "gemm=cublas,attention=tiled");
  CHECK(ds::field_text(with("kernel", "attention=rowwise"), "kernel") == "gemm=cublas");
  CHECK(ds::field_text(with("kernel", "gemm=tiled,attention=rowwise"), "kernel") == "gemm=tiled");
  // a value with a space or a newline is no value: refused, not kept as another configuration
  for (const char* word : {"\n4", " 4", "4 ", "4\n", "0x4", "four", ""}) {
    INFO(word);
    CHECK_THROWS_WITH(with("split_k", word), Contains("invalid split_k"));
    CHECK_THROWS_WITH(with("batch", word), Contains("invalid batch"));
  }
  CHECK_THROWS_WITH(with("kernel", "gemm=tiled,gemm=cublas"), Contains("invalid kernel"));
  CHECK_THROWS_WITH(with("dtype", "BF16"), Contains("invalid dtype 'BF16'"));
  CHECK_THROWS_WITH(with("stop_token", "-1"), Contains("invalid stop_token '-1'"));
  CHECK_THROWS_WITH(with("max_new", "2147483648"), Contains("invalid max_new"));
  // a word where a whole number belongs says it is no number, as a command option's does
  CHECK_THROWS_WITH(with("batch", "many"), Contains("invalid batch 'many': not a number"));
  CHECK_THROWS_WITH(with("stop_token", "eos"), Contains("invalid stop_token 'eos': not a number"));
  CHECK_THROWS_WITH(with("max_new", "2147483648"), !Contains("not a number"));
}

TEST_CASE("run config: a written configuration reads back to the same one", "[config]") {
  for (const ds::RunConfig& c : varied_configs()) {
    INFO(ds::to_toml(c));
    CHECK(ds::config_from_toml(ds::to_toml(c), "c.toml") == c);
    CHECK(ds::config_from_json(ds::to_json(c)) == c);
    CHECK(ds::to_json(ds::config_from_json(ds::to_json(c))) == ds::to_json(c));
  }
}

TEST_CASE("run config: a config file is read as TOML", "[config]") {
  // digit separators, signs, hexadecimal, literal strings, escapes, comments, CRLF, a BOM
  const ds::RunConfig c = ds::config_from_toml(
      "\xEF\xBB\xBF# a comment\r\nmax_new = 1_000\r\nseed = 0xff\ntop_p = +0.5 # nucleus\n"
      "dtype = 'bf16'\nkernel = \"attention\\u003dtiled\"\n\"batch\" = 8\nsplit-k = 2\n\n"
      "  temperature\t= 1e-3\nrepetition_penalty = 2\n",
      "c.toml");
  CHECK(c.max_new == 1000);
  CHECK(c.seed == 255);
  CHECK(c.top_p == 0.5);
  CHECK(c.dtype == ds::DType::bf16);
  CHECK(c.kernel.attention == ds::AttnKernel::tiled);
  CHECK(c.batch == 8);
  CHECK(c.split_k == 2);
  CHECK(c.temperature == 1e-3);
  CHECK(c.repetition_penalty == 2.0);
  // the largest seed is an integer past int64: still read
  CHECK(ds::config_from_toml("seed = 18446744073709551615", "c.toml").seed == UINT64_MAX);
  // split_k and stop_token take their numbers quoted or not, as before
  CHECK(ds::config_from_toml("split_k = 4\nstop_token = 2", "c.toml") ==
        ds::config_from_toml("split_k = \"4\"\nstop_token = \"2\"", "c.toml"));
}

TEST_CASE("run config: tables, dotted keys and what is not TOML are refused by line", "[config]") {
  CHECK_THAT(refusal("[engine]\ndtype = \"bf16\"\n"),
             Contains("c.toml:1: '[engine]' opens a table"));
  CHECK_THAT(refusal("batch = 8\nengine.dtype = \"bf16\"\n"),
             Contains("c.toml:2: 'engine.dtype = \"bf16\"' is a dotted key"));
  CHECK_THAT(refusal("dtype = bf16"), Contains("bf16 is not a TOML value"));
  CHECK_THAT(refusal("dtype = bf16"), Contains("a string is quoted: \"bf16\""));
  CHECK_THAT(refusal("batch = 08"), Contains("08 has a leading zero"));
  CHECK_THAT(refusal("batch = [8]"), Contains("an array is not a run-configuration value"));
  CHECK_THAT(refusal("dtype = \"bf16"), Contains("not closed on its line"));
  CHECK_THAT(refusal("dtype = \"\"\"bf16\"\"\""), Contains("a multi-line string"));
  CHECK_THAT(refusal("dtype = \"bf16\" batch = 8"), Contains("unexpected text after the value"));
  CHECK_THAT(refusal("batch = 8\nbatch = 4"), Contains("c.toml:2: 'batch' is given twice"));
  CHECK_THAT(refusal("split_k = 2\nsplit-k = 4"), Contains("'split-k' is given twice"));
  CHECK_THAT(refusal("batch = 1_"), Contains("1_ is not a TOML value"));
  CHECK_THAT(refusal("seed = 0x1_0000_0000_0000_0000"), Contains("larger than 2^64 - 1"));
}

TEST_CASE("run config: each field takes the TOML types of its own", "[config]") {
  CHECK_THAT(refusal("batch = \"8\""), Contains("bad value for 'batch'"));
  CHECK_THAT(refusal("batch = \"8\""), Contains("a string, where the field takes a number"));
  CHECK_THAT(refusal("batch = 8.0"), Contains("bad value for 'batch'"));
  CHECK_THAT(refusal("dtype = 16"), Contains("a number, where the field takes text"));
  CHECK_THAT(refusal("prefix_cache = true"), Contains("a boolean"));
  CHECK_THAT(refusal("seed = -1"), Contains("seed -1 is outside 0..18446744073709551615"));
  CHECK_THAT(refusal("split_k = \"\\n4\""), Contains("invalid split_k"));
  CHECK_THAT(refusal("force = true"), Contains("c.toml: unknown key 'force'"));
}

TEST_CASE("run config: recorded JSON is read by the same table", "[config]") {
  const ds::RunConfig c = ds::config_from_json(
      R"({"dtype": "bf16", "split_k": "04", "kernel": "attention=tiled", "trace": {}})", {},
      {"trace"});
  CHECK(c.dtype == ds::DType::bf16);
  CHECK(c.split_k == 4);
  CHECK(c.kernel.attention == ds::AttnKernel::tiled);
  CHECK_THROWS_WITH(ds::config_from_json(R"({"force": true})"),
                    Contains("unknown run-config field 'force'"));
  CHECK_THROWS_WITH(ds::config_from_json(R"({"split-k": "4"})"),
                    Contains("unknown run-config field 'split-k'"));
  CHECK_THROWS_WITH(ds::config_from_json(R"({"batch": "8"})"), Contains("invalid batch"));
  CHECK_THROWS_AS(ds::config_from_json("[1]"), ds::Error);
}
