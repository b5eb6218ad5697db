// Pub/sub commands that are ordinary request/reply commands (PUBLISH, SPUBLISH, PUBSUB
// CHANNELS/NUMSUB/NUMPAT/SHARDCHANNELS/SHARDNUMSUB) as a mixin for any sink (see sink.hpp):
// on a multiplexer they go over the interactive connection. Subscribing is not a command
// here: it needs a connection in subscriber state, see redmux/subscriber.hpp. Channels and
// messages are binary-safe std::string_views, viewed only for the duration of the call.
// Thread-safety: that of the sink's send().
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/commands/sink.hpp"

namespace redmux {

template <class Derived>
class PubSubCommands {
 public:
  /// Posts `message` to `channel`; the number of clients that received it (on a cluster,
  /// those connected to the node that ran it). PUBLISH.
  Future<long long> publish(std::string_view channel, std::string_view message,
                            CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"PUBLISH", channel, message});
  }
  /// Posts `message` to the shard channel (routed by its slot in a cluster); the number of
  /// clients that received it. SPUBLISH (Redis 7+).
  Future<long long> spublish(std::string_view shard_channel, std::string_view message,
                             CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"SPUBLISH", shard_channel, message});
  }
  /// Channels with at least one subscriber, optionally matching a glob `pattern` (empty:
  /// all). Pattern subscriptions are not counted. PUBSUB CHANNELS [pattern].
  Future<std::vector<std::string>> pubsub_channels(std::string_view pattern = {},
                                                   CallOptions options = {}) {
    if (pattern.empty()) {
      return detail::send_command<std::vector<std::string>>(*this, options, {"PUBSUB", "CHANNELS"});
    }
    return detail::send_command<std::vector<std::string>>(*this, options,
                                                          {"PUBSUB", "CHANNELS", pattern});
  }
  /// Subscriber count (connections, not pattern subscribers) of each channel, in order.
  /// PUBSUB NUMSUB channel….
  template <detail::StringRange Channels>
  Future<std::vector<std::pair<std::string, long long>>> pubsub_numsub(const Channels& channels,
                                                                       CallOptions options = {}) {
    detail::ArgList args({"PUBSUB", "NUMSUB"}, detail::size_hint(channels));
    args.add_all(channels);
    return detail::send_built<std::vector<std::pair<std::string, long long>>>(*this, options, args);
  }
  Future<std::vector<std::pair<std::string, long long>>> pubsub_numsub(
      std::initializer_list<std::string_view> channels, CallOptions options = {}) {
    return pubsub_numsub<std::initializer_list<std::string_view>>(channels, options);
  }
  /// Number of pattern subscriptions on the server (all clients). PUBSUB NUMPAT.
  Future<long long> pubsub_numpat(CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"PUBSUB", "NUMPAT"});
  }
  /// Shard channels with at least one subscriber, optionally matching `pattern`. PUBSUB
  /// SHARDCHANNELS [pattern] (Redis 7+).
  Future<std::vector<std::string>> pubsub_shardchannels(std::string_view pattern = {},
                                                        CallOptions options = {}) {
    if (pattern.empty()) {
      return detail::send_command<std::vector<std::string>>(*this, options,
                                                            {"PUBSUB", "SHARDCHANNELS"});
    }
    return detail::send_command<std::vector<std::string>>(*this, options,
                                                          {"PUBSUB", "SHARDCHANNELS", pattern});
  }
  /// Subscriber count of each shard channel. PUBSUB SHARDNUMSUB shard-channel… (Redis 7+).
  template <detail::StringRange Channels>
  Future<std::vector<std::pair<std::string, long long>>> pubsub_shardnumsub(
      const Channels& shard_channels, CallOptions options = {}) {
    detail::ArgList args({"PUBSUB", "SHARDNUMSUB"}, detail::size_hint(shard_channels));
    args.add_all(shard_channels);
    return detail::send_built<std::vector<std::pair<std::string, long long>>>(*this, options, args);
  }
  Future<std::vector<std::pair<std::string, long long>>> pubsub_shardnumsub(
      std::initializer_list<std::string_view> shard_channels, CallOptions options = {}) {
    return pubsub_shardnumsub<std::initializer_list<std::string_view>>(shard_channels, options);
  }
};

}  // namespace redmux
