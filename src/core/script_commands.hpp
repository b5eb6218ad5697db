// The commands that run a Lua script or a function on the server. Their error replies may
// be the script's own words, and their connection answers nothing else while one runs.
#pragma once

#include <string_view>
#include <utility>

namespace redmux::detail {

/// True for EVAL, EVALSHA, FCALL and their read-only forms (`name` as the command table
/// spells it, in capitals).
inline bool runs_script(std::string_view name) noexcept {
  return name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" || name == "EVALSHA_RO" ||
         name == "FCALL" || name == "FCALL_RO";
}

/// True when `error_text` (or its start) is the server's own refusal of a command it did not
/// run, in the server's words: LOADING, BUSY (a script or module running), MASTERDOWN,
/// TRYAGAIN or CLUSTERDOWN as Redis and Valkey write them ("TRYAGAIN Multiple keys request
/// during rehashing of slot", "BUSY Redis is busy running a script. …"). A script's
/// redis.error_reply() may return the same first word with words of its own after writing
/// ("TRYAGAIN later"): for a script's reply only these texts say that nothing ran.
inline bool is_server_refusal_text(std::string_view text) noexcept {
  for (const std::string_view start :
       {"TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN The cluster is down", "CLUSTERDOWN Hash slot not served",
        "MASTERDOWN Link with MASTER is down"}) {
    if (text.starts_with(start)) return true;
  }
  // These name the server ("Redis", "Valkey") after the word.
  for (const auto& [word, rest] :
       {std::pair<std::string_view, std::string_view>{"BUSY ", " is busy running a "},
        std::pair<std::string_view, std::string_view>{"LOADING ",
                                                      " is loading the dataset in memory"}}) {
    if (!text.starts_with(word)) continue;
    const std::string_view after = text.substr(word.size());
    const std::size_t space = after.find(' ');
    return space != std::string_view::npos && space > 0 && after.substr(space).starts_with(rest);
  }
  return false;
}

}  // namespace redmux::detail
