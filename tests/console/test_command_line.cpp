// Command lines as a shell reads them (src/console/command_line.h): what traces record as their
// command line and zoom shows as a replay's command.
#include <catch2/catch.hpp>

#include "src/console/command_line.h"

TEST_CASE("shell quoting: safe words stay as they are, others are single-quoted", "[console]") {
  CHECK(ds::shell_quote("runs/dtype-bf16_batch-8.h5") == "runs/dtype-bf16_batch-8.h5");
  CHECK(ds::shell_quote("--seq=0,3") == "--seq=0,3");
  CHECK(ds::shell_quote("") == "''");
  CHECK(ds::shell_quote("a b") == "'a b'");
  CHECK(ds::shell_quote("it's") == "'it'\\''s'");
  CHECK(ds::shell_quote("$HOME") == "'$HOME'");
  CHECK(ds::shell_command({"driftscope", "run", "-p", "Once upon"}) ==
        "driftscope run -p 'Once upon'");
}
