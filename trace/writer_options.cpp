// Parsing and names of the trace writer's --hidden-dtype and --compression.
#include "trace/writer_options.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/number_format.h"
#include "trace/h5.h"

namespace ds::trace {

Storage parse_hidden_dtype(const std::string& s) {
  const auto f = find_number_format(s, &NumberFormatTraits::name);
  if (const auto storage = f ? storage_of(*f) : std::nullopt) return *storage;
  throw Error(fmt::format("unknown hidden dtype '{}'", s), "--hidden-dtype takes f32, f16 or bf16");
}

const char* hidden_dtype_name(Storage d) {
  return storage_name(d);
}

int parse_compression(const std::string& s) {
  if (s == "none") return 0;
  if (s == "deflate") return h5::kDefaultDeflateLevel;
  if (s.size() == 8 && s.starts_with("deflate") && s[7] >= '1' && s[7] <= '9') return s[7] - '0';
  throw Error(fmt::format("unknown compression '{}'", s),
              "--compression takes none (the default), deflate (shuffle + deflate level 1) or "
              "deflate1 ... deflate9 (shuffle + deflate at that level)");
}

std::string compression_name(int deflate_level) {
  return deflate_level == 0 ? std::string("none") : fmt::format("deflate{}", deflate_level);
}

}  // namespace ds::trace
