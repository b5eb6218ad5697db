// MuxCore::submit_cached(): a read the client-side cache may serve (cache_route.hpp) — a hit
// completes on the caller's thread, a miss goes out as a fill with the read.
#include "mux/cluster.hpp"
#include "mux/cluster_redirect.hpp"
#include "mux/core.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {
namespace {

/// The command hook's event of a read answered from `connection`'s cache.
void report_hit(Observer& observer, const Connection& connection, const CommandInfo& info, int db,
                int default_database, Clock::time_point created) noexcept {
  const Endpoint& endpoint = connection.endpoint();
  CommandEvent event;
  event.operation_name = info.name;
  event.db_namespace = db < 0 ? default_database : db;
  event.server_address = endpoint.is_unix() ? endpoint.unix_path : endpoint.host;
  event.server_port = endpoint.is_unix() ? 0 : endpoint.port;
  event.cached = true;
  event.phases.created = created;
  event.phases.delivered = observer.now();
  observer.command_done(event);
}

}  // namespace

Error MuxCore::submit_cached(int db, const CallOptions& options, std::span<const Arg> args,
                             const CommandInfo& info, std::size_t key_index, CommandState* state) {
  ClusterRouter* router = cluster();
  if (router && db != 0 && db != -1) return submit_routed(db, options, args, info, state);
  const std::size_t keys[] = {key_index};
  Result<Connection*> routed =
      router ? router->route_keys(info, 1, key_slots(args, keys), options.flags)
             : route_command(info, args, options.flags, nullptr);
  if (!routed || !*routed) return submit_routed(db, options, args, info, state);
  Connection& connection = **routed;
  const std::shared_ptr<ClientCache>& cache = connection.cache();
  if (!cache || connection.state() != ConnectionState::Ready) {
    return submit_routed(db, options, args, info, state);
  }
  thread_local CachedReply cached;
  const Clock::time_point now = Clock::now();
  const ClientCache::Lookup lookup = cache->lookup(db, args, args[key_index].bytes(), now, cached);
  if (lookup.outcome == ClientCache::Lookup::Outcome::Hit) {
    state->deliver(cached.span());  // outside the cache's lock: a continuation may read again
    Observer& observer = shared_->observer();
    if (observer.wants_events()) {
      report_hit(observer, connection, info, db, shared_->config().default_database, now);
    }
    return Error();
  }
  if (lookup.outcome == ClientCache::Lookup::Outcome::Plain) {
    return submit_routed(db, options, args, info, state);
  }
  const std::string key(args[key_index].bytes());
  auto abandon = [&](Error error) {
    std::string identity;
    ClientCache::identity_of(db, args, identity);
    cache->abandon_fill(key, identity, lookup.ticket);
    state->fail(error);
    return error;
  };
  auto [deadline, timeout_ms] = deadline_for(options);
  if (!take_slot(deadline)) return abandon(queue_full_error(info, deadline, timeout_ms));
  thread_local std::string bytes;
  thread_local std::vector<PendingCommand> commands;
  bytes.clear();
  commands.clear();
  if (router) {
    // The read's RedirectState follows a MOVED or ASK of it, and holds its queue slot.
    const PendingCommand prototype =
        timed_command(info.name, deadline, timeout_ms, options.timeout.count() > 0);
    auto* redirect =
        new RedirectState(router->shared_from_this(), state, args, prototype, db,
                          slot_of(args[key_index].bytes()), /*holds_slot=*/true, /*tallied=*/true);
    redirect->sent_by_caller(&connection);
    cache_route_.build_fill(cache, lookup.ticket, db, args, key_index, now,
                            redirect->entry(/*follow_map=*/false), /*cluster=*/true, bytes,
                            commands);
    shared_->counters().commands.fetch_add(1, std::memory_order_relaxed);
    connection.submit_batch(db, bytes, commands);
    return Error();
  }
  if (Error error = check_database(db, connection, info)) {
    shared_->release_slots(1);
    return abandon(std::move(error));
  }
  PendingCommand read = caller_command(info, options, state, deadline, timeout_ms);
  if (several_servers_) {  // where else it may run (held_commands.hpp)
    read.replica_use = replica_use_of(options.flags);
  }
  cache_route_.build_fill(cache, lookup.ticket, db, args, key_index, now, read, /*cluster=*/false,
                          bytes, commands);
  shared_->counters().commands.fetch_add(1, std::memory_order_relaxed);
  connection.submit_batch(db, bytes, commands);
  return Error();
}

}  // namespace redmux::detail
