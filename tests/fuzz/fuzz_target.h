// What every fuzz target shares: the input as a file, the bundled files, and the rule that only
// ds::Error (an input error, the CLI's exit 2) may leave the code under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

// The libFuzzer entry point each fuzz_*.cpp defines; replay_main.cpp calls it in the normal build.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace ds::fuzz {

// This process's scratch directory (in /dev/shm when it exists), made on first use and removed at
// exit.
const std::filesystem::path& scratch_dir();

// Writes `data` to scratch_dir() / name (replacing it) and returns that path.
std::filesystem::path write_input(std::span<const uint8_t> data, const std::string& name);

// A bundled file of the source tree, e.g. "models/kjv-llama/tokenizer.bin".
std::filesystem::path source_file(const std::string& rel);

// Runs `body` on one input. A ds::Error is what a bad input should produce and ends the input
// quietly; any other exception is a bug (the CLI would exit 3, "internal error") and aborts, so
// libFuzzer and the replay test report it as a crash. Returns 0 (libFuzzer's "keep going").
int guarded(const std::function<void()>& body);

// Aborts with `what` when `ok` is false: a property of the output that must hold for any input.
void require(bool ok, const char* what);

}  // namespace ds::fuzz
