#include "mux/cache_route.hpp"

#include <charconv>

#include "redmux/command_state.hpp"
#include "redmux/future_state.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

constexpr std::string_view kPttl = "PTTL";
constexpr std::string_view kClientCaching = "CLIENT CACHING";

/// What identifies one fill in its cache.
struct FillKey {
  std::shared_ptr<ClientCache> cache;
  std::string key;
  std::string identity;
  std::uint64_t ticket = 0;
};

/// The read's state while it fills: on the I/O thread, in order with the invalidation
/// pushes, it offers the reply to the cache (stored only if no invalidation took the fill
/// meanwhile), then completes the caller's state with it.
class CacheFill final : public CommandState {
 public:
  CacheFill(FillKey fill, CommandState* caller, Clock::time_point queued_at)
      : fill_(std::move(fill)), caller_(caller), queued_at_(queued_at) {
    command_name = caller->command_name;
  }
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    try {
      fill_.cache->complete_fill(fill_.key, fill_.identity, fill_.ticket, reply, queued_at_);
    } catch (...) {  // out of memory: the reply is not stored, the caller still gets it
      fill_.cache->abandon_fill(fill_.key, fill_.identity, fill_.ticket);
    }
    caller_->deliver(reply);
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    fill_.cache->abandon_fill(fill_.key, fill_.identity, fill_.ticket);
    caller_->fail(std::move(error));
    publish();
  }

 private:
  ~CacheFill() override { caller_->release(); }
  FillKey fill_;
  CommandState* caller_;  ///< one reference
  Clock::time_point queued_at_;
};

/// The replies before the read: CLIENT CACHING YES (OPTIN; its answer is only checked) and
/// the key's PTTL, which the fill keeps for the entry's TTL.
class CacheTtl final : public CommandState {
 public:
  CacheTtl(FillKey fill, bool caching_first, bool absent_unknown)
      : fill_(std::move(fill)), skip_(caching_first), absent_unknown_(absent_unknown) {}
  void deliver(NodeSpan reply) noexcept override {
    if (skip_) {
      skip_ = false;
      if (is_error_reply(reply)) fill_.cache->abandon_fill(fill_.key, fill_.identity, fill_.ticket);
      return;
    }
    long long pttl = 0;
    if (reply.empty() || reply[0].type != ReplyType::Integer) return;  // unknown: not stored
    const std::string_view text = reply[0].value;
    if (std::from_chars(text.data(), text.data() + text.size(), pttl).ec != std::errc()) return;
    if (absent_unknown_ && pttl == -2) return;  // a cluster node without the key: not stored
    fill_.cache->note_ttl(fill_.key, fill_.identity, fill_.ticket, pttl);
  }
  void fail(Error) noexcept override {}

 private:
  FillKey fill_;
  bool skip_;
  bool absent_unknown_;
};

/// Takes `keys` out of `cache`; `everything`: every key.
void clear_keys(ClientCache& cache, std::span<const std::string> keys, bool everything) {
  if (everything) {
    cache.invalidate_all();
  } else {
    for (const std::string& key : keys) cache.invalidate(key);
  }
}

/// A write's state that clears the write's keys from every cache at its reply, then
/// completes the caller's state (CacheRoute::clear_at_reply()).
class ClearAtReply final : public CommandState {
 public:
  using Caches = std::vector<std::shared_ptr<ClientCache>>;
  ClearAtReply(std::shared_ptr<const Caches> caches, std::shared_ptr<NodeCaches> nodes,
               std::vector<std::string> keys, CommandState* caller)
      : caches_(std::move(caches)),
        nodes_(std::move(nodes)),
        keys_(std::move(keys)),
        caller_(caller) {
    caller->add_ref();
    command_name = caller->command_name;
  }
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    clear();
    caller_->deliver(reply);
    publish();
  }
  void fail(Error error) noexcept override {  // it may have run all the same
    if (!claim()) return;
    clear();
    caller_->fail(std::move(error));
    publish();
  }

 private:
  ~ClearAtReply() override { caller_->release(); }
  void clear() noexcept {
    if (caches_) {
      for (const auto& cache : *caches_) clear_keys(*cache, keys_, keys_.empty());
    }
    if (nodes_) {
      for (const auto& cache : *nodes_->list()) clear_keys(*cache, keys_, keys_.empty());
    }
  }
  std::shared_ptr<const Caches> caches_;  ///< may be null
  std::shared_ptr<NodeCaches> nodes_;     ///< Redis Cluster's node caches, or null
  std::vector<std::string> keys_;         ///< empty: every key
  CommandState* caller_;                  ///< a reference of its own
};

}  // namespace

void CacheRoute::add_cache(std::shared_ptr<ClientCache> cache) {
  caches_.push_back(std::move(cache));
  shared_caches_ = std::make_shared<const std::vector<std::shared_ptr<ClientCache>>>(caches_);
}

CommandState* CacheRoute::clear_at_reply(const CommandInfo& info, std::span<const Arg> args,
                                         CommandState* caller, Ride ride) const {
  thread_local std::vector<std::size_t> indexes;
  const bool dedicated = ride == Ride::Dedicated;
  if (!enabled_ || !caller || (!dedicated && (!several_connections_ || !shared_caches_)) ||
      !written_keys(info, args, indexes) || (ride == Ride::Alone && indexes.size() == 1)) {
    return caller;
  }
  std::vector<std::string> keys;
  keys.reserve(indexes.size());
  for (std::size_t index : indexes) keys.emplace_back(args[index].bytes());
  return new ClearAtReply(shared_caches_, dedicated ? node_caches_ : nullptr, std::move(keys),
                          caller);
}

void NodeCaches::add(std::shared_ptr<ClientCache> cache) {
  std::lock_guard lock(adding_);  // one copy-on-write at a time
  auto next = std::make_shared<List>(*list_.load(std::memory_order_acquire));
  next->push_back(std::move(cache));
  list_.store(std::move(next), std::memory_order_release);
}

CacheRoute::CacheRoute(const Config& config)
    : enabled_(config.client_cache),
      opt_in_(config.client_cache_mode == ClientCacheMode::OptIn),
      flagged_(config.client_cache_reads == ClientCacheReads::Flagged),
      several_connections_(config.connections_per_endpoint > 1) {
  if (enabled_) node_caches_ = std::make_shared<NodeCaches>();
  if (config.client_cache_mode != ClientCacheMode::Broadcast) return;
  std::string_view text = config.client_cache_prefixes;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(' '), text.size());
    if (end > 0) prefixes_.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
}

std::optional<std::size_t> CacheRoute::cacheable_key(const CommandInfo& info,
                                                     std::span<const Arg> args, Flags flags) const {
  if (!info.is(CommandFlag::Cacheable) || has_flag(flags, Flags::NoCache) ||
      has_flag(flags, Flags::FireAndForget) || (flagged_ && !has_flag(flags, Flags::Cache))) {
    return std::nullopt;
  }
  thread_local std::vector<std::size_t> keys;
  keys.clear();
  key_indexes(info, args, keys);
  if (keys.size() != 1) return std::nullopt;  // a read of several keys is sent uncached
  if (!prefixes_.empty()) {
    // BCAST tells only of keys under its prefixes: any other key could go stale unseen.
    const std::string_view key = args[keys.front()].bytes();
    bool tracked = false;
    for (const std::string& prefix : prefixes_) tracked = tracked || key.starts_with(prefix);
    if (!tracked) return std::nullopt;
  }
  return keys.front();
}

bool CacheRoute::written_keys(const CommandInfo& info, std::span<const Arg> args,
                              std::vector<std::size_t>& keys) {
  keys.clear();
  const bool script = info.rule == KeyRule::NumKeys && !info.is(CommandFlag::Write) &&
                      !info.is(CommandFlag::ReadOnly);
  if (!info.is(CommandFlag::Write) && !script) return false;
  key_indexes(info, args, keys);
  return !(script && keys.empty());  // a script that declares no key: nothing to name
}

void CacheRoute::invalidate_written(const CommandInfo& info, std::span<const Arg> args) const {
  thread_local std::vector<std::size_t> keys;
  if (!enabled_ || !written_keys(info, args, keys)) return;
  auto clear = [&](const std::shared_ptr<ClientCache>& cache) {
    if (keys.empty()) {
      cache->invalidate_all();  // FLUSHALL, FLUSHDB, SWAPDB, FUNCTION …: no key says what
    } else {
      for (std::size_t index : keys) cache->invalidate(args[index].bytes());
    }
  };
  for (const auto& cache : caches_) clear(cache);
  for (const auto& cache : *node_caches_->list()) clear(cache);
}

void CacheRoute::invalidate_keys(std::span<const std::string> keys, bool everything) const {
  if (!enabled_ || (keys.empty() && !everything)) return;
  for (const auto& cache : caches_) clear_keys(*cache, keys, everything);
  for (const auto& cache : *node_caches_->list()) clear_keys(*cache, keys, everything);
}

void CacheRoute::build_fill(std::shared_ptr<ClientCache> cache, std::uint64_t ticket, int db,
                            std::span<const Arg> args, std::size_t key_index,
                            Clock::time_point queued_at, PendingCommand read, bool cluster,
                            std::string& bytes, std::vector<PendingCommand>& commands) const {
  FillKey fill{std::move(cache), std::string(args[key_index].bytes()), {}, ticket};
  ClientCache::identity_of(db, args, fill.identity);
  auto* ttl = new CacheTtl(fill, opt_in_, cluster);
  if (opt_in_) {
    // The next command's keys are tracked: PTTL's, which is the read's key.
    const std::size_t begin = bytes.size();
    resp::encode_command(bytes, {"CLIENT", "CACHING", "YES"});
    ttl->add_ref();  // two replies, one reference each
    PendingCommand caching = own_command(kClientCaching, PendingKind::Internal, ttl);
    caching.bytes_begin = begin;
    caching.bytes_end = bytes.size();
    commands.push_back(caching);
  }
  std::size_t begin = bytes.size();
  const Arg pttl[] = {Arg(kPttl), args[key_index]};
  resp::encode_command(bytes, pttl);
  PendingCommand ttl_command = own_command(kPttl, PendingKind::Internal, ttl);
  ttl_command.bytes_begin = begin;
  ttl_command.bytes_end = bytes.size();
  commands.push_back(ttl_command);
  begin = bytes.size();
  resp::encode_command(bytes, args);
  auto* wrapper = new CacheFill(std::move(fill), read.state, queued_at);
  read.state = wrapper;        // the caller's reference now belongs to the wrapper
  read.retry_written = false;  // a resent read would answer a fill of an older session
  read.follow_map = false;     // answered by this node (see build_fill()'s comment)
  read.bytes_begin = begin;
  read.bytes_end = bytes.size();
  commands.push_back(read);
}

std::optional<WrittenKeys::Added> WrittenKeys::note(const CacheRoute& route,
                                                    const CommandInfo& info,
                                                    std::span<const Arg> args) {
  thread_local std::vector<std::size_t> indexes;
  if (!route.enabled() || !CacheRoute::written_keys(info, args, indexes)) return std::nullopt;
  const std::size_t first = keys.size();
  for (std::size_t index : indexes) keys.emplace_back(args[index].bytes());
  everything = everything || indexes.empty();
  return Added{std::span<const std::string>(keys).subspan(first), indexes.empty()};
}

}  // namespace redmux::detail
