// Transaction: commands that run atomically (MULTI … EXEC), optionally only if conditions
// hold — a key exists, a string or hash field has a value, a list has a length … — checked
// under WATCH, so nothing can change them between the check and the commit.
//
//   auto tx = db.transaction();
//   tx.add_condition(Condition::hash_equal("book:42", "state", "available"));
//   auto stock = tx.hincrby("book:42", "stock", -1);
//   auto state = tx.hset("book:42", "state", "reserved");
//   if (tx.execute()) std::cout << stock.get();   // committed: every future has its reply
//
// How it runs: on a connection leased from the multiplexer's dedicated pool (never the
// shared one, whose other callers would land inside the transaction): WATCH the condition
// keys and read their values in one round trip; if every condition holds, MULTI, the
// commands and EXEC in one write; otherwise UNWATCH. All of it is asynchronous — no thread
// waits while the server answers — and execute() only waits for the outcome.
//
// Futures: each queued command's future completes after execute(): with its own reply when
// the transaction committed (a command that failed inside EXEC — WRONGTYPE … — fails alone:
// Redis does not roll back), with TransactionAbortedError (errc::transaction_aborted) when it
// did not, or with the command's own ServerError when the server refused to queue it
// (EXECABORT: wrong arity, unknown command …), which aborts the others. Lost connections and
// timeouts fail every future and execute() with the ConnectionError/TimeoutError.
//
// Threads: a Transaction is one caller's scratch pad: build and execute it on one thread.
// It may be executed again after execute() returned (it is empty then). Destroying one that
// was never executed fails its futures (errc::not_sent). Its commands leave the per-caller
// order of the shared connection.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "redmux/arg.hpp"
#include "redmux/commands.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"

namespace redmux {

namespace detail {
class MuxCore;
struct TransactionBuffer;
struct ConditionCheck;
/// Encodes and records one queued command. When it is refused, `state` (if any) is failed,
/// the transaction will fail with the refusal at execute(), and the refusal is returned.
/// `buffer` null (a moved-from Transaction): refused with errc::invalid_argument.
Error transaction_add(TransactionBuffer* buffer, const CallOptions& options,
                      std::span<const Arg> args, CommandState* state);
}  // namespace detail

/// How a length compares with the expected one (Condition::list_length).
enum class Comparison : unsigned char { Equal, Less, Greater };

/// A precondition of a transaction. Its key is WATCHed; its value is read once before the
/// commit decision. A plain value; copy it freely.
class Condition {
 public:
  /// The key exists (EXISTS).
  static Condition key_exists(std::string_view key);
  /// The key does not exist (EXISTS).
  static Condition key_not_exists(std::string_view key);
  /// The string at `key` is exactly `value`; false when the key is missing (GET).
  static Condition string_equal(std::string_view key, std::string_view value);
  /// The hash field is exactly `value`; false when missing (HGET).
  static Condition hash_equal(std::string_view key, std::string_view field, std::string_view value);
  /// The hash has `field` (HEXISTS).
  static Condition hash_exists(std::string_view key, std::string_view field);
  /// The hash does not have `field` (HEXISTS).
  static Condition hash_not_exists(std::string_view key, std::string_view field);
  /// The list's length (0 when missing) compares to `length` as said (LLEN).
  static Condition list_length(std::string_view key, Comparison comparison, long long length);
  /// The set has `member` (SISMEMBER).
  static Condition set_contains(std::string_view key, std::string_view member);
  /// The set does not have `member` (SISMEMBER).
  static Condition set_not_contains(std::string_view key, std::string_view member);
  /// The sorted-set member's score is exactly `score`; false when missing (ZSCORE).
  static Condition sorted_set_score_equal(std::string_view key, std::string_view member,
                                          double score);

  /// The key the condition reads (and WATCHes).
  const std::string& key() const noexcept { return key_; }
  /// What is checked, without the values: "hash field equals (HGET)".
  std::string_view describe() const noexcept;

 private:
  friend struct detail::ConditionCheck;
  enum class Kind : unsigned char {
    KeyExists,
    KeyNotExists,
    StringEqual,
    HashEqual,
    HashExists,
    HashNotExists,
    ListLength,
    SetContains,
    SetNotContains,
    SortedSetScoreEqual,
  };
  Condition(Kind kind, std::string_view key, std::string_view field = {},
            std::string_view value = {})
      : kind_(kind), key_(key), field_(field), value_(value) {}

  Kind kind_;
  std::string key_;
  std::string field_;  ///< hash field, set or sorted-set member
  std::string value_;  ///< expected string or hash value
  long long length_ = 0;
  double score_ = 0;
  Comparison comparison_ = Comparison::Equal;
};

/// How a transaction ended (when it did not fail outright with an error).
enum class TransactionOutcome : unsigned char {
  Committed,          ///< EXEC ran the commands (some may have failed alone)
  ConditionFailed,    ///< a condition did not hold: nothing was sent after the check
  WatchedKeyChanged,  ///< a watched key changed between WATCH and EXEC: EXEC ran nothing
  Rejected,           ///< a command was refused (locally or at queue time: EXECABORT)
};

/// The result of Transaction::execute().
struct TransactionResult {
  TransactionOutcome outcome = TransactionOutcome::Committed;
  /// ConditionFailed: the index add_condition() returned for the first that did not hold.
  std::optional<std::size_t> failed_condition{};
  /// Why it did not commit, for logs; empty when committed.
  std::string reason{};

  bool committed() const noexcept { return outcome == TransactionOutcome::Committed; }
  explicit operator bool() const noexcept { return committed(); }
};

class Transaction : public Commands<Transaction> {
 public:
  Transaction(Transaction&&) noexcept;
  Transaction& operator=(Transaction&&) noexcept;
  ~Transaction();

  /// Queues a command (the sink every typed command uses); its future completes after
  /// execute(). Connection-state commands (SELECT, WATCH, MULTI …) are refused, which
  /// aborts the transaction. With FireAndForget the future is complete at once (T{}), or
  /// failed with the refusal.
  template <class T>
  Future<T> send(const CallOptions& options, std::span<const Arg> args) {
    return detail::send_through<T>(options, [&](detail::CommandState* state) {
      return detail::transaction_add(buffer_.get(), options, args, state);
    });
  }

  /// Adds a condition checked before the commit; returns its index (reported in
  /// TransactionResult::failed_condition).
  std::size_t add_condition(Condition condition);
  /// WATCHes `key` inside execute(): WATCH goes out with the conditions' reads, and EXEC runs
  /// nothing (WatchedKeyChanged) if anyone changes the key between that WATCH and EXEC. It
  /// does not cover what you read before execute(): to commit only if a value you read is
  /// still there, add a condition on it (Condition::string_equal(key, value) …), which
  /// execute() reads again under the WATCH.
  Transaction& watch(std::string_view key);

  /// The generic commands of every sink queue like typed ones:
  /// `tx.execute({"OBJECT", "FREQ", key})`, `tx.execute("PING")`, `tx.command<T>(…)`.
  using Commands<Transaction>::execute;
  /// Runs the transaction and waits for the outcome. Throws the error (ConnectionError,
  /// TimeoutError …) when it could not run; on an I/O thread, DeadlockError (use
  /// execute_async()). The transaction is empty afterwards.
  TransactionResult execute();
  /// Runs the transaction; the future completes with the outcome, or fails with the error.
  Future<TransactionResult> execute_async();

  /// Commands queued and not yet executed.
  std::size_t size() const noexcept;

 private:
  friend class Database;
  Transaction(std::shared_ptr<detail::MuxCore> core, int db);

  std::unique_ptr<detail::TransactionBuffer> buffer_;
};

}  // namespace redmux
