// trap: the sync-over-async trap (seed 000's 110-second timeout) and what redmux does about
// it. R requests each do two INCRs, the second after the first has answered:
//   get-in-callback     the second is awaited with get() inside the first's then() callback,
//                       i.e. on redmux's I/O thread, the thread that would deliver its reply:
//                       redmux refuses at once with DeadlockError instead of hanging (unless
//                       the reply is already there: get() on a complete future never waits);
//   co_await            the second is co_awaited in a coroutine: no thread blocks;
//   get-on-app-threads  R application threads each block in get() twice: fine, because
//                       redmux's I/O threads are its own and never wait for the caller's.
// Latency: per request, from its first INCR to its end. The counter is read back through
// the same multiplexer (after every INCR it carried, replies being in order).
#include <coroutine>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include "bench.hpp"

namespace redmux_bench {

namespace {

// A coroutine nobody awaits: it starts at once and frees itself when it ends.
struct Detached {
  struct promise_type {
    Detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept {}
  };
};

struct Tally {
  explicit Tally(int requests) : done(requests), latencies(requests) {}
  std::latch done;
  std::vector<std::int64_t> latencies;  ///< one slot per request: no sharing
  std::atomic<int> completed{0};
  std::atomic<int> deadlocks{0};
  std::atomic<int> other_errors{0};
  std::mutex mutex;
  std::string first_error;

  void error(const std::exception& e, bool deadlock) {
    (deadlock ? deadlocks : other_errors).fetch_add(1);
    std::lock_guard lock(mutex);
    if (first_error.empty()) first_error = e.what();
  }
};

Detached request_coroutine(redmux::Database db, std::string key, int index, Clock::time_point t0,
                           Tally& tally) {
  try {
    co_await db.incr(key);
    co_await db.incr(key);  // resumed on the I/O thread; awaiting again blocks nothing
    tally.completed.fetch_add(1);
  } catch (const std::exception& e) {
    tally.error(e, false);
  }
  tally.latencies[index] = ns_between(t0, Clock::now());
  tally.done.count_down();
}

Row finish(redmux::Database& db, const std::string& variant, int threads, int requests,
           Clock::time_point start, Tally& tally, const std::string& key, bool expect_deadlocks) {
  const auto end = Clock::now();
  Row row;
  row.scenario = "trap";
  row.variant = variant;
  row.client = "redmux";
  row.threads = threads;
  row.commands = requests;
  row.ms = ms_between(start, end);
  row.ops_per_sec = requests / (row.ms / 1000.0);
  row.set_latency(summarize(tally.latencies));
  row.add("completed", static_cast<long long>(tally.completed.load()));
  row.add("deadlock_errors", static_cast<long long>(tally.deadlocks.load()));
  const std::optional<std::string> value = db.get(key).get();
  const std::string expected = std::to_string(2 * requests);
  row.ok = value == expected && tally.other_errors.load() == 0 &&
           (expect_deadlocks ? tally.deadlocks.load() + tally.completed.load() == requests
                             : tally.completed.load() == requests);
  row.check = "counter=" + value.value_or("nil");
  // get() on an already complete future returns at once, even on an I/O thread: when the
  // reply beat the check (the callback ran on the calling thread, the I/O thread answered
  // meanwhile), nothing could deadlock and the value is returned.
  if (expect_deadlocks && tally.completed.load()) {
    row.check += " (" + std::to_string(tally.completed.load()) + " reply already there)";
  }
  if (tally.other_errors.load()) row.check += " errors=" + std::to_string(tally.other_errors);
  return row;
}

}  // namespace

void run_trap(Bench& bench, int requests) {
  Table table;
  table.title = "trap: sync over async — " + with_commas(requests) + " requests, two INCRs each";
  table.shows =
      "a blocking wait on redmux's I/O thread fails at once with DeadlockError (not a "
      "110-second hang); co_await, or blocking on your own threads, works.";
  table.setup = bench.setup_line(
      "1 I/O thread (+ " + std::to_string(requests) + " app threads in the last row)",
      with_commas(2LL * requests) + " × INCR");
  auto mux = bench.connect("redmux-bench-trap");
  redmux::Database db = mux->database();
  std::string deadlock_message;

  {  // get() inside a then() callback: on the I/O thread.
    const std::string key = Bench::key("trap", "get-in-callback");
    bench.del(key);
    Tally tally(requests);
    const auto start = Clock::now();
    for (int i = 0; i < requests; ++i) {
      const auto t0 = Clock::now();
      db.incr(key).then([&tally, db, key, i, t0](redmux::Result<long long>) mutable {
        try {
          db.incr(key).get();  // the trap: this thread is the one that would read the reply
          tally.completed.fetch_add(1);
        } catch (const redmux::DeadlockError& e) {
          tally.error(e, true);
        } catch (const std::exception& e) {
          tally.error(e, false);
        }
        tally.latencies[i] = ns_between(t0, Clock::now());
        tally.done.count_down();
      });
    }
    tally.done.wait();
    table.rows.push_back(finish(db, "get-in-callback", 1, requests, start, tally, key, true));
    deadlock_message = tally.first_error;
  }
  {  // co_await: nothing blocks.
    const std::string key = Bench::key("trap", "co_await");
    bench.del(key);
    Tally tally(requests);
    const auto start = Clock::now();
    for (int i = 0; i < requests; ++i) request_coroutine(db, key, i, Clock::now(), tally);
    tally.done.wait();
    table.rows.push_back(finish(db, "co_await", 1, requests, start, tally, key, false));
  }
  {  // get() on the application's own threads: the blocking face, as intended.
    const std::string key = Bench::key("trap", "get-on-app-threads");
    bench.del(key);
    Tally tally(requests);
    std::latch ready(requests), go(1);
    std::vector<std::thread> threads;
    threads.reserve(requests);
    for (int i = 0; i < requests; ++i) {
      threads.emplace_back([&, i] {
        ready.count_down();
        go.wait();
        const auto t0 = Clock::now();
        try {
          db.incr(key).get();
          db.incr(key).get();
          tally.completed.fetch_add(1);
        } catch (const std::exception& e) {
          tally.error(e, false);
        }
        tally.latencies[i] = ns_between(t0, Clock::now());
        tally.done.count_down();
      });
    }
    ready.wait();
    const auto start = Clock::now();
    go.count_down();
    tally.done.wait();
    Row row = finish(db, "get-on-app-threads", requests, requests, start, tally, key, false);
    for (auto& t : threads) t.join();
    table.rows.push_back(std::move(row));
  }
  for (const Row& r : table.rows) bench.del(Bench::key("trap", r.variant));
  if (!deadlock_message.empty()) {
    table.notes.push_back("the DeadlockError each get-in-callback request got:");
    table.notes.push_back("  " + deadlock_message);
  }
  for (Row& r : table.rows) {
    if (r.variant == "get-in-callback") r.seed_ms = 109739;
    if (r.variant == "co_await") r.seed_ms = 3;
  }
  table.notes.push_back(
      "seed (ms): seed 000, StackExchange.Redis — .Result on 500 thread-pool threads took "
      "109,739 ms with 492 timeouts; awaited, 3 ms.");
  bench.report().print(table);
}

}  // namespace redmux_bench
