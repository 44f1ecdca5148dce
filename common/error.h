// The one error type library code throws (shared by src, trace, diff, viewer; header-only): a
// message for the user and an optional hint to fix it.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ds {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

}  // namespace ds
