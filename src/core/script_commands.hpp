// The commands that run a Lua script or a function on the server. Their error replies may
// be the script's own words, and their connection answers nothing else while one runs.
#pragma once

#include <string_view>

namespace redmux::detail {

/// True for EVAL, EVALSHA, FCALL and their read-only forms (`name` as the command table
/// spells it, in capitals).
inline bool runs_script(std::string_view name) noexcept {
  return name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" || name == "EVALSHA_RO" ||
         name == "FCALL" || name == "FCALL_RO";
}

}  // namespace redmux::detail
