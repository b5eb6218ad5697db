// The sending half of Redis Cluster support: RedirectState (mux/cluster_redirect.hpp), commands
// split per slot or sent to every primary and reassembled, SCAN over every primary.
#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <string_view>

#include "commands/command_rules.hpp"
#include "mux/cluster.hpp"
#include "mux/cluster_redirect.hpp"
#include "resp/classify.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

/// Redirections (MOVED, ASK) followed per command before its last error is given to the
/// caller.
constexpr int kMaxHops = 5;
/// Before a second redirection is followed: the nodes disagree for a moment (a slot changing
/// owner is announced node by node), so a little longer each time.
constexpr auto kHopPause = 25ms;
/// CLUSTERDOWN / TRYAGAIN: the first pause before the command is sent again, doubled each
/// time up to kRetryPauseMax (a failover ends within seconds, a migration batch sooner).
constexpr auto kRetryPause = 25ms;
constexpr auto kRetryPauseMax = 200ms;

long long ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// RedirectState

RedirectState::RedirectState(std::shared_ptr<ClusterRouter> router, CommandState* target,
                             std::string bytes, PendingCommand prototype, int db,
                             std::uint16_t slot, bool holds_slot, bool tallied)
    : router_(std::move(router)),
      target_(target),
      bytes_(std::move(bytes)),
      prototype_(prototype),
      db_(db),
      slot_(slot),
      holds_slot_(holds_slot),
      tallied_(tallied) {
  target_->add_ref();
  command_name = prototype_.name;  // for the router's messages (park(), close())
}

RedirectState::~RedirectState() {
  target_->release();
}

void RedirectState::sent_by_caller(Connection* connection) noexcept {
  sent_to_ = connection;
  host_ = connection->endpoint().host;
}

void RedirectState::relocated(Connection* connection) noexcept {
  sent_to_ = connection;
  host_ = connection->endpoint().host;
  last_ask_ = false;  // an ASKING left behind is dropped: the new owner is asked plainly
}

PendingCommand RedirectState::entry(bool follow_map) noexcept {
  PendingCommand command = prototype_;
  command.kind = PendingKind::Caller;
  command.state = this;
  command.counted = false;  // the slot of maxQueuedCommands is this state's (holds_slot_)
  command.tallied = tallied_;
  command.slot = slot_;
  command.follow_map = follow_map;
  return command;
}

void RedirectState::deliver(NodeSpan reply) noexcept {
  // Completed already (it timed out while this send was in flight): the late reply is only
  // skipped — above all, a MOVED or TRYAGAIN for it is never followed.
  if (claimed()) return;
  if (is_error_reply(reply)) {
    const std::string_view text = reply[0].value;
    std::optional<ClusterRedirect> redirect;
    if (hops_ < kMaxHops) redirect = parse_redirect(text, host_);
    if (redirect) {
      ++hops_;
      router_->shared().counters().redirects.fetch_add(1, std::memory_order_relaxed);
      if (router_->shared().observer().logs(LogLevel::Debug)) {
        router_->shared().observer().log(
            LogLevel::Debug, redirect->endpoint.to_string(),
            std::string(prototype_.name) + " redirected: " + std::string(text));
      }
      if (!redirect->ask) router_->moved(*redirect);
      Connection* next = router_->connection_to(redirect->endpoint);
      const bool ask = redirect->ask;
      if (hops_ == 1) {
        resend(next, ask);
        return;
      }
      router_->park(this, kHopPause * (hops_ - 1), [this, next, ask] { resend(next, ask); });
      return;
    }
    const bool cluster_down = resp::says_cluster_down(text);
    if (cluster_down || resp::says_try_again(text)) {
      if (cluster_down) router_->refresh();  // a failover: the map is about to change
      if (router_->shared().config().retry_cluster_down && wait_and_resend(text)) return;
      if (retries_ > 0) {
        if (!claim()) return;
        if (holds_slot_) router_->shared().release_slots(1);
        target_->fail(Error(errc::server_error,
                            std::string(text) + " (reply to " + std::string(prototype_.name) +
                                "; sent " + std::to_string(retries_ + 1) + " times over " +
                                std::to_string(ms_between(first_refusal_, Clock::now())) +
                                " ms, retryClusterDown=true, until its " +
                                std::to_string(prototype_.timeout_ms) +
                                " ms timeout left no time for another try; it did not run)"));
        publish();
        return;
      }
    }
  }
  finish(reply);
}

bool RedirectState::wait_and_resend(std::string_view text) {
  // Both replies say the command did not run, so sending it again cannot apply it twice.
  const Clock::time_point now = Clock::now();
  if (retries_ == 0) first_refusal_ = now;
  const auto pause = std::min<std::chrono::milliseconds>(
      kRetryPauseMax, kRetryPause * (1 << std::min(retries_, 3)));
  if (now + pause >= prototype_.deadline) return false;
  ++retries_;
  router_->shared().counters().cluster_retries.fetch_add(1, std::memory_order_relaxed);
  // TRYAGAIN: the same node (a migration in progress there). CLUSTERDOWN: the slot's owner
  // by then (a failover may have given it a new one).
  const bool same_node = resp::says_try_again(text);
  router_->park(this, pause, [this, same_node] {
    Connection* to = sent_to_;
    if (!same_node && slot_ != kNoSlot) {
      if (Result<Connection*> owner = router_->for_slot(slot_, false, false)) to = *owner;
    }
    resend(to, same_node && last_ask_);
  });
  return true;
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
  host_ = connection->endpoint().host;
  last_ask_ = ask;
  // After a hop the node was named by the server, not the map: its queue takes the command
  // even if the map still says otherwise (follow_map false).
  PendingCommand command = entry(/*follow_map=*/hops_ == 0 && retries_ == 0);
  add_ref();  // the pipeline's reference
  if (!ask) {
    command.bytes_begin = 0;
    command.bytes_end = bytes_.size();
    connection->submit_batch(db_, bytes_, std::span<PendingCommand>(&command, 1));
    return;
  }
  std::string bytes;
  resp::encode_command(bytes, {Arg(kAsking)});
  PendingCommand asking = own_command(kAsking, PendingKind::FireAndForget);
  asking.slot = slot_;  // leaves a queue with its command (and is dropped then)
  asking.bytes_end = bytes.size();
  command.bytes_begin = bytes.size();
  bytes += bytes_;
  command.bytes_end = bytes.size();
  PendingCommand both[] = {asking, command};
  connection->submit_batch(db_, bytes, both);
}

// ---------------------------------------------------------------------------------------
// Split commands, SCAN

namespace {

/// Reassembles a command split per slot (or sent to every primary).
struct Gather {
  using Mode = ClusterRule::Reduce;
  std::mutex mutex;
  Mode mode = Mode::AllOk;
  CommandState* target = nullptr;  ///< one reference; null for fire-and-forget
  /// Gives back the command's slot of maxQueuedCommands once every part is done (the parts
  /// hold none of their own).
  std::shared_ptr<SharedContext> shared;
  std::string_view name;
  std::size_t parts = 0;
  std::size_t remaining = 0;
  std::size_t succeeded = 0;  ///< parts that ran and replied without an error
  std::optional<Error> error;
  long long sum = 0;
  std::vector<std::optional<std::string>> values;  ///< Mget: by the key's position
  std::vector<Node> first;                         ///< FirstReply: a copy of part 0's reply
  std::deque<std::string> first_texts;

  ~Gather() {
    if (target) target->release();
  }

  void part_reply(const std::vector<std::size_t>& positions, bool keep, NodeSpan reply) {
    std::unique_lock lock(mutex);
    if (is_error_reply(reply)) {
      if (!error) error = server_error_from(reply, name);
      finish_one(lock);
      return;
    }
    ++succeeded;
    if (mode == Mode::Values) {
      std::size_t k = 0;
      for (std::size_t i = 1; i < reply.size() && k < positions.size(); ++i, ++k) {
        if (reply[i].type == ReplyType::Null) continue;
        values[positions[k]] = std::string(reply[i].value);
      }
    } else if (mode == Mode::Sum && !reply.empty()) {
      long long part = 0;
      std::from_chars(reply[0].value.data(), reply[0].value.data() + reply[0].value.size(), part);
      sum += part;
    } else if (mode == Mode::FirstReply && keep) {
      first.assign(reply.begin(), reply.end());
      for (Node& node : first) {
        if (node.value.empty()) continue;
        first_texts.emplace_back(node.value);
        node.value = first_texts.back();
      }
    }
    finish_one(lock);
  }
  void part_error(const Error& failure) {
    std::unique_lock lock(mutex);
    if (!error) error = failure;
    finish_one(lock);
  }

 private:
  /// The error for the whole command when a part failed. Other parts may have run: then it
  /// must not say "not sent" (nor be safe to retry blindly), and it says what ran.
  Error partial(const Error& failed) const {
    if (succeeded == 0) return failed;
    const bool nothing_ran = failed.code() == errc::not_sent ||
                             failed.code() == errc::disconnected ||
                             failed.code() == errc::queue_full;
    return Error(
        nothing_ran ? errc::outcome_unknown : failed.code(),
        std::string(name) + " ran only in part: " + std::to_string(succeeded) + " of " +
            std::to_string(parts) +
            " parts (one per cluster slot or node) succeeded, another failed: " + failed.message());
  }

  void finish_one(std::unique_lock<std::mutex>& lock) {
    if (--remaining != 0) return;
    lock.unlock();
    shared->release_slots(1);  // before the caller's future completes
    if (!target) return;
    if (error) {
      target->fail(partial(*error));
      return;
    }
    switch (mode) {
      case Mode::Values: {
        std::vector<Node> nodes;
        nodes.reserve(values.size() + 1);
        nodes.push_back(Node{ReplyType::Array, 0, values.size(), {}});
        for (const auto& value : values) {
          if (value) {
            nodes.push_back(Node{ReplyType::BulkString, 1, value->size(), *value});
          } else {
            nodes.push_back(Node{ReplyType::Null, 1, 0, {}});
          }
        }
        target->deliver(nodes);
        break;
      }
      case Mode::Sum: {
        const std::string text = std::to_string(sum);
        const Node node{ReplyType::Integer, 0, text.size(), text};
        target->deliver(NodeSpan(&node, 1));
        break;
      }
      case Mode::AllOk: {
        static constexpr std::string_view kOk = "OK";
        const Node node{ReplyType::SimpleString, 0, kOk.size(), kOk};
        target->deliver(NodeSpan(&node, 1));
        break;
      }
      case Mode::FirstReply:
        target->deliver(first);
        break;
    }
  }
};

/// One part of a Gather: the replies of its keys' positions.
class PartState final : public CommandState {
 public:
  PartState(std::shared_ptr<Gather> gather, std::vector<std::size_t> positions, bool keep)
      : gather_(std::move(gather)), positions_(std::move(positions)), keep_(keep) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    gather_->part_reply(positions_, keep_, reply);
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    gather_->part_error(error);
    publish();
  }

 private:
  std::shared_ptr<Gather> gather_;
  std::vector<std::size_t> positions_;
  bool keep_;
};

/// SCAN over a whole cluster: the caller's cursor carries the primary (its index among the
/// primaries ordered by address) in its top 16 bits and that node's own cursor below; each
/// reply's cursor is rewritten so that when one primary is done the walk moves to the next,
/// and 0 comes back only after the last one.
constexpr int kScanNodeShift = 48;
constexpr std::uint64_t kScanCursorMask = (std::uint64_t{1} << kScanNodeShift) - 1;

class ScanState final : public CommandState {
 public:
  ScanState(CommandState* target, std::uint64_t node, std::uint64_t nodes)
      : target_(target), node_(node), nodes_(nodes) {
    target_->add_ref();
  }
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (is_error_reply(reply) || reply.size() < 2) {
      target_->deliver(reply);
    } else {
      std::uint64_t cursor = 0;
      std::from_chars(reply[1].value.data(), reply[1].value.data() + reply[1].value.size(), cursor);
      std::uint64_t next = 0;
      if (cursor != 0) {
        next = (node_ << kScanNodeShift) | (cursor & kScanCursorMask);
      } else if (node_ + 1 < nodes_) {
        next = (node_ + 1) << kScanNodeShift;
      }
      const std::string text = std::to_string(next);
      std::vector<Node> nodes(reply.begin(), reply.end());
      nodes[1].value = text;
      nodes[1].size = text.size();
      target_->deliver(nodes);
    }
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    target_->fail(std::move(error));
    publish();
  }

 protected:
  ~ScanState() override { target_->release(); }

 private:
  CommandState* target_;
  std::uint64_t node_;
  std::uint64_t nodes_;
};

/// Who gives the command's slot of maxQueuedCommands back: the state sending it (a whole
/// command), or the Gather of a split one.
enum class Holding { Itself, Gather };

/// Sends `args` to `connection` through a RedirectState for `target` (or fire-and-forget).
/// `tallied`: the entry stands for the command in status() (the first part of a split one).
void send_one(ClusterRouter& router, Connection* connection, int db, const CommandInfo& info,
              std::span<const Arg> args, std::uint16_t slot, CommandState* target,
              Clock::time_point deadline, std::uint32_t timeout_ms, Holding holding, bool tallied) {
  PendingCommand command;
  command.name = info.name;
  command.deadline = deadline;
  command.timeout_ms = timeout_ms;
  command.slot = slot;
  command.follow_map = true;
  if (!target) {  // a whole fire-and-forget command: its entry holds the slot
    command.kind = PendingKind::FireAndForget;
    command.deadline = Clock::time_point::max();
    connection->submit(db, args, command);
    return;
  }
  std::string bytes;
  resp::encode_command(bytes, args);
  auto* redirect = new RedirectState(router.shared_from_this(), target, std::move(bytes), command,
                                     db, slot, holding == Holding::Itself, tallied);
  redirect->resend(connection, false);
  redirect->release();  // the pipeline holds it now
}

}  // namespace

void prepare_cluster_entry(ClusterRouter& router, CommandState* target, std::span<const Arg> args,
                           PendingCommand& command, int db, Connection* connection) {
  std::vector<std::size_t> keys;
  key_indexes(command_info(args), args, keys);
  command.slot = keys.empty() ? kNoSlot : slot_of(args[keys.front()].bytes());
  command.follow_map = true;
  if (!target) return;  // fire-and-forget: the entry holds its slot, as anywhere
  std::string bytes;
  resp::encode_command(bytes, args);
  auto* redirect = new RedirectState(router.shared_from_this(), target, std::move(bytes), command,
                                     db, command.slot, command.counted, command.counted);
  redirect->sent_by_caller(connection);
  const std::size_t begin = command.bytes_begin, end = command.bytes_end;
  command = redirect->entry(/*follow_map=*/true);  // its one reference goes to the entry
  command.bytes_begin = begin;
  command.bytes_end = end;
}

Error submit_to_cluster(ClusterRouter& router, int db, const CommandInfo& info,
                        std::span<const Arg> args, CommandState* state, Flags flags,
                        Clock::time_point deadline, std::uint32_t timeout_ms) {
  auto refuse = [&](Error error) {
    router.shared().release_slots(1);
    if (state) state->fail(error);
    return error;
  };
  router.shared().counters().commands.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::size_t> keys;
  key_indexes(info, args, keys);

  const ClusterRule rule = cluster_rule(info);
  // Keyless commands that mean "the whole cluster": every primary, replies combined.
  if (keys.empty() && rule.plan == ClusterRule::Plan::EveryPrimary) {
    std::vector<Connection*> nodes = router.primaries();
    if (nodes.empty()) {
      return refuse(Error(errc::not_sent, std::string(info.name) +
                                              " not sent: the cluster's slot map is not loaded"));
    }
    auto gather = std::make_shared<Gather>();
    gather->mode = rule.reduce;
    gather->shared = router.shared_context();
    gather->name = info.name;
    gather->parts = gather->remaining = nodes.size();
    if (state) {
      state->add_ref();
      gather->target = state;
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto* part = new PartState(gather, {}, i == 0);
      send_one(router, nodes[i], db, info, args, kNoSlot, part, deadline, timeout_ms,
               Holding::Gather, i == 0);
      part->release();
    }
    return Error();
  }

  if (rule.plan == ClusterRule::Plan::ScanEveryPrimary && args.size() >= 2 && state) {
    std::vector<Connection*> nodes = router.primaries();
    std::sort(nodes.begin(), nodes.end(), [](Connection* a, Connection* b) {
      return a->describe_endpoint() < b->describe_endpoint();
    });
    std::uint64_t cursor = 0;
    const std::string_view text = args[1].bytes();
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), cursor);
    const std::uint64_t node = cursor >> kScanNodeShift;
    if (parsed.ec != std::errc() || nodes.empty() || node >= nodes.size()) {
      return refuse(Error(errc::invalid_argument, "SCAN refused: cursor " + std::string(text) +
                                                      " is not one redmux gave for this cluster (" +
                                                      std::to_string(nodes.size()) +
                                                      " primaries)"));
    }
    std::vector<Arg> node_args(args.begin(), args.end());
    const std::string node_cursor = std::to_string(cursor & kScanCursorMask);
    node_args[1] = Arg(node_cursor);
    auto* scan = new ScanState(state, node, nodes.size());
    // No slot: the cursor belongs to that node, so the command never moves to another.
    send_one(router, nodes[node], db, info, node_args, kNoSlot, scan, deadline, timeout_ms,
             Holding::Itself, true);
    scan->release();
    return Error();
  }

  // One slot (or none): one node.
  bool one_slot = true;
  if (!keys.empty()) {
    const std::uint16_t slot = slot_of(args[keys.front()].bytes());
    for (std::size_t i = 1; i < keys.size() && one_slot; ++i) {
      one_slot = slot_of(args[keys[i]].bytes()) == slot;
    }
  }
  if (one_slot || rule.plan != ClusterRule::Plan::Split) {
    Result<Connection*> connection = router.route_keys(info, args, keys, flags);
    if (!connection) return refuse(std::move(connection).error());
    const std::uint16_t slot = keys.empty() ? kNoSlot : slot_of(args[keys.front()].bytes());
    send_one(router, *connection, db, info, args, slot, state, deadline, timeout_ms,
             Holding::Itself, true);
    return Error();
  }

  // Split per slot, in the order each slot first appears; reassembled in the caller's order.
  const std::size_t step = rule.key_step;
  struct Part {
    std::uint16_t slot;
    std::vector<Arg> args;
    std::vector<std::size_t> positions;
  };
  std::vector<Part> parts;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::size_t at = keys[k];
    if (at + step > args.size()) break;
    const std::uint16_t slot = slot_of(args[at].bytes());
    auto part =
        std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.slot == slot; });
    if (part == parts.end()) {
      parts.push_back(Part{slot, {args[0]}, {}});
      part = parts.end() - 1;
    }
    for (std::size_t i = 0; i < step; ++i) part->args.push_back(args[at + i]);
    part->positions.push_back(k);
  }
  const bool read_only = info.is(CommandFlag::ReadOnly);
  const bool replica =
      read_only && (has_flag(flags, Flags::PreferReplica) || has_flag(flags, Flags::DemandReplica));
  std::vector<Connection*> targets;
  for (const Part& part : parts) {
    Result<Connection*> connection =
        router.for_slot(part.slot, replica, has_flag(flags, Flags::DemandReplica));
    if (!connection) return refuse(std::move(connection).error());
    targets.push_back(*connection);
  }
  auto gather = std::make_shared<Gather>();
  gather->mode = rule.reduce;
  gather->shared = router.shared_context();
  gather->name = info.name;
  gather->parts = gather->remaining = parts.size();
  gather->values.resize(keys.size());
  if (state) {
    state->add_ref();
    gather->target = state;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto* part = new PartState(gather, parts[i].positions, false);
    send_one(router, targets[i], db, info, parts[i].args, parts[i].slot, part, deadline, timeout_ms,
             Holding::Gather, i == 0);
    part->release();
  }
  return Error();
}

}  // namespace redmux::detail
