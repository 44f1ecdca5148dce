// Memory estimates from a model's config, and the check against MemAvailable.
#include "src/model/memory.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "src/model/synth.h"

namespace ds {

uint64_t weight_bytes(const ModelConfig& c, int value_bytes) {
  return static_cast<uint64_t>(parameter_count(c)) * static_cast<uint64_t>(value_bytes);
}

uint64_t kv_bytes_per_token(const ModelConfig& c, int elem_bytes) {
  return 2ull * static_cast<uint64_t>(c.n_layers) * static_cast<uint64_t>(c.kv_dim()) *
         static_cast<uint64_t>(elem_bytes);
}

uint64_t available_memory_bytes() {
  if (const char* env = std::getenv("DRIFTSCOPE_MEM_AVAILABLE"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0') return v;
    throw Error(fmt::format("DRIFTSCOPE_MEM_AVAILABLE='{}' is not a number of bytes", env),
                "unset it, or give a whole number of bytes");
  }
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream ss(line.substr(13));
    uint64_t kib = 0;
    ss >> kib;
    return kib * 1024;
  }
  return 0;
}

void check_memory(const std::string& what, uint64_t needed, const std::string& hint) {
  const uint64_t available = available_memory_bytes();
  if (available == 0 || needed <= available) return;
  throw Error(fmt::format("{} needs {} of memory; {} is available", what, format_bytes(needed),
                          format_bytes(available)),
              hint);
}

std::string format_bytes(uint64_t b) {
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MiB", b / 1048576.0);
  if (b < 1024ull * 1024 * 1024 * 1024) return fmt::format("{:.1f} GiB", b / 1073741824.0);
  return fmt::format("{:.1f} TiB", b / 1099511627776.0);
}

}  // namespace ds
