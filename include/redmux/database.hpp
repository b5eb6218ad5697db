// Database: the typed face of a multiplexer for one database index. A cheap value (a shared
// reference to the multiplexer and an index): take one wherever you need it, copy it, keep
// it. It keeps the multiplexer's core alive; after Multiplexer::close() its commands fail
// with ConnectionError (errc::shut_down).
//
// Threads: every member is safe from any thread, and one Database may be shared by threads.
// Commands one thread sends through one multiplexer reach the server in the order sent when
// they go to the same connection (always, unless connectionsPerEndpoint > 1, where per-key
// order holds). Commands to another database index are preceded by a SELECT on the shared
// connection, and the database is restored for the next command that names another index.
//
//   auto db = mux->database();
//   long long views = db.incr("bookstore:book:42:views").get();    // blocking face
//   Future<std::optional<std::string>> title = db.get("book:42");   // deferred face
//   db.incr("hits", Flags::FireAndForget);                          // no reply awaited
#pragma once

#include <memory>
#include <span>
#include <type_traits>

#include "redmux/arg.hpp"
#include "redmux/batch.hpp"
#include "redmux/commands.hpp"
#include "redmux/commands/blocking.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "redmux/scan.hpp"
#include "redmux/transaction.hpp"

namespace redmux {

namespace detail {
class MuxCore;
/// Sends one command through the multiplexer core (src/mux). `state` may be null
/// (fire-and-forget). Returns the refusal, if the command was refused before sending.
Error submit_command(MuxCore& core, int db, const CallOptions& options, std::span<const Arg> args,
                     CommandState* state);
/// Reports `error`, the refusal at the call of the command `args` for database `db` (-1: the
/// default), to the command hook when one is installed (src/mux/refusal_report.cpp). Only for
/// a command with a caller waiting (`state`): a fire-and-forget one is not reported.
void report_refusal(MuxCore& core, int db, std::span<const Arg> args, const CommandState* state,
                    const Error& error) noexcept;
}  // namespace detail

class Database : public Commands<Database>, public BlockingCommands<Database> {
 public:
  /// An unusable Database (valid() is false); take real ones from Multiplexer::database().
  Database() = default;

  bool valid() const noexcept { return core_ != nullptr; }
  /// The database index commands go to.
  int index() const noexcept { return db_; }

  /// Sends any command and converts its reply to T (the sink every typed command uses).
  /// With Flags::FireAndForget the future is complete at once (T{} as its value), or failed
  /// when the command was refused (queue full, admin gate …).
  template <class T>
  Future<T> send(const CallOptions& options, std::span<const Arg> args) {
    return detail::send_through<T>(options, [&](detail::CommandState* state) {
      Error error = detail::submit_command(*core_, db_, options, args, state);
      if (error && state) [[unlikely]] detail::report_refusal(*core_, db_, args, state, error);
      return error;
    });
  }

  /// Every key matching `pattern`, listed lazily with SCAN (never KEYS), `page_size` keys
  /// per round trip (SCAN's COUNT hint). Iterate it in a range-for from your own thread
  /// (each page is a blocking get()); `cursor()` on the range resumes a walk later.
  ///   for (const std::string& key : db.keys("bookstore:book:*", 500)) …
  auto keys(std::string_view pattern = "*", long long page_size = 250) {
    ScanOptions options;
    options.pattern = pattern;
    options.page_size = page_size;
    return scan_keys(*this, options);
  }

  /// A batch of commands written contiguously on one connection (not atomic: see Batch).
  Batch batch() const;
  /// A transaction (MULTI/EXEC with optional WATCH conditions) on this database, run on a
  /// dedicated connection: see transaction.hpp.
  Transaction transaction() const;

 private:
  friend class Multiplexer;
  Database(std::shared_ptr<detail::MuxCore> core, int db) : core_(std::move(core)), db_(db) {}

  std::shared_ptr<detail::MuxCore> core_;
  int db_ = 0;
};

}  // namespace redmux
