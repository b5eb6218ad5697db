#include "mux/transaction_run.hpp"

#include <mutex>

#include "mux/cluster.hpp"
#include "mux/core.hpp"
#include "mux/dedicated_pool.hpp"
#include "observe/unanswered.hpp"
#include "resp/encoder.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {
namespace {

std::mutex g_hook_mutex;
std::shared_ptr<std::function<void()>> g_hook;

std::shared_ptr<std::function<void()>> test_hook() {
  std::lock_guard lock(g_hook_mutex);
  return g_hook;
}

/// One command of a round: forwards its outcome to the run (which it keeps alive).
class StepState final : public CommandState {
 public:
  StepState(std::shared_ptr<TransactionRun> run, int round, std::size_t index)
      : run_(std::move(run)), round_(round), index_(index) {}

  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    try {
      run_->on_reply(round_, index_, reply);
    } catch (...) {  // out of memory building an error: the deadline still completes the run
    }
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    try {
      run_->on_failure(round_, index_, std::move(error));
    } catch (...) {
    }
    publish();
  }

 private:
  std::shared_ptr<TransactionRun> run_;
  int round_;
  std::size_t index_;
};

constexpr int kChecks = 1;
constexpr int kExec = 2;

/// A failure of the first round (WATCH and the condition reads): MULTI … EXEC were never
/// written, so nothing of the transaction ran, whatever the failed step's own error says of
/// that step (WATCH "may have run": it changes no data).
Error before_exec(const Error& error) {
  constexpr std::string_view kNothingRan =
      "; MULTI … EXEC were not sent, so nothing of the transaction ran";
  switch (error.code()) {
    case errc::outcome_unknown: {
      // "… lost after WATCH was sent (…): it may or may not have run" is true of WATCH, which
      // changes no data; read as said of the transaction it would contradict this message.
      std::string cause = error.message();
      constexpr std::string_view kMayHaveRun = ": it may or may not have run";
      if (const std::size_t at = cause.rfind(kMayHaveRun); at != std::string::npos) {
        cause.erase(at, kMayHaveRun.size());
      }
      return Error(errc::not_sent,
                   "transaction not sent: its connection broke during the WATCH "
                   "round (" +
                       cause + "; WATCH and the condition reads change no data)" +
                       std::string(kNothingRan) + "; safe to retry");
    }
    case errc::not_sent:
      return Error(errc::not_sent, "transaction not sent: its WATCH round was not sent (" +
                                       error.message() + ")" + std::string(kNothingRan) +
                                       "; safe to retry");
    case errc::timeout: {
      std::string message = error.message();
      if (message.ends_with('.')) message.pop_back();  // a sentence goes on after it
      return Error::never_ran(errc::timeout, message + std::string(kNothingRan));
    }
    default:
      return error;
  }
}

}  // namespace

void set_transaction_test_hook(std::function<void()> hook) {
  std::lock_guard lock(g_hook_mutex);
  g_hook = hook ? std::make_shared<std::function<void()>>(std::move(hook)) : nullptr;
}

TransactionRun::TransactionRun(TransactionBuffer&& work, FutureState<TransactionResult>* result)
    : work_(std::move(work)), result_(result), timeout_(work_.core->config().async_timeout) {}

TransactionRun::~TransactionRun() {
  if (!finished_) {  // never started, or dropped by a pool that closed: complete everything
    finished_ = true;
    const Error error(errc::shut_down, "transaction not run: the multiplexer was closed");
    work_.fail_all(error);
    result_->fail(error);
  }
  result_->release();
}

void TransactionRun::start() {
  MuxCore& core = *work_.core;
  if (core.shared().observer().wants_batches()) created_ = core.shared().observer().now();
  const Clock::time_point wait_until = Clock::now() + timeout_;
  if (!core.shared().acquire_slot(wait_until)) {
    finish(std::nullopt, core.shared().queue_full_error("transaction", wait_until, timeout_));
    return;
  }
  slot_held_ = true;
  const Arg exec[] = {"EXEC"};
  Result<Connection*> routed = core.route(command_info(exec), exec, Flags::None);
  if (ClusterRouter* cluster = core.cluster()) {
    // In a cluster a transaction runs on one node: every key it watches, checks or writes
    // must be in one slot (a {hash tag} makes it so).
    std::vector<std::string_view> keys(work_.keys.begin(), work_.keys.end());
    for (const std::string& key : work_.watched) keys.push_back(key);
    for (const Condition& condition : work_.conditions) keys.push_back(condition.key());
    if (!keys.empty()) {
      const std::uint16_t slot = slot_of(keys.front());
      for (std::string_view key : keys) {
        if (slot_of(key) != slot) {
          finish(std::nullopt,
                 Error(errc::invalid_argument,
                       "transaction refused: its keys map to different cluster slots (\"" +
                           std::string(keys.front()) + "\" and \"" + std::string(key) +
                           "\"; CROSSSLOT); a transaction runs on one node — give its keys a "
                           "common {hash tag}"));
          return;
        }
      }
      routed = cluster->for_slot(slot, false, false);
      slot_ = slot;
    }
  }
  if (!routed) {
    finish(std::nullopt, routed.error());
    return;
  }
  if ((*routed)->fails_fast()) {  // the server is down: failFast refuses at once
    finish(std::nullopt, (*routed)->refusal_of("transaction"));
    return;
  }
  pool_ = core.dedicated_pool();
  pool_->acquire((*routed)->endpoint(), wait_until, "transaction",
                 [self = shared_from_this()](Result<std::shared_ptr<Connection>> leased) {
                   self->on_leased(std::move(leased));
                 });
}

void TransactionRun::on_leased(Result<std::shared_ptr<Connection>> leased) {
  if (!leased) {
    finish(std::nullopt, leased.error());
    return;
  }
  connection_ = std::move(*leased);
  const Arg exec[] = {"EXEC"};
  if (Error error = work_.core->check_database(work_.db, *connection_, command_info(exec))) {
    finish(std::nullopt, error);
    return;
  }
  for (const Condition& condition : work_.conditions) work_.watched.push_back(condition.key());
  if (work_.watched.empty()) {
    send_exec();
  } else {
    send_checks();
  }
}

void TransactionRun::submit_round(
    int round, const std::string& bytes,
    const std::vector<std::pair<std::size_t, std::string_view>>& ends) {
  std::vector<PendingCommand> commands(ends.size());
  const Clock::time_point deadline = Clock::now() + timeout_;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    PendingCommand& command = commands[i];
    auto* step = new StepState(shared_from_this(), round, i);  // its reference: the connection's
    step->command_name = ends[i].second;
    command.state = step;
    command.name = ends[i].second;
    command.kind = PendingKind::Caller;
    command.counted = false;  // the transaction holds one slot for all its commands
    command.slot = slot_;
    command.deadline = deadline;
    command.timeout_ms = static_cast<std::uint32_t>(timeout_.count());
    command.bytes_begin = begin;
    command.bytes_end = ends[i].first;
    begin = ends[i].first;
  }
  pending_ = commands.size();
  failure_.reset();
  work_.core->shared().counters().commands.fetch_add(commands.size(), std::memory_order_relaxed);
  connection_->submit_batch(work_.db, bytes, commands);
}

void TransactionRun::send_checks() {
  std::string bytes;
  std::vector<std::pair<std::size_t, std::string_view>> ends;
  std::vector<Arg> watch;
  watch.reserve(work_.watched.size() + 1);
  watch.emplace_back("WATCH");
  for (const std::string& key : work_.watched) watch.emplace_back(std::string_view(key));
  resp::encode_command(bytes, watch);
  ends.emplace_back(bytes.size(), "WATCH");
  watching_ = true;
  for (const Condition& condition : work_.conditions) {
    const std::string_view name = ConditionCheck::encode_read(bytes, condition);
    ends.emplace_back(bytes.size(), name);
  }
  submit_round(kChecks, bytes, ends);
}

void TransactionRun::on_reply(int round, std::size_t index, NodeSpan reply) {
  // A MOVED (to WATCH, a condition's read, a queued command) is followed by no one here.
  if (ClusterRouter* router = work_.core->cluster(); router && connection_) {
    router->learn_redirect(reply, connection_->endpoint().host);
  }
  if (round == kChecks) {
    if (index == 0 && watching_) {
      if (is_error_reply(reply) && !failure_) failure_ = server_error_from(reply, "WATCH");
    } else {
      const std::size_t condition = index - (watching_ ? 1 : 0);
      if (!failed_condition_ && !ConditionCheck::holds(work_.conditions[condition], reply)) {
        failed_condition_ = condition;
      }
    }
    if (--pending_ == 0) after_checks();
    return;
  }
  const std::size_t commands = work_.commands.size();
  if (index == 0) {
    if (is_error_reply(reply) && !failure_) failure_ = server_error_from(reply, "MULTI");
  } else if (index <= commands) {
    // "+QUEUED", or the reason the server refused to queue the command (EXEC then aborts).
    if (is_error_reply(reply)) {
      queue_errors_[index - 1] = server_error_from(reply, work_.commands[index - 1].name);
    }
  } else {
    on_exec_reply(reply);
  }
  if (--pending_ == 0) after_exec();
}

void TransactionRun::on_failure(int round, std::size_t index, Error error) {
  // After a timeout the connection may still owe replies: it is replaced, not reused.
  if (error.code() == errc::timeout || error.code() == errc::shut_down) reusable_ = false;
  // EXEC's own failure decides what the caller may assume: it says whether EXEC was sent
  // (the transaction may have committed) or not (nothing ran: MULTI without EXEC is dropped
  // with the connection). MULTI, before it in the same write, fails first. A server's
  // refusal of an earlier step stays the cause.
  const bool exec = round == kExec && index == work_.commands.size() + 1;
  if (!failure_ || (exec && failure_->code() != errc::server_error)) failure_ = std::move(error);
  if (--pending_ != 0) return;
  if (round == kChecks) {
    after_checks();
  } else {
    after_exec();
  }
}

void TransactionRun::after_checks() {
  if (failure_) {
    finish(std::nullopt, before_exec(*failure_));
    return;
  }
  if (failed_condition_) {
    // The connection's commands run in order, so the next lease's commands come after this
    // UNWATCH: no need to wait for its reply before giving the connection back.
    std::string bytes;
    resp::encode_command(bytes, {"UNWATCH"});
    PendingCommand unwatch = own_command("UNWATCH", PendingKind::FireAndForget);
    unwatch.bytes_end = bytes.size();
    connection_->submit_batch(work_.db, bytes, std::span<PendingCommand>(&unwatch, 1));
    const Condition& condition = work_.conditions[*failed_condition_];
    TransactionResult result;
    result.outcome = TransactionOutcome::ConditionFailed;
    result.failed_condition = failed_condition_;
    result.reason = "condition " + std::to_string(*failed_condition_) + " (" +
                    std::string(condition.describe()) + ") did not hold";
    finish(std::move(result), Error());
    return;
  }
  if (auto hook = test_hook()) (*hook)();
  send_exec();
}

void TransactionRun::send_exec() {
  // Round 2 is submitted from the reply callback of round 1, on the connection's I/O thread,
  // while the connection is ready: it is written on the connection that holds the WATCH.
  // Should that connection break before the write, the commands fail (not_sent): dedicated
  // connections never carry commands over to a new connection (set_carry_over(false)).
  std::string bytes;
  std::vector<std::pair<std::size_t, std::string_view>> ends;
  bytes.reserve(work_.bytes.size() + 32);
  resp::encode_command(bytes, {"MULTI"});
  ends.emplace_back(bytes.size(), "MULTI");
  const std::size_t base = bytes.size();
  bytes += work_.bytes;
  for (const QueuedCommand& command : work_.commands) {
    ends.emplace_back(base + command.bytes_end, command.name);
  }
  resp::encode_command(bytes, {"EXEC"});
  ends.emplace_back(bytes.size(), "EXEC");
  queue_errors_.assign(work_.commands.size(), std::nullopt);
  clear_written();
  exec_sent_ = true;
  submit_round(kExec, bytes, ends);
}

void TransactionRun::clear_written() const {
  work_.written.leave_caches(work_.core->cache_route());
}

void TransactionRun::on_exec_reply(NodeSpan reply) {
  clear_written();  // before any command's future completes
  TransactionResult result;
  std::vector<QueuedCommand>& commands = work_.commands;
  if (is_error_reply(reply)) {
    // EXECABORT: the commands refused at queue time carry their own errors; the rest were
    // discarded because of them.
    result.outcome = TransactionOutcome::Rejected;
    // Counted from 1, as a reader counts the commands queued: "SET (command 2 of 3)".
    std::string refused;
    const Error* first_refusal = nullptr;
    for (std::size_t i = 0; i < commands.size(); ++i) {
      if (queue_errors_[i]) {
        refused += (refused.empty() ? "" : ", ") + std::string(commands[i].name) + " (command " +
                   std::to_string(i + 1) + " of " + std::to_string(commands.size()) + ")";
        if (!first_refusal) first_refusal = &*queue_errors_[i];
      }
    }
    result.reason = std::string(reply[0].value);
    if (first_refusal) {
      result.reason += " (refused when queued: " + refused + "; " + first_refusal->message() + ")";
    }
    for (std::size_t i = 0; i < commands.size(); ++i) {
      if (!commands[i].state) continue;
      if (queue_errors_[i]) {
        commands[i].state->fail(*queue_errors_[i]);
      } else {
        commands[i].state->fail(Error(errc::transaction_aborted,
                                      std::string(commands[i].name) +
                                          " not run: the server refused another command of "
                                          "the transaction (" +
                                          refused + "), so EXEC discarded them all (EXECABORT)"));
      }
    }
  } else if (!reply.empty() && reply[0].type == ReplyType::Null) {
    result.outcome = TransactionOutcome::WatchedKeyChanged;
    result.reason = "a watched key was changed by another client before EXEC; nothing ran";
    for (QueuedCommand& command : commands) {
      if (command.state) {
        command.state->fail(Error(errc::transaction_aborted,
                                  std::string(command.name) +
                                      " not run: a watched key was changed by another client "
                                      "before EXEC, so the transaction did not commit"));
      }
    }
  } else if (!reply.empty() && reply[0].type == ReplyType::Array) {
    // One element per queued command, in order; each completes its own future (an error
    // element fails that command alone: Redis does not roll back).
    result.outcome = TransactionOutcome::Committed;
    std::size_t at = 1, i = 0;
    for (; i < commands.size() && at < reply.size(); ++i) {
      const std::size_t end = subtree_end(reply, at);
      if (commands[i].state) commands[i].state->deliver(reply.subspan(at, end - at));
      at = end;
    }
    for (; i < commands.size(); ++i) {
      if (commands[i].state) {
        commands[i].state->fail(
            Error(errc::unexpected_reply, "EXEC answered fewer results than commands queued"));
      }
    }
  } else {
    if (!failure_) {
      failure_ = Error(errc::unexpected_reply, "EXEC answered with a " +
                                                   std::string(type_name(reply[0].type)) +
                                                   " instead of an array, null or error");
    }
    return;
  }
  outcome_ = std::move(result);
}

void TransactionRun::after_exec() {
  if (outcome_) {
    TransactionResult result = std::move(*outcome_);
    finish(std::move(result), Error());
    return;
  }
  finish(std::nullopt,
         failure_ ? *failure_ : Error(errc::unexpected_reply, "EXEC answered nothing usable"));
}

void TransactionRun::finish(std::optional<TransactionResult> result, const Error& error) {
  if (finished_) return;
  finished_ = true;
  if (exec_sent_ && !outcome_) clear_written();  // EXEC failed (it may have run all the same)
  if (created_ != Clock::time_point{}) report(result, error);
  if (connection_) {
    pool_->give_back(connection_, reusable_);
    connection_.reset();
  }
  if (slot_held_) {
    work_.core->shared().release_slots(1);
    slot_held_ = false;
  }
  if (result) {
    // Commands still open did not run (condition failed): say why.
    work_.fail_all(Error(errc::transaction_aborted,
                         "not run: the transaction did not commit: " + result->reason));
    result_->set(std::move(*result));
  } else {
    // A timeout before anything of the transaction ran says so for each command too.
    std::string message = "transaction failed: " + error.message();
    work_.fail_all(error.never_ran() ? Error::never_ran(error.code(), std::move(message))
                                     : Error(error.code(), std::move(message)));
    result_->fail(error);
  }
}

void TransactionRun::report(const std::optional<TransactionResult>& result,
                            const Error& error) noexcept {
  try {
    BatchEvent event;
    event.kind = BatchKind::Transaction;
    event.operation_name = "MULTI";
    event.db_namespace = work_.db;
    Endpoint endpoint;
    if (connection_) endpoint = connection_->endpoint();
    event.server_address = endpoint.is_unix() ? endpoint.unix_path : endpoint.host;
    event.server_port = endpoint.is_unix() || !connection_ ? 0 : endpoint.port;
    event.batch_size = work_.commands.size();
    event.bytes_written = work_.bytes.size();
    if (result) {
      event.committed = result->outcome == TransactionOutcome::Committed;
      event.error_message = result->reason;
      if (result->outcome == TransactionOutcome::Rejected) {
        event.outcome = CommandOutcome::ServerError;
        const std::string_view reason = result->reason;
        event.response_status_code =
            reason.starts_with("EXECABORT") ? std::string_view("EXECABORT") : std::string_view();
        event.error_type = event.response_status_code.empty() ? std::string_view("rejected")
                                                              : event.response_status_code;
      }
    } else {
      event.error_message = error.message();
      const Unanswered how = unanswered(error);
      event.outcome = how.outcome;
      event.error_type = how.error_type;
    }
    Observer& observer = work_.core->shared().observer();
    event.created = created_;
    event.ended = observer.now();
    observer.batch_done(event);
  } catch (...) {  // out of memory copying the endpoint: the transaction's result stands
  }
}

}  // namespace redmux::detail
