// The library's version. Constants only; safe from any thread.
#pragma once

#include <string_view>

namespace redmux {

inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;
/// "major.minor.patch", as sent in CLIENT SETINFO LIB-VER and printed in diagnostics.
inline constexpr std::string_view kVersion = "0.1.0";

}  // namespace redmux
