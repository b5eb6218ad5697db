// Rules about commands that need more than their flags: how long a blocking command may
// block (from its timeout argument), and how a command runs in a Redis Cluster (one node,
// split per slot, or every primary with the replies combined). The multiplexer asks here
// instead of comparing command names itself.
//
// Pure functions of the command table's entry (and the arguments); safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "commands/command_table.hpp"
#include "redmux/arg.hpp"

namespace redmux::detail {

/// How long a blocking command may block the server side, from its timeout argument:
/// nullopt for 0 (forever); 0 ms when the argument is missing or malformed (the server
/// rejects such a command at once). BLPOP family: seconds (fractions allowed); XREAD BLOCK,
/// WAIT and WAITAOF: milliseconds. 0 ms for a command that does not block.
std::optional<std::chrono::milliseconds> blocking_time(const CommandInfo& info,
                                                       std::span<const Arg> args) noexcept;

/// Where a blocking command's timeout argument is (0: it has none, or it is missing) and
/// whether it counts seconds (the BLPOP family) or milliseconds (XREAD BLOCK, WAIT, WAITAOF).
struct BlockingTimeArg {
  std::size_t index = 0;
  bool seconds = true;
};
BlockingTimeArg blocking_time_arg(const CommandInfo& info, std::span<const Arg> args) noexcept;

/// SCRIPT KILL, FUNCTION KILL: flagged Blocking so that they get a connection of their own
/// (on the shared one they would wait behind the EVAL or FCALL they end), though they do not
/// block.
bool ends_busy_script(const CommandInfo& info) noexcept;

/// The keys of a command of the table's Range rule that also has movable keys (SORT,
/// SORT_RO, GEORADIUS, GEORADIUSBYMEMBER, MIGRATE), as Redis's own key extraction finds them:
/// the fixed one unless `fixed_is_key` is false (MIGRATE's "" before KEYS), then args
/// [begin, end): SORT … STORE dst and GEORADIUS… STORE|STOREDIST dst (the last one given),
/// MIGRATE … KEYS key…. Empty [begin, end) when there are none.
struct MovableKeys {
  bool fixed_is_key = true;
  std::size_t begin = 0;
  std::size_t end = 0;
};
MovableKeys movable_keys(const CommandInfo& info, std::span<const Arg> args) noexcept;

/// How a command runs in a Redis Cluster (ClusterRule, command_table.hpp), by its table name:
/// set once in each entry of the command table (CommandInfo::cluster) when it is built.
constexpr ClusterRule cluster_rule_of(std::string_view name) noexcept {
  using Plan = ClusterRule::Plan;
  using Reduce = ClusterRule::Reduce;
  if (name == "MGET") return {Plan::Split, Reduce::Values, 1};
  if (name == "MSET") return {Plan::Split, Reduce::AllOk, 2};
  if (name == "DEL" || name == "UNLINK" || name == "EXISTS" || name == "TOUCH") {
    return {Plan::Split, Reduce::Sum, 1};
  }
  if (name == "DBSIZE") return {Plan::EveryPrimary, Reduce::Sum, 1};
  if (name == "KEYS") return {Plan::EveryPrimary, Reduce::Concat, 1};
  if (name == "FUNCTION LOAD" || name == "SCRIPT LOAD") {
    return {Plan::EveryPrimary, Reduce::FirstReply, 1};  // the library's name, the SHA1
  }
  if (name == "SCRIPT EXISTS") return {Plan::EveryPrimary, Reduce::AllOf, 1};
  if (name == "FLUSHALL" || name == "FLUSHDB" || name == "SCRIPT FLUSH" ||
      name == "FUNCTION DELETE" || name == "FUNCTION FLUSH" || name == "FUNCTION RESTORE") {
    return {Plan::EveryPrimary, Reduce::AllOk, 1};
  }
  if (name == "SCAN") return {Plan::ScanEveryPrimary, Reduce::AllOk, 1};
  return {};
}

}  // namespace redmux::detail
