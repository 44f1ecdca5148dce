// Small text helpers the tests share: substring checks and counts, a section between two
// markers, whole files as text or JSON, and the base64 SHA-256 a Content-Security-Policy names.
#pragma once

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

namespace ds::test {

inline bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// Occurrences of needle in s (overlapping ones too).
inline size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t i = s.find(needle); i != std::string::npos; i = s.find(needle, i + 1)) ++n;
  return n;
}

// The text after the first `open` up to the next `close`; both must be there.
inline std::string between(const std::string& s, const std::string& open,
                           const std::string& close) {
  const size_t a = s.find(open);
  REQUIRE(a != std::string::npos);
  const size_t b = s.find(close, a + open.size());
  REQUIRE(b != std::string::npos);
  return s.substr(a + open.size(), b - a - open.size());
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline nlohmann::json slurp_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// The first n (at most 6) of a fixed list of short prompts in the style of the bundled models'
// corpus, one per line: a prompts file
// for CLI tests of the bundled model.
inline void write_prompts(const std::filesystem::path& p, int n = 4) {
  const char* all[] = {"In the beginning",           "And the king said",
                       "Then Jesus said unto them,", "Blessed are the",
                       "And it came to pass, when",  "Praise ye the LORD."};
  REQUIRE(n >= 0);
  REQUIRE(n <= 6);
  std::ofstream out(p);
  for (int i = 0; i < n; ++i) out << all[i] << "\n";
}

// base64 of the SHA-256 of text, as a CSP 'sha256-...' source names it.
inline std::string sha256_base64(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char b64[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1];
  EVP_EncodeBlock(b64, digest, SHA256_DIGEST_LENGTH);
  return reinterpret_cast<char*>(b64);
}

}  // namespace ds::test
