// The byte <-> character mapping of byte-level BPE (GPT-2, Llama 3, Qwen): every byte is shown as a
// printable character, so that the vocabulary holds strings; e.g. space 0x20 is "Ġ" (U+0120).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ds::hf {

// Appends the mapped characters of every byte of `bytes` to `out`.
void byte_level_encode(std::string_view bytes, std::string& out);

// The byte a mapped character stands for; nullopt for characters outside the mapping.
std::optional<uint8_t> byte_level_byte(char32_t c);

}  // namespace ds::hf
