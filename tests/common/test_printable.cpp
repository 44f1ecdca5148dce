// printable: control characters shown escaped, everything else (UTF-8 included) unchanged.
// Expected strings are written by hand.
#include <catch2/catch.hpp>
#include <string>

#include "common/printable.h"

using ds::printable;

TEST_CASE("printable escapes control characters and keeps text", "[common][printable]") {
  CHECK(printable("plain/path-1.h5") == "plain/path-1.h5");
  CHECK(printable("caf\xc3\xa9 \xe2\x96\x81Once") == "caf\xc3\xa9 \xe2\x96\x81Once");  // é, ▁
  CHECK(printable("x\x1b[31mred") == "x\\e[31mred");
  CHECK(printable("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(printable(std::string("n\0l\x7f", 4)) == "n\\x00l\\x7f");
  CHECK(printable("c1 \xc2\x9b"
                  "2J") == "c1 \\u009b2J");    // U+009B, the 8-bit CSI
  CHECK(printable("\xc2\xa0") == "\xc2\xa0");  // U+00A0 is no control
  CHECK(printable("back\\slash") == "back\\slash");
  CHECK(printable("two\nlines\x1b", true) == "two\nlines\\e");
}

TEST_CASE("printable_json escapes what JSON leaves raw: DEL and C1 controls",
          "[common][printable]") {
  // nlohmann's dump escapes C0 only: the 8-bit CSI U+009B of a prompt reached the terminal raw
  // in `show` and `diff` (issue 45, second round).
  CHECK(ds::printable_json("\"\xc2\x9b"
                           "31m the LORD\"") == "\"\\u009b31m the LORD\"");
  CHECK(ds::printable_json("\"a\x7f"
                           "b\"") == "\"a\\u007fb\"");
  CHECK(ds::printable_json("\"\xc2\x80\xc2\x9f\xc2\xa0\"") == "\"\\u0080\\u009f\xc2\xa0\"");
  CHECK(ds::printable_json("\"caf\xc3\xa9 \\n\"") == "\"caf\xc3\xa9 \\n\"");  // unchanged
}
