// SHA-256 of files (model identity in traces), through OpenSSL.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ds {

// Lowercase hex digest of the file's bytes. Throws ds::Error when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
// Lowercase hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace ds
