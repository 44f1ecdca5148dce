// SHA-256 of files (model identity in traces), through OpenSSL.
#pragma once

#include <filesystem>
#include <string>

namespace ds {

// Lowercase hex digest of the file's bytes. Throws ds::Error when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace ds
