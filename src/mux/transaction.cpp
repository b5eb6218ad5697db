// Transaction's surface: conditions, queueing commands, and handing the collected work to a
// TransactionRun (transaction_run.cpp).
#include "mux/transaction.hpp"

#include <charconv>

#include "core/enum_names.hpp"
#include "mux/core.hpp"
#include "mux/transaction_run.hpp"
#include "observe/unanswered.hpp"
#include "redmux/database.hpp"
#include "resp/encoder.hpp"

namespace redmux {
namespace detail {
namespace {

std::optional<long long> integer_of(NodeSpan reply) {
  if (reply.empty() || reply[0].type != ReplyType::Integer) return std::nullopt;
  long long value = 0;
  const std::string_view text = reply[0].value;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::string_view> string_of(NodeSpan reply) {
  if (reply.empty()) return std::nullopt;
  const ReplyType type = reply[0].type;
  if (type == ReplyType::BulkString || type == ReplyType::SimpleString ||
      type == ReplyType::VerbatimString || type == ReplyType::Double) {
    return reply[0].value;
  }
  return std::nullopt;
}

}  // namespace

void TransactionBuffer::fail_all(const Error& error) {
  for (QueuedCommand& command : commands) {
    if (command.state) {
      command.state->fail(error);
      command.state->release();
    }
  }
  commands.clear();
  conditions.clear();
  watched.clear();
  bytes.clear();
  refused.reset();
}

std::string_view ConditionCheck::encode_read(std::string& out, const Condition& c) {
  using Kind = Condition::Kind;
  switch (c.kind_) {
    case Kind::KeyExists:
    case Kind::KeyNotExists:
      resp::encode_command(out, {"EXISTS", c.key_});
      return "EXISTS";
    case Kind::StringEqual:
      resp::encode_command(out, {"GET", c.key_});
      return "GET";
    case Kind::HashEqual:
      resp::encode_command(out, {"HGET", c.key_, c.field_});
      return "HGET";
    case Kind::HashExists:
    case Kind::HashNotExists:
      resp::encode_command(out, {"HEXISTS", c.key_, c.field_});
      return "HEXISTS";
    case Kind::ListLength:
      resp::encode_command(out, {"LLEN", c.key_});
      return "LLEN";
    case Kind::SetContains:
    case Kind::SetNotContains:
      resp::encode_command(out, {"SISMEMBER", c.key_, c.field_});
      return "SISMEMBER";
    case Kind::SortedSetScoreEqual:
      resp::encode_command(out, {"ZSCORE", c.key_, c.field_});
      return "ZSCORE";
  }
  return "?";
}

bool ConditionCheck::holds(const Condition& c, NodeSpan reply) {
  using Kind = Condition::Kind;
  if (is_error_reply(reply)) return false;  // WRONGTYPE …: the key is not what was expected
  switch (c.kind_) {
    case Kind::KeyExists:
    case Kind::HashExists:
    case Kind::SetContains:
      return integer_of(reply).value_or(0) > 0;
    case Kind::KeyNotExists:
    case Kind::HashNotExists:
    case Kind::SetNotContains:
      return integer_of(reply) == 0;
    case Kind::StringEqual:
    case Kind::HashEqual:
      return string_of(reply) == std::string_view(c.value_);
    case Kind::ListLength: {
      const std::optional<long long> length = integer_of(reply);
      if (!length) return false;
      switch (c.comparison_) {
        case Comparison::Equal:
          return *length == c.length_;
        case Comparison::Less:
          return *length < c.length_;
        case Comparison::Greater:
          return *length > c.length_;
      }
      return false;
    }
    case Kind::SortedSetScoreEqual: {
      const std::optional<std::string_view> text = string_of(reply);
      if (!text) return false;  // no such member
      double score = 0;
      auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), score);
      return ec == std::errc() && ptr == text->data() + text->size() && score == c.score_;
    }
  }
  return false;
}

Error transaction_add(TransactionBuffer* target, const CallOptions& options,
                      std::span<const Arg> args, CommandState* state) {
  if (target == nullptr) {
    Error error(errc::invalid_argument, "redmux: a command added to a moved-from Transaction");
    if (state) state->fail(error);
    return error;
  }
  TransactionBuffer& buffer = *target;
  const CommandInfo& info = command_info(args);
  // Inside MULTI a blocking command does not block (it answers at once), so it may be
  // queued; connection-state commands would break the transaction and are refused, and so
  // is a command under DemandReplica: the transaction runs on the primary.
  Error error = buffer.core->check_allowed(info, args, MuxCore::Site::Transaction);
  if (!error && demands_both(options.flags)) error = demands_both_error(info.name);
  if (!error && has_flag(options.flags, Flags::DemandReplica)) {
    error = Error(errc::not_allowed, std::string(info.name) +
                                         " demands a replica (DemandReplica), but a transaction "
                                         "runs on the primary: send it outside the transaction");
  }
  if (error) {
    if (state) state->fail(error);
    if (!buffer.refused) buffer.refused = error;
    report_refusal(*buffer.core, buffer.db, args, state, error);
    return error;
  }
  if (buffer.core->cluster()) {
    std::vector<std::size_t> at;
    key_indexes(info, args, at);
    for (std::size_t i : at) buffer.keys.emplace_back(args[i].bytes());
  }
  buffer.written.note(buffer.core->cache_route(), info, args);
  QueuedCommand command;
  command.name = info.name;
  command.bytes_begin = buffer.bytes.size();
  resp::encode_command(buffer.bytes, args);
  command.bytes_end = buffer.bytes.size();
  if (state) {
    state->command_name = info.name;
    state->add_ref();           // the buffer's reference
    state->set_buffered(true);  // until execute(): get() refuses to wait for it
    command.state = state;
  }
  buffer.commands.push_back(command);
  return Error();
}

}  // namespace detail

// --- Condition ---------------------------------------------------------------------------

Condition Condition::key_exists(std::string_view key) {
  return Condition(Kind::KeyExists, key);
}
Condition Condition::key_not_exists(std::string_view key) {
  return Condition(Kind::KeyNotExists, key);
}
Condition Condition::string_equal(std::string_view key, std::string_view value) {
  return Condition(Kind::StringEqual, key, {}, value);
}
Condition Condition::hash_equal(std::string_view key, std::string_view field,
                                std::string_view value) {
  return Condition(Kind::HashEqual, key, field, value);
}
Condition Condition::hash_exists(std::string_view key, std::string_view field) {
  return Condition(Kind::HashExists, key, field);
}
Condition Condition::hash_not_exists(std::string_view key, std::string_view field) {
  return Condition(Kind::HashNotExists, key, field);
}
Condition Condition::list_length(std::string_view key, Comparison comparison, long long length) {
  Condition c(Kind::ListLength, key);
  c.comparison_ = comparison;
  c.length_ = length;
  return c;
}
Condition Condition::set_contains(std::string_view key, std::string_view member) {
  return Condition(Kind::SetContains, key, member);
}
Condition Condition::set_not_contains(std::string_view key, std::string_view member) {
  return Condition(Kind::SetNotContains, key, member);
}
Condition Condition::sorted_set_score_equal(std::string_view key, std::string_view member,
                                            double score) {
  Condition c(Kind::SortedSetScoreEqual, key, member);
  c.score_ = score;
  return c;
}

std::string_view Condition::describe() const noexcept {
  if (kind_ == Kind::ListLength) {
    static constexpr std::string_view kByComparison[] = {
        "list length equals (LLEN)", "list length is less (LLEN)", "list length is greater (LLEN)"};
    return detail::name_of(comparison_, kByComparison, kByComparison[2]);
  }
  static constexpr std::string_view kByKind[] = {
      "key exists (EXISTS)",
      "key does not exist (EXISTS)",
      "string equals (GET)",
      "hash field equals (HGET)",
      "hash field exists (HEXISTS)",
      "hash field does not exist (HEXISTS)",
      "list length",  // ListLength: by comparison, above
      "set contains member (SISMEMBER)",
      "set does not contain member (SISMEMBER)",
      "sorted-set score equals (ZSCORE)",
  };
  static_assert(std::size(kByKind) == static_cast<std::size_t>(Kind::SortedSetScoreEqual) + 1);
  return detail::name_of(kind_, kByKind, std::string_view("condition"));
}

// --- Transaction -------------------------------------------------------------------------

Transaction::Transaction(std::shared_ptr<detail::MuxCore> core, int db)
    : buffer_(std::make_unique<detail::TransactionBuffer>()) {
  buffer_->core = std::move(core);
  buffer_->db = db;
}

Transaction::Transaction(Transaction&&) noexcept = default;
Transaction& Transaction::operator=(Transaction&&) noexcept = default;

Transaction::~Transaction() {
  if (buffer_ && !buffer_->commands.empty()) {
    buffer_->fail_all(Error(errc::not_sent, "the transaction was destroyed before execute()"));
  }
}

std::size_t Transaction::size() const noexcept {
  return buffer_ ? buffer_->commands.size() : 0;
}

std::size_t Transaction::add_condition(Condition condition) {
  buffer_->conditions.push_back(std::move(condition));
  return buffer_->conditions.size() - 1;
}

Transaction& Transaction::watch(std::string_view key) {
  buffer_->watched.emplace_back(key);
  return *this;
}

TransactionResult Transaction::execute() {
  if (detail::on_io_thread()) detail::deadlock_error("Transaction::execute()").raise();
  return execute_async().get();
}

Future<TransactionResult> Transaction::execute_async() {
  if (!buffer_) {
    return Future<TransactionResult>::ready_with(
        Error(errc::invalid_argument, "redmux: execute() on a moved-from Transaction"));
  }
  detail::TransactionBuffer& buffer = *buffer_;
  for (detail::QueuedCommand& command : buffer.commands) {
    if (command.state) command.state->set_buffered(false);
  }
  if (buffer.refused) {
    // Nothing reaches the server: a transaction missing one of its commands is not the one
    // the caller wrote.
    TransactionResult result;
    result.outcome = TransactionOutcome::Rejected;
    result.reason = "a command was refused before sending: " + buffer.refused->message();
    const std::size_t size = buffer.commands.size();
    buffer.fail_all(Error(errc::transaction_aborted,
                          "not run: another command of the transaction was refused (" +
                              buffer.refused->message() + ")"));
    detail::Observer& observer = buffer.core->shared().observer();
    if (observer.wants_batches()) {  // its event, as for one that ran: no server, no bytes
      BatchEvent event;
      event.kind = BatchKind::Transaction;
      event.operation_name = "MULTI";
      event.db_namespace = buffer.db;
      event.batch_size = size;
      const detail::Unanswered how = detail::unanswered(*buffer.refused);
      event.outcome = how.outcome;
      event.error_type = how.error_type;
      event.error_message = result.reason;
      event.created = observer.now();
      event.ended = event.created;
      observer.batch_done(event);
    }
    return Future<TransactionResult>::ready_with(std::move(result));
  }
  auto* out = new detail::FutureState<TransactionResult>();
  Future<TransactionResult> future(out);
  out->add_ref();  // the run's reference
  auto run = std::make_shared<detail::TransactionRun>(std::move(buffer), out);
  buffer = detail::TransactionBuffer();
  buffer.core = run->core();
  buffer.db = run->db();
  run->start();
  return future;
}

Transaction Database::transaction() const {
  return Transaction(core_, db_);
}

}  // namespace redmux
