// A fixture for the layering check (tests/CMakeLists.txt): src/model may not include src/run.
#pragma once
#include "src/run/generate.h"
