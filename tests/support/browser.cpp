// Headless chromium for tests, and a small PNG decoder (zlib) for its screenshots.
#include "tests/support/browser.h"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/temp_dir.h"
#include "tests/support/text.h"

namespace ds::test {
namespace {

uint32_t be32(const std::string& s, size_t i) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[i])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[i + 1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[i + 2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[i + 3]));
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

}  // namespace

std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  std::vector<std::string> all;
  while (std::getline(dirs, dir, ':')) all.push_back(dir);
  for (const char* name : {"chromium", "chromium-browser"}) {
    for (const auto& d : all) {
      const auto p = std::filesystem::path(d) / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  return {};
}

BrowserRun run_chromium(const std::string& chromium, const std::string& flags,
                        const std::filesystem::path& page) {
  TempDir profile("driftscope-chromium");
  const auto out = profile.path() / "stdout", err = profile.path() / "stderr";
  // --no-sandbox: tests run as root in containers, where chromium's sandbox cannot start.
  const std::string cmd = "'" + chromium +
                          "' --headless --no-sandbox --disable-gpu --no-proxy-server "
                          "--enable-logging=stderr --v=0 --user-data-dir='" +
                          (profile.path() / "profile").string() + "' " + flags + " 'file://" +
                          std::filesystem::absolute(page).string() + "' >'" + out.string() +
                          "' 2>'" + err.string() + "' </dev/null";
  const int status = std::system(cmd.c_str());
  BrowserRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.log = slurp(err);
  return r;
}

std::vector<std::string> page_errors(const std::string& log) {
  std::vector<std::string> errors;
  std::stringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos)
      errors.push_back(line);
  }
  return errors;
}

uint32_t Image::pixel(int x, int y) const {
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 3;
  return static_cast<uint32_t>(rgb[i]) << 16 | static_cast<uint32_t>(rgb[i + 1]) << 8 | rgb[i + 2];
}

Image read_png(const std::filesystem::path& path) {
  const std::string s = slurp(path);
  if (s.size() < 8 || s.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0)
    throw std::runtime_error("not a PNG: " + path.string());
  Image img;
  int channels = 0;
  std::string idat;
  for (size_t i = 8; i + 8 <= s.size();) {
    const uint32_t len = be32(s, i);
    const std::string type = s.substr(i + 4, 4);
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(s, i + 8));
      img.height = static_cast<int>(be32(s, i + 12));
      const int depth = static_cast<uint8_t>(s[i + 16]), colour = static_cast<uint8_t>(s[i + 17]);
      const int interlace = static_cast<uint8_t>(s[i + 20]);
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0)
        throw std::runtime_error("unsupported PNG (only 8-bit RGB/RGBA, not interlaced)");
      channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += s.substr(i + 8, len);
    }
    i += 12 + len;
  }
  if (channels == 0) throw std::runtime_error("PNG without IHDR");
  const size_t stride = static_cast<size_t>(img.width) * static_cast<size_t>(channels);
  std::vector<uint8_t> raw(static_cast<size_t>(img.height) * (stride + 1));
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_len != raw.size())
    throw std::runtime_error("PNG data does not inflate to its size");
  // Undo the per-row filters (PNG spec, section 9).
  std::vector<uint8_t> cur(stride), prev(stride, 0);
  img.rgb.reserve(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 3);
  for (int y = 0; y < img.height; ++y) {
    const uint8_t* row = &raw[static_cast<size_t>(y) * (stride + 1)];
    const int filter = row[0];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(channels) ? cur[x - channels] : 0, b = prev[x];
      const int c = x >= static_cast<size_t>(channels) ? prev[x - channels] : 0;
      int v = row[1 + x];
      switch (filter) {
        case 0:
          break;
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4:
          v += paeth(a, b, c);
          break;
        default:
          throw std::runtime_error("bad PNG filter");
      }
      cur[x] = static_cast<uint8_t>(v);
    }
    for (int x = 0; x < img.width; ++x) {
      for (int k = 0; k < 3; ++k) img.rgb.push_back(cur[static_cast<size_t>(x * channels + k)]);
    }
    std::swap(cur, prev);
  }
  return img;
}

}  // namespace ds::test
