// The sending half of Redis Cluster support: commands split per slot or sent to every primary
// and reassembled, SCAN over every primary (the plans: topology/cluster_plan.hpp); each send
// goes through a RedirectState (mux/cluster_redirect.cpp).
#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <string_view>

#include "commands/command_rules.hpp"
#include "mux/cluster.hpp"
#include "mux/cluster_redirect.hpp"
#include "mux/core.hpp"
#include "resp/classify.hpp"
#include "resp/encoder.hpp"
#include "topology/cluster_plan.hpp"

namespace redmux::detail {

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
  std::deque<std::string> elements;                ///< Concat: every part's, in turn
  std::vector<Node> first;                         ///< FirstReply: a copy of part 0's reply
  std::vector<bool> all_of;                        ///< AllOf: every part's 1 so far
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
    } else if (mode == Mode::Concat) {
      for (std::size_t i = 1; i < reply.size(); ++i) elements.emplace_back(reply[i].value);
    } else if (mode == Mode::Sum && !reply.empty()) {
      long long part = 0;
      std::from_chars(reply[0].value.data(), reply[0].value.data() + reply[0].value.size(), part);
      sum += part;
    } else if (mode == Mode::AllOf) {
      if (all_of.empty()) all_of.assign(reply.empty() ? 0 : reply.size() - 1, true);
      for (std::size_t i = 1; i < reply.size() && i - 1 < all_of.size(); ++i) {
        if (reply[i].value != "1") all_of[i - 1] = false;
      }
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
    // A part that did not run, or whose outcome is not known (a timeout, sent or not):
    // the command as a whole ran in part.
    const bool whole_unknown = failed.code() == errc::not_sent ||
                               failed.code() == errc::disconnected ||
                               failed.code() == errc::queue_full || failed.code() == errc::timeout;
    return Error(
        whole_unknown ? errc::outcome_unknown : failed.code(),
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
      case Mode::Concat: {
        std::vector<Node> nodes;
        nodes.reserve(elements.size() + 1);
        nodes.push_back(Node{ReplyType::Array, 0, elements.size(), {}});
        for (const std::string& element : elements) {
          nodes.push_back(Node{ReplyType::BulkString, 1, element.size(), element});
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
      case Mode::AllOf: {
        static constexpr std::string_view kOne = "1", kZero = "0";
        std::vector<Node> nodes;
        nodes.reserve(all_of.size() + 1);
        nodes.push_back(Node{ReplyType::Array, 0, all_of.size(), {}});
        for (const bool every : all_of) {
          const std::string_view text = every ? kOne : kZero;
          nodes.push_back(Node{ReplyType::Integer, 1, text.size(), text});
        }
        target->deliver(nodes);
        break;
      }
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

/// SCAN over a whole cluster (topology/cluster_plan.hpp, ScanCursor): each reply's cursor is
/// rewritten so that when one primary is done the walk moves to the next, and 0 comes back
/// only after the last one.

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
      const std::string text = std::to_string(next_scan_cursor(node_, nodes_, cursor));
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

/// A command's deadline, its timeout, and whether that is the call's own (not asyncTimeout).
struct Deadline {
  Clock::time_point at;
  std::uint32_t timeout_ms = 0;
  bool from_call = false;
};

/// Sends `args` to `connection` through a RedirectState for `target` (or fire-and-forget).
/// `tallied`: the entry stands for the command in status() (the first part of a split one).
/// Returns why a fire-and-forget command was refused (a caller's future holds it).
Error send_one(ClusterRouter& router, Connection* connection, int db, const CommandInfo& info,
               std::span<const Arg> args, std::uint16_t slot, CommandState* target,
               const Deadline& deadline, Holding holding, bool tallied) {
  PendingCommand command =
      timed_command(info.name, deadline.at, deadline.timeout_ms, deadline.from_call);
  command.slot = slot;
  command.follow_map = true;
  if (!target) {  // a whole fire-and-forget command: its entry holds the slot
    command.kind = PendingKind::FireAndForget;
    command.deadline = Clock::time_point::max();
    if (!connection->submit(db, args, command)) return connection->refusal_of(info.name);
    return Error();
  }
  auto* redirect = new RedirectState(router.shared_from_this(), target, args, command, db, slot,
                                     holding == Holding::Itself, tallied);
  redirect->resend(connection, false);
  redirect->release();  // the pipeline holds it now
  return Error();
}

/// A command split per slot: its parts and the node of each.
struct SplitPlan {
  std::vector<SplitPart> parts;
  std::vector<Connection*> nodes;
  ClusterRule::Reduce reduce = ClusterRule::Reduce::AllOk;
  std::size_t keys = 0;

  std::vector<Arg> args_of(std::size_t i, std::span<const Arg> args) const {
    std::vector<Arg> part_args;
    part_args.reserve(parts[i].args.size());
    for (std::size_t at : parts[i].args) part_args.push_back(args[at]);
    return part_args;
  }
  /// What reassembles the parts' replies for `target` (null: fire-and-forget).
  std::shared_ptr<Gather> gather(ClusterRouter& router, const CommandInfo& info,
                                 CommandState* target) const {
    auto made = std::make_shared<Gather>();
    made->mode = reduce;
    made->shared = router.shared_context();
    made->name = info.name;
    made->parts = made->remaining = parts.size();
    made->values.resize(keys);
    if (target) {
      target->add_ref();
      made->target = target;
    }
    return made;
  }
};

/// Plans the split of `args` (keys at `keys`) per slot, in the order each slot first appears,
/// with each part's node; refused when a key lacks its value or a slot has no node.
Result<SplitPlan> plan_parts(ClusterRouter& router, const CommandInfo& info,
                             std::span<const Arg> args, std::span<const std::size_t> keys,
                             Flags flags) {
  const ClusterRule& rule = info.cluster;
  // A key without its value (MSET a 1 b): one server would refuse the whole command for its
  // arity, so no part of it may run.
  if (keys.back() + rule.key_step > args.size()) {
    return Error(errc::invalid_argument,
                 std::string(info.name) + " refused: wrong number of arguments (each key takes " +
                     std::to_string(rule.key_step - 1) +
                     " value after it, and the last one has none); nothing was sent");
  }
  SplitPlan plan;
  plan.parts = plan_split(args, keys, rule.key_step);
  plan.reduce = rule.reduce;
  plan.keys = keys.size();
  const ReplicaWish wish = replica_wish(info.is(CommandFlag::ReadOnly), flags);
  for (const SplitPart& part : plan.parts) {
    Result<Connection*> connection = router.for_slot(part.slot, wish.replica, wish.demand);
    if (!connection) return std::move(connection).error();
    plan.nodes.push_back(*connection);
  }
  return plan;
}

}  // namespace

void prepare_cluster_entry(ClusterRouter& router, CommandState* target, std::span<const Arg> args,
                           PendingCommand& command, int db, Connection* connection) {
  const KeyIndexes keys(command_info(args), args);
  command.slot = keys.get().empty() ? kNoSlot : slot_of(args[keys.get().front()].bytes());
  command.follow_map = true;
  if (!target) return;  // fire-and-forget: the entry holds its slot, as anywhere
  auto* redirect = new RedirectState(router.shared_from_this(), target, args, command, db,
                                     command.slot, command.counted, command.counted);
  redirect->sent_by_caller(connection);
  const std::size_t begin = command.bytes_begin, end = command.bytes_end;
  command = redirect->entry(/*follow_map=*/true);  // its one reference goes to the entry
  command.bytes_begin = begin;
  command.bytes_end = end;
}

Error submit_to_cluster(ClusterRouter& router, int db, const CommandInfo& info,
                        std::span<const Arg> args, CommandState* state, Flags flags,
                        Clock::time_point at, std::uint32_t timeout_ms, bool call_timeout) {
  const Deadline deadline{at, timeout_ms, call_timeout};
  auto refuse = [&](Error error) {
    router.shared().release_slots(1);
    if (state) state->fail(error);
    return error;
  };
  router.shared().counters().commands.fetch_add(1, std::memory_order_relaxed);
  const KeyIndexes found(info, args);
  const std::span<const std::size_t> keys = found.get();

  const ClusterRule& rule = info.cluster;
  // Checked here for the plans that do not route through route_keys() (every primary, SCAN,
  // a split across slots).
  if (demands_both(flags)) [[unlikely]]
    return refuse(demands_both_error(info.name));
  if (keys.empty() && has_flag(flags, Flags::DemandReplica)) {
    return refuse(replica_demand_refused(info, /*keyless=*/true));
  }
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
      send_one(router, nodes[i], db, info, args, kNoSlot, part, deadline, Holding::Gather, i == 0);
      part->release();
    }
    return Error();
  }

  if (rule.plan == ClusterRule::Plan::ScanEveryPrimary && args.size() >= 2 && state) {
    std::vector<Connection*> nodes = router.primaries();
    std::sort(nodes.begin(), nodes.end(), [](Connection* a, Connection* b) {
      return a->describe_endpoint() < b->describe_endpoint();
    });
    const std::string_view text = args[1].bytes();
    const std::optional<ScanCursor> cursor = unpack_scan_cursor(text, nodes.size());
    if (!cursor) {
      return refuse(Error(errc::invalid_argument, "SCAN refused: cursor " + std::string(text) +
                                                      " is not one redmux gave for this cluster (" +
                                                      std::to_string(nodes.size()) +
                                                      " primaries)"));
    }
    std::vector<Arg> node_args(args.begin(), args.end());
    const std::string node_cursor = std::to_string(cursor->node_cursor);
    node_args[1] = Arg(node_cursor);
    auto* scan = new ScanState(state, cursor->node, nodes.size());
    // No slot: the cursor belongs to that node, so the command never moves to another.
    send_one(router, nodes[cursor->node], db, info, node_args, kNoSlot, scan, deadline,
             Holding::Itself, true);
    scan->release();
    return Error();
  }

  // One slot (or none): one node.
  const KeySlots slots = key_slots(args, keys);
  if (slots.one_slot || rule.plan != ClusterRule::Plan::Split) {
    Result<Connection*> connection = router.route_keys(info, keys.size(), slots, flags);
    if (!connection) return refuse(std::move(connection).error());
    const std::uint16_t slot = keys.empty() ? kNoSlot : slots.first;
    return send_one(router, *connection, db, info, args, slot, state, deadline, Holding::Itself,
                    true);
  }

  Result<SplitPlan> plan = plan_parts(router, info, args, keys, flags);
  if (!plan) return refuse(std::move(plan).error());
  const std::shared_ptr<Gather> gather = plan->gather(router, info, state);
  for (std::size_t i = 0; i < plan->parts.size(); ++i) {
    const std::vector<Arg> part_args = plan->args_of(i, args);
    auto* part = new PartState(gather, plan->parts[i].positions, false);
    send_one(router, plan->nodes[i], db, info, part_args, plan->parts[i].slot, part, deadline,
             Holding::Gather, i == 0);
    part->release();
  }
  return Error();
}

Result<bool> split_into_batch(
    ClusterRouter& router, const CommandInfo& info, std::span<const Arg> args, CommandState* target,
    const PendingCommand& prototype, int db, Flags flags,
    const std::function<void(Connection*, std::span<const Arg>, PendingCommand)>& add) {
  if (info.cluster.plan != ClusterRule::Plan::Split) return false;
  const KeyIndexes found(info, args);
  if (found.get().empty() || key_slots(args, found.get()).one_slot) return false;
  Result<SplitPlan> plan = plan_parts(router, info, args, found.get(), flags);
  if (!plan) return std::move(plan).error();
  const std::shared_ptr<Gather> gather = plan->gather(router, info, target);
  for (std::size_t i = 0; i < plan->parts.size(); ++i) {
    const std::vector<Arg> part_args = plan->args_of(i, args);
    auto* part = new PartState(gather, plan->parts[i].positions, false);
    PendingCommand command = prototype;
    command.slot = plan->parts[i].slot;
    command.follow_map = true;
    command.kind = PendingKind::Caller;
    // The Gather holds the command's slot of maxQueuedCommands; the first part stands for
    // the command in status().
    auto* redirect = new RedirectState(router.shared_from_this(), part, part_args, command, db,
                                       command.slot, /*holds_slot=*/false, /*tallied=*/i == 0);
    part->release();  // the RedirectState holds it
    redirect->sent_by_caller(plan->nodes[i]);
    add(plan->nodes[i], part_args, redirect->entry(/*follow_map=*/true));  // takes its reference
  }
  return true;
}

}  // namespace redmux::detail
