// driftscope executable: everything happens in cli_main (src/cli/cli.cpp).
#include "src/cli/cli.h"

int main(int argc, char** argv) {
  return ds::cli_main(argc, argv);
}
