#include "cache/client_cache.hpp"

#include <algorithm>
#include <cstring>

namespace redmux::detail {
namespace {

constexpr long long kTtlUnknown = -3;  // no PTTL answer yet (PTTL answers -2, -1 or >= 0)

void append_u32(std::string& out, std::uint32_t value) {
  char bytes[4];
  std::memcpy(bytes, &value, sizeof bytes);
  out.append(bytes, sizeof bytes);
}

// The bytes a node's value needs in an entry's payload: a verbatim string keeps the 4
// bytes "fmt:" before its value (verbatim_format() reads them).
std::size_t stored_size(const Node& node) noexcept {
  return node.value.size() + (node.type == ReplyType::VerbatimString ? 4 : 0);
}

}  // namespace

struct ClientCache::Entry {
  std::string identity;
  std::uint64_t ticket = 0;  ///< the fill in progress; 0 once a value is stored
  long long pttl = kTtlUnknown;
  bool has_value = false;
  Clock::time_point expires{};
  std::vector<Node> nodes;  ///< values view `payload`
  std::string payload;
  std::size_t charge = 0;            ///< what it adds to bytes_
  const std::string* key = nullptr;  ///< the map's key (node-based map: stable)
  Entry* prev = nullptr;             ///< LRU neighbours, while has_value
  Entry* next = nullptr;
};

struct ClientCache::KeyEntries {
  std::vector<std::unique_ptr<Entry>> entries;  ///< one per database and read of the key
};

ClientCache::ClientCache(std::size_t max_bytes, std::chrono::milliseconds max_ttl)
    : max_bytes_(max_bytes), max_ttl_(max_ttl) {}

ClientCache::~ClientCache() = default;

namespace {

// What glibc's malloc holds for a request of `size` bytes: the request and an 8-byte header,
// rounded up to 16, and 32 at least.
constexpr std::size_t heap_block(std::size_t size) noexcept {
  return size == 0 ? 0 : std::max<std::size_t>(32, (size + 8 + 15) & ~std::size_t{15});
}

// A std::string's heap block for `size` bytes: none up to 15 (held inline); else the bytes
// and a NUL. One built at its size (`exact`) asks for that; one assigned or reserved from
// empty asks for at least 30, twice the inline capacity (libstdc++'s growth).
constexpr std::size_t string_block(std::size_t size, bool exact) noexcept {
  if (size <= 15) return 0;
  return heap_block((exact ? size : std::max<std::size_t>(size, 30)) + 1);
}

}  // namespace

std::size_t ClientCache::charge_of(std::size_t key_size, std::size_t identity_size,
                                   std::size_t nodes, std::size_t payload) noexcept {
  // Every block the entry holds, and its key's: the map node (a next pointer, the key and
  // its entries, the cached hash), the key's bytes (built at their size), its bucket, the
  // vector of its entries (one pointer; a key read several ways is charged it once per
  // entry), the entry, its identity and payload (assigned and reserved from empty) and its
  // nodes.
  constexpr std::size_t kMapNode = sizeof(void*) + sizeof(Map::value_type) + sizeof(std::size_t);
  return heap_block(kMapNode) + string_block(key_size, true) + sizeof(void*) +
         heap_block(sizeof(std::unique_ptr<Entry>)) + heap_block(sizeof(Entry)) +
         string_block(identity_size, false) + heap_block(nodes * sizeof(Node)) +
         string_block(payload, false);
}

void ClientCache::identity_of(int db, std::span<const Arg> args, std::string& out) {
  out.clear();
  append_u32(out, static_cast<std::uint32_t>(db));
  for (const Arg& arg : args) {
    const std::string_view bytes = arg.bytes();
    append_u32(out, static_cast<std::uint32_t>(bytes.size()));
    out.append(bytes);
  }
}

void ClientCache::set_active(bool active) {
  std::lock_guard lock(mutex_);
  if (!active) {
    if (!keys_.empty()) ++tally_.flushes;
    clear_locked();
  }
  active_.store(active, std::memory_order_release);
}

void ClientCache::set_refusal(std::string refusal) {
  std::lock_guard lock(mutex_);
  refusal_ = std::move(refusal);
}

std::string ClientCache::refusal() const {
  std::lock_guard lock(mutex_);
  return refusal_;
}

ClientCache::Entry* ClientCache::find_locked(std::string_view key, std::string_view identity,
                                             Map::iterator& at) {
  at = keys_.find(key);
  if (at == keys_.end()) return nullptr;
  for (const auto& entry : at->second.entries) {
    if (entry->identity == identity) return entry.get();
  }
  return nullptr;
}

void ClientCache::lru_unlink(Entry* entry) noexcept {
  (entry->prev ? entry->prev->next : lru_head_) = entry->next;
  (entry->next ? entry->next->prev : lru_tail_) = entry->prev;
  entry->prev = entry->next = nullptr;
}

void ClientCache::lru_push_front(Entry* entry) noexcept {
  entry->prev = nullptr;
  entry->next = lru_head_;
  (lru_head_ ? lru_head_->prev : lru_tail_) = entry;
  lru_head_ = entry;
}

void ClientCache::erase_locked(Map::iterator at, Entry* entry) {
  if (entry->has_value) {
    lru_unlink(entry);
    --tally_.entries;
  }
  bytes_.fetch_sub(entry->charge, std::memory_order_relaxed);
  auto& entries = at->second.entries;
  const auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const std::unique_ptr<Entry>& e) { return e.get() == entry; });
  entries.erase(it);
  if (entries.empty()) keys_.erase(at);
}

void ClientCache::erase_key_locked(Map::iterator at) {
  for (const auto& entry : at->second.entries) {
    if (entry->has_value) {
      lru_unlink(entry.get());
      --tally_.entries;
    }
    bytes_.fetch_sub(entry->charge, std::memory_order_relaxed);
  }
  keys_.erase(at);
}

void ClientCache::clear_locked() {
  keys_.clear();
  lru_head_ = lru_tail_ = nullptr;
  tally_.entries = 0;
  bytes_.store(0, std::memory_order_relaxed);
}

bool ClientCache::make_room_locked(std::size_t charge, const Entry* keep) {
  while (bytes_.load(std::memory_order_relaxed) + charge > max_bytes_) {
    Entry* victim = lru_tail_;
    if (victim == keep) victim = victim ? victim->prev : nullptr;
    if (!victim) return false;  // only fills left: they leave when their replies come
    auto at = keys_.find(*victim->key);
    erase_locked(at, victim);
    ++tally_.evictions;
  }
  return true;
}

ClientCache::Lookup ClientCache::lookup(int db, std::span<const Arg> args, std::string_view key,
                                        Clock::time_point now, CachedReply& out) {
  thread_local std::string identity;
  identity_of(db, args, identity);
  std::lock_guard lock(mutex_);
  if (!active_.load(std::memory_order_relaxed)) return {};
  Map::iterator at;
  if (Entry* entry = find_locked(key, identity, at)) {
    if (!entry->has_value) {  // a fill in progress: this read goes out as is
      ++tally_.misses;
      return {};
    }
    if (now < entry->expires) {
      ++tally_.hits;
      if (lru_head_ != entry) {
        lru_unlink(entry);
        lru_push_front(entry);
      }
      out.nodes.assign(entry->nodes.begin(), entry->nodes.end());
      out.payload.assign(entry->payload);
      const char* from = entry->payload.data();
      for (Node& node : out.nodes) {
        if (node.value.empty() && node.type != ReplyType::VerbatimString) continue;
        node.value =
            std::string_view(out.payload.data() + (node.value.data() - from), node.value.size());
      }
      return {Lookup::Outcome::Hit, 0};
    }
    ++tally_.expired;
    erase_locked(at, entry);
  }
  ++tally_.misses;
  const std::size_t charge = charge_of(key.size(), identity.size(), 0, 0);
  if (!make_room_locked(charge, nullptr)) return {};
  at = keys_.try_emplace(std::string(key)).first;
  auto entry = std::make_unique<Entry>();
  entry->identity = identity;
  entry->ticket = next_ticket_++;
  entry->charge = charge;
  entry->key = &at->first;
  const std::uint64_t ticket = entry->ticket;
  at->second.entries.push_back(std::move(entry));
  bytes_.fetch_add(charge, std::memory_order_relaxed);
  return {Lookup::Outcome::Fill, ticket};
}

void ClientCache::note_ttl(std::string_view key, std::string_view identity, std::uint64_t ticket,
                           long long pttl_ms) {
  std::lock_guard lock(mutex_);
  Map::iterator at;
  Entry* entry = find_locked(key, identity, at);
  if (entry && entry->ticket == ticket) entry->pttl = pttl_ms;
}

bool ClientCache::complete_fill(std::string_view key, std::string_view identity,
                                std::uint64_t ticket, NodeSpan reply, Clock::time_point queued_at) {
  std::lock_guard lock(mutex_);
  Map::iterator at;
  Entry* entry = find_locked(key, identity, at);
  if (!entry || entry->ticket != ticket || entry->has_value) {
    ++tally_.refused;  // an invalidation (or a break, or room) took the fill: the reply may be old
    return false;
  }
  // No PTTL answer (refused by an ACL …), a key about to expire, an error reply, or a reply
  // larger than the whole bound: not stored, and the fill goes.
  const bool error = !reply.empty() && (reply[0].type == ReplyType::SimpleError ||
                                        reply[0].type == ReplyType::BulkError);
  std::size_t payload = 0;
  for (const Node& node : reply) payload += stored_size(node);
  const std::size_t charge = charge_of(at->first.size(), identity.size(), reply.size(), payload);
  if (entry->pttl == kTtlUnknown || entry->pttl == 0 || error || charge > max_bytes_) {
    erase_locked(at, entry);
    return false;
  }
  bytes_.fetch_sub(entry->charge, std::memory_order_relaxed);
  entry->charge = 0;
  if (!make_room_locked(charge, entry)) {
    erase_locked(at, entry);
    return false;
  }
  // Reserved whole first: the appends never move the payload the values view.
  entry->payload.clear();
  entry->payload.reserve(payload);
  entry->nodes.assign(reply.begin(), reply.end());
  for (Node& node : entry->nodes) {
    if (node.value.empty() && node.type != ReplyType::VerbatimString) {
      node.value = std::string_view();
      continue;
    }
    const std::size_t prefix = node.type == ReplyType::VerbatimString ? 4 : 0;
    entry->payload.append(node.value.data() - prefix, node.value.size() + prefix);
    node.value = std::string_view(entry->payload.data() + entry->payload.size() - node.value.size(),
                                  node.value.size());
  }
  const std::chrono::milliseconds server_ttl(entry->pttl);
  const auto ttl = entry->pttl > 0 ? std::min(server_ttl, max_ttl_) : max_ttl_;
  entry->expires = queued_at + ttl;
  entry->ticket = 0;
  entry->has_value = true;
  entry->charge = charge;
  bytes_.fetch_add(charge, std::memory_order_relaxed);
  lru_push_front(entry);
  ++tally_.entries;
  ++tally_.stored;
  return true;
}

void ClientCache::abandon_fill(std::string_view key, std::string_view identity,
                               std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  Map::iterator at;
  Entry* entry = find_locked(key, identity, at);
  if (entry && entry->ticket == ticket && !entry->has_value) erase_locked(at, entry);
}

void ClientCache::invalidate(std::string_view key) {
  std::lock_guard lock(mutex_);
  ++tally_.invalidations;
  const auto at = keys_.find(key);
  if (at != keys_.end()) erase_key_locked(at);
}

void ClientCache::invalidate_all() {
  std::lock_guard lock(mutex_);
  if (!keys_.empty()) ++tally_.flushes;  // an empty cache (a first session) drops nothing
  clear_locked();
}

std::size_t ClientCache::invalidate_where(const std::function<bool(std::string_view key)>& doomed) {
  std::lock_guard lock(mutex_);
  std::size_t dropped = 0;
  for (auto at = keys_.begin(); at != keys_.end();) {
    const auto next = std::next(at);
    if (doomed(at->first)) {
      erase_key_locked(at);
      ++dropped;
    }
    at = next;
  }
  tally_.invalidations += dropped;
  return dropped;
}

CacheTally ClientCache::tally() const {
  std::lock_guard lock(mutex_);
  CacheTally out = tally_;
  out.bytes = bytes_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace redmux::detail
