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

#include "commands/command_table.hpp"
#include "redmux/arg.hpp"

namespace redmux::detail {

/// How long a blocking command may block the server side, from its timeout argument:
/// nullopt for 0 (forever); 0 ms when the argument is missing or malformed (the server
/// rejects such a command at once). BLPOP family: seconds (fractions allowed); XREAD BLOCK,
/// WAIT and WAITAOF: milliseconds. 0 ms for a command that does not block.
std::optional<std::chrono::milliseconds> blocking_time(const CommandInfo& info,
                                                       std::span<const Arg> args) noexcept;

/// How a command runs in a Redis Cluster.
struct ClusterRule {
  enum class Plan : std::uint8_t {
    /// The node serving its keys' slot (keys in several slots are refused before sending).
    OneNode,
    /// Keys in several slots: one command per slot, the replies reassembled in the caller's
    /// order (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH).
    Split,
    /// With no key it means the whole cluster: sent to every primary, replies combined
    /// (DBSIZE, FLUSHALL, FLUSHDB, SCRIPT FLUSH, FUNCTION LOAD/DELETE/FLUSH/RESTORE).
    EveryPrimary,
    /// SCAN: one primary at a time, the cursor says which.
    ScanEveryPrimary,
  };
  /// How the replies of a Split or EveryPrimary command are combined.
  enum class Reduce : std::uint8_t {
    AllOk,       ///< +OK when every part said OK, else the first error (MSET, FLUSHALL …)
    Sum,         ///< the sum of the integer replies (DEL, EXISTS …, DBSIZE)
    FirstReply,  ///< the first primary's reply (FUNCTION LOAD: the library name)
    Values,      ///< one array, each part's values put back at their keys' places (MGET)
  };
  Plan plan = Plan::OneNode;
  Reduce reduce = Reduce::AllOk;
  /// Split: arguments per key (MSET: key and value, 2).
  std::uint8_t key_step = 1;
};

ClusterRule cluster_rule(const CommandInfo& info) noexcept;

}  // namespace redmux::detail
