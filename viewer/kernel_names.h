// Demangled CUDA kernel names shortened to fit a terminal column, alone or as a set in which
// names that would shorten alike stay distinguishable.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ds::viewer {

// A demangled kernel name shortened to at most `width` columns (exposed for its test): the
// parameter list and a leading "void " go first, then template arguments nested two deep become
// "…", and what is still too long keeps its head and tail around a "…". A name that fits is
// returned as is.
std::string short_kernel_name(const std::string& name, size_t width);

// Names shortened together: as short_kernel_name, except that names which would shorten alike
// show a window of their full name from just before where they differ, "…" on either side.
std::vector<std::string> short_kernel_names(const std::vector<std::string>& names, size_t width);

}  // namespace ds::viewer
