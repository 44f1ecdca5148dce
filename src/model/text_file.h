// Bounded reads of the small text files a user names (run configs, config.json, prompt lists):
// a directory, a device that never ends (/dev/zero), a file over a documented limit or a binary
// file is refused with a message naming the file and the limit, before it can fill memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ds {

// The UTF-8 byte order mark some editors (Windows Notepad) put first in a text file: the text
// files driftscope reads skip it.
inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The documented limits (docs/cli.md "Input limits").
inline constexpr uint64_t kMaxRunConfigBytes = 1ull << 20;     // --config TOML: 1 MiB
inline constexpr uint64_t kMaxModelConfigBytes = 16ull << 20;  // config.json: 16 MiB
inline constexpr uint64_t kMaxShardIndexBytes = 64ull << 20;   // model.safetensors.index.json
inline constexpr uint64_t kMaxPromptsFileBytes = 64ull << 20;  // --prompts FILE: 64 MiB
inline constexpr uint64_t kMaxTextsFileBytes = 64ull << 20;    // tokenize --texts FILE: 64 MiB
inline constexpr uint64_t kMaxAnswerKeyBytes = 64ull << 20;    // stats --answers FILE: 64 MiB
inline constexpr uint64_t kMaxTokenizerBytes = 256ull << 20;   // tokenizer.json: 256 MiB
inline constexpr uint64_t kMaxStateFileBytes = 64ull << 20;    // sweep.json, zoom.json: 64 MiB

// The whole of `path` (a regular file, or a pipe such as bash's <(...)), read `max_bytes` at
// most. `what` names the file's role in messages ("config file", "prompts file") and `hint`
// says what belongs there. Throws ds::Error when the path cannot be opened, is a directory,
// holds more than `max_bytes` bytes, or holds a NUL byte (a binary file, not text).
std::string read_text_file(const std::filesystem::path& path, uint64_t max_bytes,
                           const std::string& what, const std::string& hint);

// The same for a file that must be a regular file: a model's config, a tokenizer, a command's
// state file (sweep.json, zoom.json), read again later or beside other files. A FIFO, device or
// socket is refused at once ("is not a regular file"), without waiting for a writer.
std::string read_regular_text_file(const std::filesystem::path& path, uint64_t max_bytes,
                                   const std::string& what, const std::string& hint);

}  // namespace ds
