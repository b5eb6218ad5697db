// Stream commands (XADD, XRANGE, XREAD, consumer groups, XPENDING, XCLAIM, XINFO …) as a
// mixin for any sink (see sink.hpp); argument types in stream_args.hpp, result types in
// stream_types.hpp. Keys, ids, fields and values are binary-safe std::string_views, viewed
// only for the duration of the call. Ids are kept as text ("1700000000000-0"); "-" and "+"
// are the smallest and largest ids, "$" the last one.
//
// XREAD and XREADGROUP come in two forms: the plain ones never block and go over the shared
// connection; the *_block ones carry BLOCK and are blocking commands, which a Database sends
// on a dedicated connection (docs/blocking.md). Thread-safety: that of the sink's send().
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/commands/sink.hpp"
#include "redmux/commands/stream_args.hpp"
#include "redmux/commands/stream_types.hpp"

namespace redmux {

template <class Derived>
class StreamCommands {
 public:
  /// Appends an entry: `db.xadd("events", {{"type", "click"}, {"x", "3"}})`; its id. XADD key
  /// [MAXLEN|MINID …] id field value …. The key is created when missing.
  Future<std::string> xadd(std::string_view key, detail::StringPairs fields,
                           const XAddOptions& xadd_options = {}, CallOptions options = {}) {
    return xadd<detail::StringPairs>(key, fields, xadd_options, options);
  }
  template <detail::StringPairRange Fields>
  Future<std::string> xadd(std::string_view key, const Fields& fields,
                           const XAddOptions& xadd_options = {}, CallOptions options = {}) {
    detail::ArgList args = xadd_args(key, false, fields, xadd_options);
    return detail::send_built<std::string>(*this, options, args);
  }
  /// Like xadd() but never creates the stream (NOMKSTREAM): nullopt when it is missing.
  Future<std::optional<std::string>> xadd_nomkstream(std::string_view key,
                                                     detail::StringPairs fields,
                                                     const XAddOptions& xadd_options = {},
                                                     CallOptions options = {}) {
    return xadd_nomkstream<detail::StringPairs>(key, fields, xadd_options, options);
  }
  template <detail::StringPairRange Fields>
  Future<std::optional<std::string>> xadd_nomkstream(std::string_view key, const Fields& fields,
                                                     const XAddOptions& xadd_options = {},
                                                     CallOptions options = {}) {
    detail::ArgList args = xadd_args(key, true, fields, xadd_options);
    return detail::send_built<std::optional<std::string>>(*this, options, args);
  }

  /// Entries with ids in [start, end], oldest first; at most `count` (0: all). XRANGE key
  /// start end [COUNT n]. An id prefixed with "(" is exclusive.
  Future<std::vector<StreamEntry>> xrange(std::string_view key, std::string_view start = "-",
                                          std::string_view end = "+", long long count = 0,
                                          CallOptions options = {}) {
    return send_range("XRANGE", key, start, end, count, options);
  }
  /// Entries with ids in [start, end], newest first (note: `end` comes first, as in Redis).
  /// XREVRANGE key end start [COUNT n].
  Future<std::vector<StreamEntry>> xrevrange(std::string_view key, std::string_view end = "+",
                                             std::string_view start = "-", long long count = 0,
                                             CallOptions options = {}) {
    return send_range("XREVRANGE", key, end, start, count, options);
  }
  /// Number of entries; 0 for a missing key. XLEN.
  Future<long long> xlen(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"XLEN", key});
  }
  /// Trims the stream; how many entries were evicted. XTRIM key MAXLEN|MINID ….
  Future<long long> xtrim(std::string_view key, const StreamTrim& trim, CallOptions options = {}) {
    detail::ArgList args({"XTRIM", key}, 5);
    trim.append_to(args);
    return detail::send_built<long long>(*this, options, args);
  }
  /// Deletes entries by id; how many existed. XDEL.
  Future<long long> xdel(std::string_view key, std::initializer_list<std::string_view> ids,
                         CallOptions options = {}) {
    return xdel<std::initializer_list<std::string_view>>(key, ids, options);
  }
  template <detail::StringRange Ids>
  Future<long long> xdel(std::string_view key, const Ids& ids, CallOptions options = {}) {
    detail::ArgList args({"XDEL", key}, detail::size_hint(ids));
    args.add_all(ids);
    return detail::send_built<long long>(*this, options, args);
  }

  /// Reads entries after the given id of each stream: `db.xread({{"s1", "0"}, {"s2", last}})`.
  /// Never blocks; empty when nothing is newer. XREAD [COUNT n] STREAMS key… id….
  Future<std::vector<StreamMessages>> xread(detail::StringPairs streams, XReadOptions read = {},
                                            CallOptions options = {}) {
    return xread<detail::StringPairs>(streams, read, options);
  }
  template <detail::StringPairRange Streams>
  Future<std::vector<StreamMessages>> xread(const Streams& streams, XReadOptions read = {},
                                            CallOptions options = {}) {
    return send_xread(streams, std::nullopt, read, options);
  }
  /// Like xread(), waiting up to `block` (0: forever) for an entry when there is none; empty
  /// on time-out. XREAD … BLOCK ms …: a blocking command (dedicated connection).
  Future<std::vector<StreamMessages>> xread_block(detail::StringPairs streams,
                                                  std::chrono::milliseconds block,
                                                  XReadOptions read = {},
                                                  CallOptions options = {}) {
    return xread_block<detail::StringPairs>(streams, block, read, options);
  }
  template <detail::StringPairRange Streams>
  Future<std::vector<StreamMessages>> xread_block(const Streams& streams,
                                                  std::chrono::milliseconds block,
                                                  XReadOptions read = {},
                                                  CallOptions options = {}) {
    return send_xread(streams, detail::server_block_ms(block), read, options);
  }

  /// Reads as `consumer` of `group`: id ">" for entries never delivered to the group, any
  /// other id for this consumer's pending history after it. Never blocks.
  /// XREADGROUP GROUP g c [COUNT n] [NOACK] STREAMS key… id….
  Future<std::vector<StreamMessages>> xreadgroup(std::string_view group, std::string_view consumer,
                                                 detail::StringPairs streams,
                                                 XReadGroupOptions read = {},
                                                 CallOptions options = {}) {
    return xreadgroup<detail::StringPairs>(group, consumer, streams, read, options);
  }
  template <detail::StringPairRange Streams>
  Future<std::vector<StreamMessages>> xreadgroup(std::string_view group, std::string_view consumer,
                                                 const Streams& streams,
                                                 XReadGroupOptions read = {},
                                                 CallOptions options = {}) {
    return send_xreadgroup(group, consumer, streams, read, std::nullopt, options);
  }
  /// Like xreadgroup(), waiting up to `block` (0: forever). A blocking command.
  Future<std::vector<StreamMessages>> xreadgroup_block(
      std::string_view group, std::string_view consumer, detail::StringPairs streams,
      std::chrono::milliseconds block, XReadGroupOptions read = {}, CallOptions options = {}) {
    return xreadgroup_block<detail::StringPairs>(group, consumer, streams, block, read, options);
  }
  template <detail::StringPairRange Streams>
  Future<std::vector<StreamMessages>> xreadgroup_block(
      std::string_view group, std::string_view consumer, const Streams& streams,
      std::chrono::milliseconds block, XReadGroupOptions read = {}, CallOptions options = {}) {
    return send_xreadgroup(group, consumer, streams, read, detail::server_block_ms(block), options);
  }

  /// Creates a consumer group starting after `id` ("$": only new entries; "0": everything).
  /// XGROUP CREATE key group id [MKSTREAM] [ENTRIESREAD n]. An existing group: ServerError
  /// "BUSYGROUP …"; a missing stream without mkstream: ServerError.
  Future<void> xgroup_create(std::string_view key, std::string_view group,
                             std::string_view id = "$", XGroupCreateOptions create = {},
                             CallOptions options = {}) {
    detail::ArgList args({"XGROUP", "CREATE", key, group, id}, 3);
    if (create.mkstream) args.add("MKSTREAM");
    if (create.entries_read) {
      args.add("ENTRIESREAD");
      args.add(*create.entries_read);
    }
    return detail::send_built<void>(*this, options, args);
  }
  /// Deletes a group and its pending list; false when there was none. XGROUP DESTROY.
  Future<bool> xgroup_destroy(std::string_view key, std::string_view group,
                              CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"XGROUP", "DESTROY", key, group});
  }
  /// Moves a group's last-delivered id. XGROUP SETID key group id.
  Future<void> xgroup_setid(std::string_view key, std::string_view group, std::string_view id,
                            CallOptions options = {}) {
    return detail::send_command<void>(*this, options, {"XGROUP", "SETID", key, group, id});
  }
  /// Creates a consumer; false when it existed. XGROUP CREATECONSUMER.
  Future<bool> xgroup_createconsumer(std::string_view key, std::string_view group,
                                     std::string_view consumer, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options,
                                      {"XGROUP", "CREATECONSUMER", key, group, consumer});
  }
  /// Deletes a consumer; how many pending entries it held (now no longer pending).
  /// XGROUP DELCONSUMER.
  Future<long long> xgroup_delconsumer(std::string_view key, std::string_view group,
                                       std::string_view consumer, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options,
                                           {"XGROUP", "DELCONSUMER", key, group, consumer});
  }

  /// Acknowledges entries (removes them from the group's pending list); how many were
  /// pending. XACK key group id….
  Future<long long> xack(std::string_view key, std::string_view group,
                         std::initializer_list<std::string_view> ids, CallOptions options = {}) {
    return xack<std::initializer_list<std::string_view>>(key, group, ids, options);
  }
  template <detail::StringRange Ids>
  Future<long long> xack(std::string_view key, std::string_view group, const Ids& ids,
                         CallOptions options = {}) {
    detail::ArgList args({"XACK", key, group}, detail::size_hint(ids));
    args.add_all(ids);
    return detail::send_built<long long>(*this, options, args);
  }

  /// The pending list's summary. XPENDING key group.
  Future<StreamPendingSummary> xpending(std::string_view key, std::string_view group,
                                        CallOptions options = {}) {
    return detail::send_command<StreamPendingSummary>(*this, options, {"XPENDING", key, group});
  }
  /// Up to `count` pending entries matching `filter`, oldest first. XPENDING key group
  /// [IDLE ms] start end count [consumer].
  Future<std::vector<PendingEntry>> xpending(std::string_view key, std::string_view group,
                                             long long count, XPendingFilter filter = {},
                                             CallOptions options = {}) {
    detail::ArgList args({"XPENDING", key, group}, 6);
    if (filter.min_idle) {
      args.add("IDLE");
      args.add(static_cast<long long>(filter.min_idle->count()));
    }
    args.add(filter.start);
    args.add(filter.end);
    args.add(count);
    if (!filter.consumer.empty()) args.add(filter.consumer);
    return detail::send_built<std::vector<PendingEntry>>(*this, options, args);
  }

  /// Gives `consumer` the pending entries among `ids` idle for at least `min_idle`; the
  /// entries claimed. XCLAIM key group consumer min-idle id… [IDLE] [TIME] [RETRYCOUNT]
  /// [FORCE].
  Future<std::vector<StreamEntry>> xclaim(std::string_view key, std::string_view group,
                                          std::string_view consumer,
                                          std::chrono::milliseconds min_idle,
                                          std::initializer_list<std::string_view> ids,
                                          XClaimOptions claim = {}, CallOptions options = {}) {
    return xclaim<std::initializer_list<std::string_view>>(key, group, consumer, min_idle, ids,
                                                           claim, options);
  }
  template <detail::StringRange Ids>
  Future<std::vector<StreamEntry>> xclaim(std::string_view key, std::string_view group,
                                          std::string_view consumer,
                                          std::chrono::milliseconds min_idle, const Ids& ids,
                                          XClaimOptions claim = {}, CallOptions options = {}) {
    detail::ArgList args = xclaim_args(key, group, consumer, min_idle, ids, claim, false);
    return detail::send_built<std::vector<StreamEntry>>(*this, options, args);
  }
  /// Like xclaim(), answering only the ids claimed (JUSTID: the delivery count is not
  /// incremented).
  template <detail::StringRange Ids>
  Future<std::vector<std::string>> xclaim_ids(std::string_view key, std::string_view group,
                                              std::string_view consumer,
                                              std::chrono::milliseconds min_idle, const Ids& ids,
                                              XClaimOptions claim = {}, CallOptions options = {}) {
    detail::ArgList args = xclaim_args(key, group, consumer, min_idle, ids, claim, true);
    return detail::send_built<std::vector<std::string>>(*this, options, args);
  }
  Future<std::vector<std::string>> xclaim_ids(std::string_view key, std::string_view group,
                                              std::string_view consumer,
                                              std::chrono::milliseconds min_idle,
                                              std::initializer_list<std::string_view> ids,
                                              XClaimOptions claim = {}, CallOptions options = {}) {
    return xclaim_ids<std::initializer_list<std::string_view>>(key, group, consumer, min_idle, ids,
                                                               claim, options);
  }

  /// Claims up to `count` pending entries idle for at least `min_idle`, scanning from
  /// `start` ("0-0" for the beginning). Pass the answer's next_id as `start` to continue.
  /// XAUTOCLAIM key group consumer min-idle start [COUNT n] (6.2+).
  Future<StreamAutoClaim> xautoclaim(std::string_view key, std::string_view group,
                                     std::string_view consumer, std::chrono::milliseconds min_idle,
                                     std::string_view start = "0-0", long long count = 100,
                                     CallOptions options = {}) {
    return detail::send_command<StreamAutoClaim>(
        *this, options,
        {"XAUTOCLAIM", key, group, consumer, static_cast<long long>(min_idle.count()), start,
         "COUNT", count});
  }
  /// Like xautoclaim(), ids only (JUSTID).
  Future<StreamAutoClaimIds> xautoclaim_ids(std::string_view key, std::string_view group,
                                            std::string_view consumer,
                                            std::chrono::milliseconds min_idle,
                                            std::string_view start = "0-0", long long count = 100,
                                            CallOptions options = {}) {
    return detail::send_command<StreamAutoClaimIds>(
        *this, options,
        {"XAUTOCLAIM", key, group, consumer, static_cast<long long>(min_idle.count()), start,
         "COUNT", count, "JUSTID"});
  }

  /// The stream's length, ids, first and last entries …. XINFO STREAM key. A missing key:
  /// ServerError "no such key".
  Future<StreamInfo> xinfo_stream(std::string_view key, CallOptions options = {}) {
    return detail::send_command<StreamInfo>(*this, options, {"XINFO", "STREAM", key});
  }
  /// The stream's consumer groups. XINFO GROUPS key.
  Future<std::vector<StreamGroupInfo>> xinfo_groups(std::string_view key,
                                                    CallOptions options = {}) {
    return detail::send_command<std::vector<StreamGroupInfo>>(*this, options,
                                                              {"XINFO", "GROUPS", key});
  }
  /// A group's consumers. XINFO CONSUMERS key group.
  Future<std::vector<StreamConsumerInfo>> xinfo_consumers(std::string_view key,
                                                          std::string_view group,
                                                          CallOptions options = {}) {
    return detail::send_command<std::vector<StreamConsumerInfo>>(
        *this, options, {"XINFO", "CONSUMERS", key, group});
  }

 private:
  template <class Fields>
  static detail::ArgList xadd_args(std::string_view key, bool nomkstream, const Fields& fields,
                                   const XAddOptions& o) {
    detail::ArgList args({"XADD", key}, 2 * detail::size_hint(fields) + 7);
    if (nomkstream) args.add("NOMKSTREAM");
    if (o.trim) o.trim->append_to(args);
    args.add(o.id);
    args.add_pairs(fields);
    return args;
  }
  Future<std::vector<StreamEntry>> send_range(const char* command, std::string_view key,
                                              std::string_view from, std::string_view to,
                                              long long count, const CallOptions& options) {
    if (count > 0)
      return detail::send_command<std::vector<StreamEntry>>(
          *this, options, {command, key, from, to, "COUNT", count});
    return detail::send_command<std::vector<StreamEntry>>(*this, options, {command, key, from, to});
  }
  /// Appends "STREAMS key… id…".
  template <class Streams>
  static void add_streams(detail::ArgList& args, const Streams& streams) {
    args.add("STREAMS");
    for (auto&& s : streams) args.add(std::string_view(s.first));
    for (auto&& s : streams) args.add(std::string_view(s.second));
  }
  template <class Streams>
  Future<std::vector<StreamMessages>> send_xread(const Streams& streams,
                                                 std::optional<long long> block,
                                                 const XReadOptions& read,
                                                 const CallOptions& options) {
    detail::ArgList args({"XREAD"}, 2 * detail::size_hint(streams) + 5);
    if (read.count > 0) {
      args.add("COUNT");
      args.add(read.count);
    }
    if (block) {
      args.add("BLOCK");
      args.add(*block);
    }
    add_streams(args, streams);
    return detail::send_built<std::vector<StreamMessages>>(*this, options, args);
  }
  template <class Streams>
  Future<std::vector<StreamMessages>> send_xreadgroup(
      std::string_view group, std::string_view consumer, const Streams& streams,
      const XReadGroupOptions& read, std::optional<long long> block, const CallOptions& options) {
    detail::ArgList args({"XREADGROUP", "GROUP", group, consumer},
                         2 * detail::size_hint(streams) + 6);
    if (read.count > 0) {
      args.add("COUNT");
      args.add(read.count);
    }
    if (block) {
      args.add("BLOCK");
      args.add(*block);
    }
    if (read.no_ack) args.add("NOACK");
    add_streams(args, streams);
    return detail::send_built<std::vector<StreamMessages>>(*this, options, args);
  }
  template <class Ids>
  static detail::ArgList xclaim_args(std::string_view key, std::string_view group,
                                     std::string_view consumer, std::chrono::milliseconds min_idle,
                                     const Ids& ids, const XClaimOptions& o, bool just_id) {
    detail::ArgList args({"XCLAIM", key, group, consumer, static_cast<long long>(min_idle.count())},
                         detail::size_hint(ids) + 8);
    args.add_all(ids);
    if (o.idle) {
      args.add("IDLE");
      args.add(static_cast<long long>(o.idle->count()));
    }
    if (o.time) {
      using std::chrono::duration_cast;
      args.add("TIME");
      args.add(static_cast<long long>(
          duration_cast<std::chrono::milliseconds>(o.time->time_since_epoch()).count()));
    }
    if (o.retry_count) {
      args.add("RETRYCOUNT");
      args.add(*o.retry_count);
    }
    if (o.force) args.add("FORCE");
    if (just_id) args.add("JUSTID");
    return args;
  }
};

}  // namespace redmux
