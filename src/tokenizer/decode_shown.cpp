// Decoding for display: unknown ids shown as "<id>" (src/tokenizer/tokenizer.h).
#include <fmt/format.h>

#include "src/tokenizer/tokenizer.h"

namespace ds {

std::string decode_shown(const Tokenizer& tok, std::span<const int32_t> ids, bool skip_special) {
  std::string out;
  size_t run = 0;  // start of the current run of known ids
  for (size_t i = 0; i <= ids.size(); ++i) {
    if (i < ids.size() && tok.knows(ids[i])) continue;
    if (i == ids.size() && run == 0) return tok.decode(ids, skip_special);  // all known
    out += tok.decode(ids.subspan(run, i - run), skip_special);
    if (i < ids.size()) out += fmt::format("<{}>", ids[i]);
    run = i + 1;
  }
  return out;
}

}  // namespace ds
