// Batch: commands collected locally, then written contiguously — no other caller's command
// lands between them on the wire — when execute() is called. Not a transaction: the server
// may interleave other clients' commands, and a failing command does not stop the others
// (use a transaction for atomicity). Every command's future completes with its own reply.
//
// A Batch is one caller's scratch pad: not thread-safe; build and execute it on one thread.
// Destroying a Batch that was never executed fails its futures (errc::not_sent).
//
//   auto batch = db.batch();
//   auto a = batch.incr("a");
//   auto b = batch.get("b");
//   batch.execute();
//   long long av = a.get();
#pragma once

#include <memory>
#include <span>
#include <type_traits>

#include "redmux/arg.hpp"
#include "redmux/commands.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"

namespace redmux {

namespace detail {
class MuxCore;
struct BatchBuffer;
/// Encodes and records one command of a batch. When it is refused (admin gate,
/// connection-state command, queue full, routing) nothing is recorded, `state` (if any) is
/// failed, and the refusal is returned.
/// `buffer` null (a moved-from Batch): refused with errc::invalid_argument.
Error batch_add(BatchBuffer* buffer, const CallOptions& options, std::span<const Arg> args,
                CommandState* state);
}  // namespace detail

class Batch : public Commands<Batch> {
 public:
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  ~Batch();

  /// Adds a command; its future completes after execute(), when its reply arrives.
  /// FireAndForget in a batch: the future is complete at once with T{}, or failed when the
  /// command was refused (admin gate, connection-state command, queue full …), which then
  /// is not part of the batch (size() does not count it).
  template <class T>
  Future<T> send(const CallOptions& options, std::span<const Arg> args) {
    return detail::send_through<T>(options, [&](detail::CommandState* state) {
      return detail::batch_add(buffer_.get(), options, args, state);
    });
  }

  /// The generic commands of every sink add to the batch like typed ones:
  /// `batch.execute({"OBJECT", "FREQ", key})`, `batch.execute("PING")`, `batch.command<T>(…)`.
  using Commands<Batch>::execute;
  /// Sends every command added so far, contiguously, on one connection: the one its commands
  /// chose as they were added (the first keyed command's; among a primary and replicas, a
  /// replica that its first reads chose, or the primary once a command needs it — see
  /// docs/topology.md). In a Redis Cluster, one write per node. The batch is empty
  /// afterwards and may be reused.
  void execute();
  /// Commands added and not yet executed.
  std::size_t size() const noexcept;

 private:
  friend class Database;
  Batch(std::shared_ptr<detail::MuxCore> core, int db);

  std::unique_ptr<detail::BatchBuffer> buffer_;
};

}  // namespace redmux
