// Argument types of the stream commands: StreamTrim (MAXLEN/MINID, exact or ~ with LIMIT) and
// the options of XADD, XREAD, XREADGROUP, XGROUP CREATE, XPENDING and XCLAIM. Plain values;
// not synchronised. Included by streams.hpp.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "redmux/arg.hpp"
#include "redmux/commands/sink.hpp"

namespace redmux {

/// How XADD and XTRIM trim a stream: to a maximum length (MAXLEN) or by evicting entries
/// with an id below a threshold (MINID), exactly (`=`, the default) or approximately (`~`:
/// only whole internal nodes are evicted — cheaper, may keep a few more entries).
///   StreamTrim::max_len(1000)                     // MAXLEN = 1000
///   StreamTrim::max_len(1000).approximate()       // MAXLEN ~ 1000
///   StreamTrim::min_id("1700000000000-0").approximate(100)  // MINID ~ … LIMIT 100
class StreamTrim {
 public:
  static StreamTrim max_len(long long length) { return StreamTrim("MAXLEN", Arg(length).bytes()); }
  static StreamTrim min_id(std::string_view id) { return StreamTrim("MINID", id); }
  /// `~` instead of `=`; `limit` > 0 caps the entries one call evicts (LIMIT, only valid
  /// with `~`; 0: the server's default of 100 × the node size).
  StreamTrim& approximate(long long limit = 0) & noexcept {
    approximate_ = true;
    limit_ = limit;
    return *this;
  }
  StreamTrim&& approximate(long long limit = 0) && noexcept {
    return std::move(approximate(limit));
  }

  /// Appends "MAXLEN|MINID =|~ threshold [LIMIT n]". The arguments view this object.
  void append_to(detail::ArgList& args) const {
    args.add(strategy_);
    args.add(approximate_ ? "~" : "=");
    args.add(std::string_view(threshold_));
    if (approximate_ && limit_ > 0) {
      args.add("LIMIT");
      args.add(limit_);
    }
  }

 private:
  StreamTrim(const char* strategy, std::string_view threshold)
      : strategy_(strategy), threshold_(threshold) {}
  const char* strategy_;
  std::string threshold_;
  bool approximate_ = false;
  long long limit_ = 0;
};

/// Options of XADD.
struct XAddOptions {
  std::string_view id = "*";         ///< "*": the server generates it; or "ms-seq", "ms-*"
  std::optional<StreamTrim> trim{};  ///< trim in the same call
};

/// Options of XREAD (and the COUNT of XREADGROUP).
struct XReadOptions {
  long long count = 0;  ///< COUNT: at most this many entries per stream; 0 for no limit
};

/// Options of XREADGROUP.
struct XReadGroupOptions {
  long long count = 0;  ///< COUNT; 0 for no limit
  bool no_ack = false;  ///< NOACK: do not add the entries to the pending list
};

/// Options of XGROUP CREATE.
struct XGroupCreateOptions {
  bool mkstream = false;                    ///< MKSTREAM: create an empty stream if missing
  std::optional<long long> entries_read{};  ///< ENTRIESREAD (7.0+): for lag tracking
};

/// Which pending entries the extended XPENDING lists.
struct XPendingFilter {
  std::string_view start = "-";
  std::string_view end = "+";
  std::string_view consumer{};                          ///< empty: every consumer
  std::optional<std::chrono::milliseconds> min_idle{};  ///< IDLE (6.2+)
};

/// Options of XCLAIM.
struct XClaimOptions {
  std::optional<std::chrono::milliseconds> idle{};              ///< IDLE: set the idle time
  std::optional<std::chrono::system_clock::time_point> time{};  ///< TIME: idle since then
  std::optional<long long> retry_count{};                       ///< RETRYCOUNT
  bool force = false;  ///< FORCE: claim ids not pending yet (they must exist in the stream)
};

}  // namespace redmux
