// ClientCache: the client-side cache of one connection (sans-IO). It holds the replies of
// cacheable reads that connection made, each under the read's database and arguments, and
// drops them on what the connection's reader sees: an invalidation push for a key, a nil
// invalidation (FLUSHALL, FLUSHDB), a break or a new session. Only that connection's reader
// sees, in order with its replies, the invalidations for what it read; so an entry belongs
// to one connection and dies with its session.
//
// The rules, each the reason for one piece of this class:
//   - the fill race: a read places a fill (a placeholder with a ticket) before it is queued;
//     an invalidation of its key removes the fill with any value; the reply is stored only
//     when the fill with its ticket is still there. A reply that raced an invalidation is
//     dropped (counted as refused).
//   - the server's TTL: the read is sent after a PTTL of its key in the same write; the
//     entry lives at most that long from when the read was queued, and never past maxTtl.
//   - memory: bytes() is the exact sum of every entry's charge (charge_of(): the heap blocks
//     the entry and its key hold, as glibc's malloc sizes them); a store that
//     would pass the bound evicts least recently used entries first; a reply larger than
//     the whole bound is not stored.
//   - a write through the same multiplexer calls invalidate() for its keys before and after
//     it is queued (mux/cache_route.cpp says why both).
//
// Threads: every function is safe from any thread (one mutex). Lookups and fills come from
// callers' threads, fills complete and invalidations arrive on the connection's I/O thread.
// Nothing here calls out while holding the mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/reply_node.hpp"

namespace redmux::detail {

/// A cached reply copied out for one caller: nodes whose values view `payload`.
struct CachedReply {
  std::vector<Node> nodes;
  std::string payload;
  NodeSpan span() const noexcept { return NodeSpan(nodes.data(), nodes.size()); }
};

/// The cache's counters, as status() and the cache hook see them.
struct CacheTally {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;         ///< lookups that found no live value
  std::uint64_t stored = 0;         ///< fills that stored their reply
  std::uint64_t refused = 0;        ///< fills whose reply was not stored: an invalidation raced it
  std::uint64_t invalidations = 0;  ///< keys invalidated (pushes, and writes of this multiplexer)
  std::uint64_t flushes = 0;        ///< the whole cache dropped while it held something (nil
                                    ///< invalidation, break, write without keys)
  std::uint64_t evictions = 0;      ///< entries dropped for room
  std::uint64_t expired = 0;        ///< entries found past their TTL
  std::size_t entries = 0;          ///< entries holding a value
  std::size_t bytes = 0;            ///< the exact sum of every entry's and fill's charge
};

class ClientCache {
 public:
  using Clock = std::chrono::steady_clock;

  /// `max_bytes`: the bound of bytes(); `max_ttl`: no entry lives longer.
  ClientCache(std::size_t max_bytes, std::chrono::milliseconds max_ttl);
  ~ClientCache();
  ClientCache(const ClientCache&) = delete;
  ClientCache& operator=(const ClientCache&) = delete;

  /// What the server may tell this connection: set once its session tracks (CLIENT TRACKING
  /// answered OK), cleared at a break. While inactive every lookup misses and no fill begins.
  void set_active(bool active);
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  /// Why the server would not track keys for the session (CLIENT TRACKING's refusal, or a
  /// server that speaks RESP2 only); empty once a session tracks. Kept across breaks.
  void set_refusal(std::string refusal);
  std::string refusal() const;

  /// Where a read stands in the cache.
  struct Lookup {
    enum class Outcome : std::uint8_t {
      Hit,   ///< `out` holds the value
      Fill,  ///< not cached: send it with `ticket` (a fill was placed)
      Plain  ///< not cached, and another read of it is filling (or inactive): send it as is
    };
    Outcome outcome = Outcome::Plain;
    std::uint64_t ticket = 0;
  };
  /// Looks the read up (`args` with its `key` among them, on database `db`); on a hit copies
  /// the value into `out`, otherwise places a fill when none is in progress for this read.
  Lookup lookup(int db, std::span<const Arg> args, std::string_view key, Clock::time_point now,
                CachedReply& out);

  /// The PTTL answered for the fill `ticket` of (db, args, key): -1 no TTL, -2 no key.
  void note_ttl(std::string_view key, std::string_view identity, std::uint64_t ticket,
                long long pttl_ms);
  /// The read's reply: stored when its fill is still there with `ticket` and its TTL known.
  /// `queued_at`: when the read was looked up (its TTL runs from then). True when stored.
  bool complete_fill(std::string_view key, std::string_view identity, std::uint64_t ticket,
                     NodeSpan reply, Clock::time_point queued_at);
  /// The fill failed (timed out, refused, the connection broke): its placeholder goes.
  void abandon_fill(std::string_view key, std::string_view identity, std::uint64_t ticket);

  /// Drops every entry and fill of `key` (any database: invalidations name no database).
  void invalidate(std::string_view key);
  /// Drops everything (nil invalidation, a break, a new session).
  void invalidate_all();
  /// Drops every entry and fill of each key for which `doomed` says true (Redis Cluster: the
  /// keys of slots this node no longer serves). Returns how many keys went (each counted as
  /// an invalidation). `doomed` runs under the cache's lock: it must not call into the cache.
  std::size_t invalidate_where(const std::function<bool(std::string_view key)>& doomed);

  CacheTally tally() const;
  std::size_t bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }

  /// The identity of a read under `db`: what lookup() and the fill functions compare.
  static void identity_of(int db, std::span<const Arg> args, std::string& out);
  /// What an entry of `key_size` key bytes, `identity_size` identity bytes and a reply of
  /// `nodes` nodes and `payload` payload bytes adds to bytes(): every heap block it and its
  /// key hold (the map node, the key's bytes, bucket and entry list, the entry, its identity,
  /// nodes and payload), each as glibc's malloc sizes it.
  static std::size_t charge_of(std::size_t key_size, std::size_t identity_size, std::size_t nodes,
                               std::size_t payload) noexcept;

 private:
  struct Entry;
  struct KeyEntries;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>()(text);
    }
  };
  using Map = std::unordered_map<std::string, KeyEntries, Hash, std::equal_to<>>;

  Entry* find_locked(std::string_view key, std::string_view identity, Map::iterator& at);
  void erase_locked(Map::iterator at, Entry* entry);
  void erase_key_locked(Map::iterator at);
  void clear_locked();
  void lru_unlink(Entry* entry) noexcept;
  void lru_push_front(Entry* entry) noexcept;
  bool make_room_locked(std::size_t charge, const Entry* keep);

  const std::size_t max_bytes_;
  const std::chrono::milliseconds max_ttl_;
  mutable std::mutex mutex_;
  Map keys_;
  Entry* lru_head_ = nullptr;  ///< most recently used entry holding a value
  Entry* lru_tail_ = nullptr;
  std::uint64_t next_ticket_ = 1;
  std::string refusal_;  ///< under mutex_
  std::atomic<bool> active_{false};
  std::atomic<std::size_t> bytes_{0};
  CacheTally tally_;  ///< under mutex_ (entries and bytes filled in by tally())
};

}  // namespace redmux::detail
