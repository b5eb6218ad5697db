// Per-command flags and options. Plain values, safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace redmux {

/// How a command is sent and where it may go. Combine with `|`.
enum class Flags : std::uint32_t {
  None = 0,
  /// Do not wait for the reply: the future completes at once; the reply is still read and
  /// dropped, and an error reply is counted and passed to the error callback.
  FireAndForget = 1u << 0,
  /// Routing (the default is PreferMaster): reads may use replicas under PreferReplica;
  /// DemandMaster / DemandReplica fail when no such server is available (the two together
  /// are refused: errc::invalid_argument).
  PreferMaster = 0,
  DemandMaster = 1u << 1,
  PreferReplica = 1u << 2,
  DemandReplica = 1u << 3,
  /// The caller declares the command safe to resend if the connection breaks after it was
  /// written (an idempotent write). Without it such a command fails as "outcome unknown".
  Retryable = 1u << 4,
  /// Client-side cache (clientCache=true, docs/caching.md): this read bypasses the cache — it
  /// is sent to the server and its reply is not stored.
  NoCache = 1u << 5,
  /// Client-side cache: asks for this read to be served from and stored in the cache (needed
  /// under clientCacheReads=flagged; a read the cache cannot serve is simply sent).
  Cache = 1u << 6,
};

constexpr Flags operator|(Flags a, Flags b) noexcept {
  return static_cast<Flags>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
constexpr Flags operator&(Flags a, Flags b) noexcept {
  return static_cast<Flags>(static_cast<std::uint32_t>(a) & static_cast<std::uint32_t>(b));
}
constexpr bool has_flag(Flags set, Flags flag) noexcept {
  return (static_cast<std::uint32_t>(set) & static_cast<std::uint32_t>(flag)) != 0;
}

/// The fields of CallOptions as an aggregate, so that they can be named where a call takes
/// one: `db.command<long long>({.timeout = 100ms}, "OBJECT", "FREQ", key)`. (CallOptions
/// itself converts from Flags, which an aggregate cannot.)
struct CallSpec {
  Flags flags = Flags::None;
  std::chrono::milliseconds timeout{0};  ///< zero: the multiplexer's asyncTimeout
};

/// Options for one call. Implicitly built from Flags, so `db.incr("k", Flags::FireAndForget)`
/// works, and from a CallSpec.
struct CallOptions {
  CallOptions() = default;
  CallOptions(const CallSpec& spec)  // NOLINT(google-explicit-constructor)
      : flags(spec.flags), timeout(spec.timeout) {}
  CallOptions(Flags f) : flags(f) {}  // NOLINT(google-explicit-constructor)
  CallOptions(Flags f, std::chrono::milliseconds t) : flags(f), timeout(t) {}

  Flags flags = Flags::None;
  /// The command's timeout; zero means the multiplexer's asyncTimeout.
  std::chrono::milliseconds timeout{0};
};

}  // namespace redmux
