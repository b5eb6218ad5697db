// What a frame is, decided once: the kind of an out-of-band frame (a pub/sub message, the
// confirmation of one name of a SUBSCRIBE-family command, or something else), and the error
// replies the connection acts on by itself. The reader, the pipeline, the pub/sub hub and
// the Sentinel monitor all ask here instead of comparing the texts themselves.
//
// Sans-IO, no state: safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "redmux/reply.hpp"

namespace redmux::resp {

enum class PushKind : std::uint8_t {
  Other,               ///< not led by a pub/sub kind (a client-side caching invalidation …)
  Message,             ///< [message, channel, payload]
  PatternMessage,      ///< [pmessage, pattern, channel, payload]
  ShardMessage,        ///< [smessage, shard channel, payload]
  Subscribe,           ///< [subscribe, channel, count]: one name of a SUBSCRIBE confirmed
  PatternSubscribe,    ///< [psubscribe, pattern, count]
  ShardSubscribe,      ///< [ssubscribe, shard channel, count]
  Unsubscribe,         ///< [unsubscribe, channel, count]
  PatternUnsubscribe,  ///< [punsubscribe, pattern, count]
  ShardUnsubscribe,    ///< [sunsubscribe, shard channel, count]
};

/// The kind of `frame`: an aggregate (a RESP3 push, or the array a RESP2 connection in
/// subscriber mode gets) whose first element is a bulk string naming one. Other for
/// anything else, scalars and empty frames included.
PushKind push_kind(NodeSpan frame) noexcept;

/// True for the (un)subscribe confirmations: they answer a SUBSCRIBE-family command.
constexpr bool is_confirmation(PushKind kind) noexcept {
  return kind >= PushKind::Subscribe;
}

/// True for a RESP3 tracking invalidation (client-side caching): >2 "invalidate" [key …],
/// or >2 "invalidate" _ when every key is to go.
bool is_invalidation(NodeSpan push) noexcept;

/// True when `frame` is a RESP2 pub/sub frame: an array of at least 3 elements led by a
/// pub/sub kind. On a subscribed RESP2 connection such a frame is a push, not a reply.
bool is_resp2_pubsub(NodeSpan frame) noexcept;

/// True for an error reply that says the server's role may have changed under the
/// connection: READONLY (a write reached a replica), Valkey's REDIRECT host:port (the same,
/// to a client that announced CLIENT CAPA redirect) or MASTERDOWN (a replica lost its
/// primary).
bool says_role_changed(NodeSpan reply) noexcept;

/// The text of an error reply says a replica lost its primary and, under
/// replica-serve-stale-data no, refused the command without running it.
inline bool says_master_down(std::string_view error_text) noexcept {
  return error_text.starts_with("MASTERDOWN");
}

/// The text of an error reply says the cluster cannot serve the command now and it did not
/// run: CLUSTERDOWN (no quorum, or a slot without a primary: a failover in progress) or
/// TRYAGAIN (a multi-key command whose keys are being migrated).
inline bool says_cluster_down(std::string_view error_text) noexcept {
  return error_text.starts_with("CLUSTERDOWN");
}
inline bool says_try_again(std::string_view error_text) noexcept {
  return error_text.starts_with("TRYAGAIN");
}

}  // namespace redmux::resp
