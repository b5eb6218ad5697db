// The one command table: every Redis 7.0 command (and Valkey 8 / Redis 7.2 additions) with
// its flags and key positions. The router (cluster slot, replica eligibility), the admin
// gate, the blocking-command diversion, retry safety and the cross-slot check all read it,
// instead of comparing command names themselves.
//
// Ownership: the built-in entries are static data; entries for unknown commands are
// interned once and live until the process ends (at most kMaxUnknownCommands of them; past
// that every new unknown name shares one "UNKNOWN" entry), so a `const CommandInfo&` never
// dangles and its `name` may be kept as a static string.
//
// Threads: every function here is safe from any thread. Lookups of known commands take no
// lock and never allocate; unknown commands take a mutex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/reply.hpp"

namespace redmux::detail {

/// What a command does, as far as routing and gating care. Combine with `|`.
enum class CommandFlag : std::uint32_t {
  None = 0,
  ReadOnly = 1u << 0,  ///< Redis "readonly": may go to a replica, safe to resend
  Write = 1u << 1,     ///< Redis "write" (also set for unknown commands: the safe guess)
  /// May block the connection: Redis "blocking" (BLPOP …, XREAD/XREADGROUP — which block
  /// only with BLOCK, see is_blocking()) plus WAIT and WAITAOF, and SCRIPT KILL and FUNCTION KILL,
  /// which need a connection of their own (ends_busy_script()).
  Blocking = 1u << 2,
  /// Needs allowAdmin=true. Our gate list, not Redis's ACL @admin category: see
  /// scripts/gen-command-table for the list and why.
  Admin = 1u << 3,
  /// Changes the state of the connection it runs on (SELECT, MULTI, SUBSCRIBE, AUTH …): never
  /// allowed on the shared connection; connection_state_advice() names the API to use.
  ConnectionState = 1u << 4,
  PubSub = 1u << 5,       ///< Redis "pubsub" (PUBLISH, SUBSCRIBE family …)
  NoScript = 1u << 6,     ///< Redis "noscript": not allowed inside EVAL/FCALL
  MovableKeys = 1u << 7,  ///< key positions depend on the arguments (EVAL, SORT … STORE)
  NoMulti = 1u << 8,      ///< Redis "no_multi": not allowed inside MULTI
  Fast = 1u << 9,         ///< Redis "fast": O(1) or O(log N)
  Unknown = 1u << 10,     ///< not in the built-in table (see command_info())
  /// A read the client-side cache may serve: read-only, and with one key its reply depends
  /// only on that key (redmux's list: scripts/gen-command-table; docs/caching.md).
  Cacheable = 1u << 11,
};

constexpr CommandFlag operator|(CommandFlag a, CommandFlag b) noexcept {
  return static_cast<CommandFlag>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
constexpr CommandFlag operator&(CommandFlag a, CommandFlag b) noexcept {
  return static_cast<CommandFlag>(static_cast<std::uint32_t>(a) & static_cast<std::uint32_t>(b));
}
constexpr CommandFlag operator~(CommandFlag a) noexcept {
  return static_cast<CommandFlag>(~static_cast<std::uint32_t>(a));
}
constexpr bool has_flag(CommandFlag set, CommandFlag flag) noexcept {
  return (static_cast<std::uint32_t>(set) & static_cast<std::uint32_t>(flag)) != 0;
}

/// How to find a command's keys in its arguments (indexes count the command name as 0).
enum class KeyRule : std::uint8_t {
  None,  ///< no keys
  /// Keys at first_key, first_key + step, … up to last_key (as COMMAND INFO reports them;
  /// a negative last_key counts from the end: -1 is the last argument).
  Range,
  /// The Range above (if first_key > 0: the destination of ZUNIONSTORE …), then the count
  /// at numkeys_index and that many keys right after it (EVAL, FCALL, ZUNION, LMPOP …).
  NumKeys,
  /// XREAD/XREADGROUP: after the first "STREAMS" at or after index first_key, the first
  /// half of the remaining arguments.
  Streams,
};

/// How a command runs in a Redis Cluster.
struct ClusterRule {
  enum class Plan : std::uint8_t {
    /// The node serving its keys' slot (keys in several slots are refused before sending).
    OneNode,
    /// Keys in several slots: one command per slot, the replies reassembled in the caller's
    /// order (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH).
    Split,
    /// With no key it means the whole cluster: sent to every primary, replies combined
    /// (DBSIZE, KEYS, FLUSHALL, FLUSHDB, SCRIPT LOAD/EXISTS/FLUSH, FUNCTION
    /// LOAD/DELETE/FLUSH/RESTORE).
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
    Concat,      ///< one array of every part's elements, part after part (KEYS)
    AllOf,       ///< an array of 1 where every part's is 1, else 0 (SCRIPT EXISTS)
  };
  Plan plan = Plan::OneNode;
  Reduce reduce = Reduce::AllOk;
  /// Split: arguments per key (MSET: key and value, 2).
  std::uint8_t key_step = 1;
};

/// One command's entry in the table.
struct CommandInfo {
  std::string_view name;  ///< upper case; "CLIENT KILL" for a subcommand
  CommandFlag flags = CommandFlag::None;
  KeyRule rule = KeyRule::None;
  int first_key = 0;
  int last_key = 0;
  int step = 0;
  int numkeys_index = 0;
  /// A container (CLIENT, CONFIG …): returned only when args[1] named no known subcommand.
  bool has_subcommands = false;
  /// How it runs in a Redis Cluster (commands/command_rules.hpp, cluster_rule_of()).
  ClusterRule cluster{};

  bool is(CommandFlag flag) const noexcept { return has_flag(flags, flag); }
};

/// Past this many distinct unknown names, new ones share the entry named "UNKNOWN".
inline constexpr std::size_t kMaxUnknownCommands = 1024;

/// True for the entry unknown names share past kMaxUnknownCommands: it names no one command,
/// so there is nothing to learn about it.
bool is_shared_unknown(const CommandInfo& info) noexcept;

/// The entry for a command; never fails. Case-insensitive. For a container (CLIENT, CONFIG,
/// OBJECT …) the subcommand entry named by args[1] is returned; with args[1] missing or
/// unknown, the container's own entry (has_subcommands = true; Write unless Redis says
/// ReadOnly; Admin when all its subcommands are). An unknown command (or empty `args`) gets
/// a generic entry: Write | Unknown, no keys. Known commands: no lock, no allocation.
const CommandInfo& command_info(std::span<const Arg> args) noexcept;

/// The built-in entry for `name` ("GET", "client kill", "CLIENT|KILL"), or null.
const CommandInfo* find_command(std::string_view name) noexcept;

/// Every built-in top-level entry (containers such as CLIENT included, subcommands not).
std::span<const CommandInfo> builtin_commands() noexcept;

/// Replaces what the table knows about a command it did not know (learned with COMMAND
/// INFO by the multiplexer); later command_info() calls return the new entry. Entries
/// already returned stay valid and unchanged. Ignored for built-in commands and once the
/// unknown-name bound is reached.
void learn_command(std::string_view name, CommandFlag flags, KeyRule rule, int first_key,
                   int last_key, int step, int numkeys_index);

/// learn_command() from the reply to `COMMAND INFO name` (RESP2 or RESP3): flags
/// readonly/write/blocking/pubsub/noscript/movablekeys/no_multi/fast and the first/last/
/// step key positions (movable keys beyond those are not learned). False, learning
/// nothing, when the reply is not one command entry (an unknown name answers [nil]).
bool learn_command_from_reply(std::string_view name, NodeSpan reply);

/// Appends the indexes into `args` of every key of the command (in argument order).
/// Malformed arguments (a count past the end, no STREAMS …) yield the keys that can be
/// found; the server will reject the command itself.
void key_indexes(const CommandInfo& info, std::span<const Arg> args, std::vector<std::size_t>& out);

/// key_indexes() without an allocation for a command of up to kInline keys (the common
/// case, on the cluster's send path): the indexes live in the object.
class KeyIndexes {
 public:
  static constexpr std::size_t kInline = 8;
  KeyIndexes(const CommandInfo& info, std::span<const Arg> args);
  KeyIndexes(const KeyIndexes&) = delete;
  KeyIndexes& operator=(const KeyIndexes&) = delete;
  std::span<const std::size_t> get() const noexcept {
    return count_ <= kInline ? std::span<const std::size_t>(inline_.data(), count_)
                             : std::span<const std::size_t>(more_);
  }

 private:
  std::array<std::size_t, kInline> inline_{};
  std::size_t count_ = 0;
  std::vector<std::size_t> more_;  ///< all of them, past kInline
};

/// The index of the command's first key, if it has one with these arguments.
std::optional<std::size_t> first_key_index(const CommandInfo& info,
                                           std::span<const Arg> args) noexcept;

/// True when the command will block its connection with these arguments: BLPOP …, WAIT,
/// and XREAD/XREADGROUP only when they carry BLOCK.
bool is_blocking(const CommandInfo& info, std::span<const Arg> args) noexcept;

/// XREAD [COUNT n] [BLOCK ms] STREAMS … and XREADGROUP GROUP group consumer [COUNT n]
/// [BLOCK ms] [NOACK] STREAMS …: the index of BLOCK's milliseconds, read among the options
/// only (a group, consumer or stream called "BLOCK" is not the option); 0 when there is no
/// BLOCK (or no value after it), or the command is neither.
std::size_t stream_block_index(const CommandInfo& info, std::span<const Arg> args) noexcept;

/// For a ConnectionState command: what to use instead, for the error message (e.g. "use
/// Multiplexer::database(index): the database index is part of each command's route").
/// Empty for other commands.
std::string_view connection_state_advice(const CommandInfo& info) noexcept;
/// The advice for a connection-state command queued in a Transaction (which has a
/// connection of its own but sends MULTI/EXEC/WATCH itself and keeps its database).
std::string_view transaction_advice(const CommandInfo& info) noexcept;

}  // namespace redmux::detail
