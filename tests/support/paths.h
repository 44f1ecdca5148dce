// Paths of the bundled models (the project's own, models/PROVENANCE.md), the third-party fixtures
// in ../shared/models (read only by tests that compare against their published outputs) and the
// built executable, for tests.
#pragma once

#include <filesystem>
#include <string>

namespace ds::test {

inline std::string source_dir() {
  return DRIFTSCOPE_SOURCE_DIR;
}
inline std::string exe() {
  return DRIFTSCOPE_EXE;
}

// The bundled models: kjv-llama (the default; llama2.c .bin and Hugging Face files in one
// folder), kjv-qwen2 and kjv-mistral (Hugging Face), and the prompts written for them.
inline std::string models_dir() {
  return source_dir() + "/models";
}
inline std::string model_bin() {
  return models_dir() + "/kjv-llama/kjv-llama.bin";
}
inline std::string model_tok() {
  return models_dir() + "/kjv-llama/tokenizer.bin";
}
inline std::string model_hf() {
  return models_dir() + "/kjv-llama";
}
inline std::string qwen2_hf() {
  return models_dir() + "/kjv-qwen2";
}
inline std::string mistral_hf() {
  return models_dir() + "/kjv-mistral";
}
inline std::string prompts() {
  return models_dir() + "/kjv-llama/prompts.txt";
}

// Third-party fixtures (../shared/models beside the checkout; DRIFTSCOPE_SHARED_MODELS overrides).
// Tests that read them call shared_models_missing() first and skip with its reason when it
// returns one: a user's fresh clone has no ../shared.
inline std::string shared_models() {
  if (const char* dir = std::getenv("DRIFTSCOPE_SHARED_MODELS")) return dir;
  return source_dir() + "/../shared/models";
}
inline std::string shared_models_missing() {
  if (std::filesystem::is_directory(shared_models() + "/stories260K")) return "";
  return "third-party fixtures not found at " + shared_models() +
         " (set DRIFTSCOPE_SHARED_MODELS to the folder that holds stories260K/)";
}
inline std::string stories_bin() {
  return shared_models() + "/stories260K/stories260K.bin";
}
inline std::string stories_tok() {
  return shared_models() + "/stories260K/tok512.bin";
}
inline std::string stories_hf() {
  return shared_models() + "/stories260K-hf";
}
inline std::string aidreams_bin() {
  return shared_models() + "/aidreams260K/aidreams260K.bin";
}
inline std::string aidreams_tok() {
  return shared_models() + "/aidreams260K/tok512.bin";
}
// Prompts written for stories260K (TinyStories openings), kept with the tests that use it.
inline std::string stories_prompts() {
  return source_dir() + "/tests/data/stories260K-prompts.txt";
}

}  // namespace ds::test

// Skips the rest of a test case, saying why, when the third-party fixtures are absent.
#define DS_REQUIRE_SHARED_MODELS()                                     \
  do {                                                                 \
    const std::string ds_missing_ = ds::test::shared_models_missing(); \
    if (!ds_missing_.empty()) {                                        \
      WARN("skipped: " << ds_missing_);                                \
      return;                                                          \
    }                                                                  \
  } while (0)
