// A fixture for the layering check (tests/CMakeLists.txt): src/model may not include src/experiment.
#pragma once
#include "src/experiment/generate.h"
