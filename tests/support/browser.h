// A real browser for the HTML report's tests: Debian's chromium run headless (--dump-dom,
// --screenshot), its log scanned for page errors, and the screenshot's pixels decoded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ds::test {

// The chromium executable on PATH ("chromium", else "chromium-browser"), or "" when none.
std::string find_chromium();

struct BrowserRun {
  int exit_code = -1;
  std::string out;  // stdout (the DOM with --dump-dom)
  std::string log;  // stderr with --enable-logging=stderr
};

// Runs `chromium --headless ... <flags> file://<page>` with a fresh profile, no network proxy
// and logging to stderr.
BrowserRun run_chromium(const std::string& chromium, const std::string& flags,
                        const std::filesystem::path& page);

// The lines of a chromium log that report something the page did wrong: console messages
// (uncaught exceptions, Content-Security-Policy violations, failed loads are all logged as
// "CONSOLE") and "Uncaught" errors. Everything else chromium logs in a container (no D-Bus, no
// GPU, sandbox notes) is about the machine, not the page.
std::vector<std::string> page_errors(const std::string& log);

// An 8-bit RGB or RGBA PNG decoded to RGB pixels (row-major); throws on anything else.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;            // width * height * 3
  uint32_t pixel(int x, int y) const;  // 0xRRGGBB
};
Image read_png(const std::filesystem::path& path);

}  // namespace ds::test
