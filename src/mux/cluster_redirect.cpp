// RedirectState (mux/cluster_redirect.hpp): one cluster command's sends, and what each error
// reply leads to (the decisions: topology/redirect_policy.hpp).
#include "mux/cluster_redirect.hpp"

#include "core/script_commands.hpp"
#include "mux/cluster.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {

// Built for every cluster command on the caller's thread, from pool blocks the I/O thread
// freed last: each 64-byte line of it is a likely cache miss. Six lines (the pool's size
// class of 384 bytes); it was seven while it also kept the node's host and a std::string.
static_assert(sizeof(RedirectState) <= 384, "RedirectState grew past six cache lines");

RedirectState::RedirectState(std::shared_ptr<ClusterRouter> router, CommandState* target,
                             std::span<const Arg> args, PendingCommand prototype, int db,
                             std::uint16_t slot, bool holds_slot, bool tallied)
    : router_(std::move(router)),
      target_(target),
      bytes_size_(resp::encoded_size(args)),
      prototype_(prototype),
      policy_(RedirectPolicy::Command{prototype_.name, prototype_.deadline, prototype_.timeout_ms,
                                      router_->shared().config().retry_cluster_down,
                                      runs_script(prototype_.name)}),
      holds_slot_(holds_slot) {
  prototype_.kind = PendingKind::Caller;
  prototype_.counted = false;  // the slot of maxQueuedCommands is this state's (holds_slot_)
  prototype_.tallied = tallied;
  prototype_.slot = slot;
  prototype_.db = db;
  char* at = inline_bytes_.data();  // most commands: no allocation
  if (bytes_size_ > kInlineBytes) {
    heap_bytes_ = std::make_unique_for_overwrite<char[]>(bytes_size_);
    at = heap_bytes_.get();
  }
  at = resp::detail::write_array_header(at, args.size());
  for (const Arg& arg : args) at = resp::detail::write_arg(at, arg.bytes());
  target_->add_ref();
  command_name = prototype_.name;  // for the router's messages (park(), close())
}

RedirectState::~RedirectState() {
  target_->release();
}

void RedirectState::sent_by_caller(Connection* connection) noexcept {
  sent_to_ = connection;
}

void RedirectState::relocated(Connection* connection) noexcept {
  sent_to_ = connection;
  last_ask_ = false;  // an ASKING left behind is dropped: the new owner is asked plainly
}

PendingCommand RedirectState::entry(bool follow_map) noexcept {
  PendingCommand command = prototype_;
  command.state = this;
  command.follow_map = follow_map;
  return command;
}

void RedirectState::deliver(NodeSpan reply) noexcept {
  // Completed already (it timed out while this send was in flight): the late reply is only
  // skipped — above all, a MOVED or TRYAGAIN for it is never followed.
  if (claimed()) return;
  if (is_error_reply(reply)) {
    // The node that replied: a MOVED without a host names a port of its host. Read here, not
    // at each send: endpoint() copies the endpoint under its connection's lock.
    const std::string host = sent_to_ ? sent_to_->endpoint().host : std::string();
    RedirectPolicy::Step step = policy_.on_error(reply[0].value, host, Clock::now());
    if (step.refresh) router_->refresh();  // a failover: the map is about to change
    switch (step.kind) {
      case RedirectPolicy::Step::Kind::Follow: {
        router_->shared().counters().redirects.fetch_add(1, std::memory_order_relaxed);
        if (router_->shared().observer().logs(LogLevel::Debug)) {
          router_->shared().observer().log(
              LogLevel::Debug, step.redirect.endpoint.to_string(),
              std::string(prototype_.name) + " redirected: " + std::string(reply[0].value));
        }
        if (!step.redirect.ask) router_->moved(step.redirect);
        Connection* next = router_->connection_to(step.redirect.endpoint);
        const bool ask = step.redirect.ask;
        if (step.pause.count() == 0) {
          resend(next, ask);
          return;
        }
        router_->park(this, step.pause, [this, next, ask] { resend(next, ask); });
        return;
      }
      case RedirectPolicy::Step::Kind::Wait: {
        router_->shared().counters().cluster_retries.fetch_add(1, std::memory_order_relaxed);
        const bool same_node = step.same_node;
        router_->park(this, step.pause, [this, same_node] {
          Connection* to = sent_to_;
          if (!same_node && prototype_.slot != kNoSlot) {
            if (Result<Connection*> owner = router_->for_slot(prototype_.slot, false, false))
              to = *owner;
          }
          resend(to, same_node && last_ask_);
        });
        return;
      }
      case RedirectPolicy::Step::Kind::GiveUp:
        if (!claim()) return;
        if (holds_slot_) router_->shared().release_slots(1);
        target_->fail(Error(errc::server_error, std::move(step.message)));
        publish();
        return;
      case RedirectPolicy::Step::Kind::Reply:
        break;
    }
  }
  finish(reply);
}

void RedirectState::finish(NodeSpan reply) noexcept {
  if (!claim()) return;
  if (holds_slot_) router_->shared().release_slots(1);  // before the caller's future completes
  target_->deliver(reply);
  publish();
}

void RedirectState::fail(Error error) noexcept {
  if (!claim()) return;
  if (holds_slot_) router_->shared().release_slots(1);
  target_->fail(std::move(error));
  publish();
}

void RedirectState::resend(Connection* connection, bool ask) noexcept {
  if (claimed()) return;
  sent_to_ = connection;
  last_ask_ = ask;
  // After a hop the node was named by the server, not the map: its queue takes the command
  // even if the map still says otherwise (follow_map false).
  PendingCommand command = entry(/*follow_map=*/policy_.first_send());
  add_ref();  // the pipeline's reference
  if (!ask) {
    command.bytes_begin = 0;
    command.bytes_end = bytes_size_;
    connection->submit_batch(prototype_.db, bytes(), std::span<PendingCommand>(&command, 1));
    return;
  }
  std::string both_bytes;
  resp::encode_command(both_bytes, {Arg(kAsking)});
  PendingCommand asking = own_command(kAsking, PendingKind::FireAndForget);
  asking.slot = prototype_.slot;  // leaves a queue with its command (and is dropped then)
  asking.bytes_end = both_bytes.size();
  command.bytes_begin = both_bytes.size();
  both_bytes += bytes();
  command.bytes_end = both_bytes.size();
  PendingCommand both[] = {asking, command};
  connection->submit_batch(prototype_.db, both_bytes, both);
}

}  // namespace redmux::detail
