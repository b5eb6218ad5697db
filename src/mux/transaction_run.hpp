// TransactionRun: one execution of a Transaction, from lease to outcome.
//
//   lease a dedicated connection → [WATCH keys, condition reads] (one write, round 1)
//     → every condition holds: [MULTI, commands, EXEC] (one write, round 2) → outcome
//     → one does not:          UNWATCH, outcome ConditionFailed
//
// Every step is a reply callback on the connection's I/O thread: nothing ever waits for the
// server. The run is kept alive by the states of its commands in flight (each holds it).
//
// Threads: start() on the caller's thread; everything after the lease on the leased
// connection's I/O thread (or the pool's, for a lease failure), one step at a time — the
// replies of a connection arrive in order, so the run needs no lock.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "mux/transaction.hpp"
#include "net/connection.hpp"

namespace redmux::detail {

class DedicatedPool;

class TransactionRun : public std::enable_shared_from_this<TransactionRun> {
 public:
  /// Takes the buffer's work and one reference to `result`.
  TransactionRun(TransactionBuffer&& work, FutureState<TransactionResult>* result);
  ~TransactionRun();

  const std::shared_ptr<MuxCore>& core() const noexcept { return work_.core; }
  int db() const noexcept { return work_.db; }

  /// Takes a queue slot and asks the pool for a connection.
  void start();

  /// A step's reply or failure (called by the step states).
  void on_reply(int round, std::size_t index, NodeSpan reply);
  void on_failure(int round, std::size_t index, Error error);

 private:
  void on_leased(Result<std::shared_ptr<Connection>> leased);
  void send_checks();
  void after_checks();
  void send_exec();
  void on_exec_reply(NodeSpan reply);
  void after_exec();
  /// Fails every command not complete yet, gives the connection back and the slot, and
  /// completes the result (with `result`, or with `error`).
  void finish(std::optional<TransactionResult> result, const Error& error);
  /// clientCache=true: the keys the transaction writes leave every cache (as EXEC is sent,
  /// and again at its reply or failure, before any future completes).
  void clear_written() const;
  /// Tells the batch hook (when one was installed at start()) how the transaction ended.
  void report(const std::optional<TransactionResult>& result, const Error& error) noexcept;
  /// Submits `bytes` as one write with one step state per command.
  void submit_round(int round, const std::string& bytes,
                    const std::vector<std::pair<std::size_t, std::string_view>>& ends);

  TransactionBuffer work_;
  FutureState<TransactionResult>* result_;
  std::shared_ptr<DedicatedPool> pool_;
  std::shared_ptr<Connection> connection_;
  std::chrono::milliseconds timeout_;
  /// In a cluster, the slot of its keys (kNoSlot without keys): a round still queued for a
  /// node that lost it fails at once (move_unsent_dedicated_commands()).
  std::uint16_t slot_ = kNoSlot;
  /// When start() was called, if a batch hook was installed then (else time_point{}).
  std::chrono::steady_clock::time_point created_{};
  bool slot_held_ = false;
  bool finished_ = false;
  bool exec_sent_ = false;  ///< MULTI … EXEC submitted: the transaction may have run

  // the round in progress
  std::size_t pending_ = 0;
  bool reusable_ = true;          ///< false once a step timed out: the connection is replaced
  std::optional<Error> failure_;  ///< the first failure of a step in this round
  bool watching_ = false;         ///< round 1 begins with WATCH
  std::optional<std::size_t> failed_condition_;
  std::vector<std::optional<Error>> queue_errors_;  ///< per command: refused at queue time
  std::optional<TransactionResult> outcome_;        ///< set by the EXEC reply
};

}  // namespace redmux::detail
