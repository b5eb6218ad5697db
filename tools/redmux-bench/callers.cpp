// callers (seed 004, the go-redis autopipeline table): T threads INCR one counter (or, with
// --keys N, thread t INCRs counter t mod N — spread over a cluster's primaries) for D
// seconds, three ways —
//   plain          hiredis, one connection per thread, one round trip per INCR (baseline);
//   blocking-face  every thread calls db.incr(key).get() on one shared multiplexer (the
//                  default WaitPolicy::Adaptive: a blocked get() yields before it sleeps);
//   blocking-face-sleep  the same with WaitPolicy::Sleep (get() sleeps at once);
//   deferred-face  every thread issues a window of W INCRs, then gets them in order;
//   handoff-model  (only when named in --only) no Redis and no socket: the ceiling this
//                  machine puts on any blocking face (below).
// Threads start together after all are ready; a thread stops at the first check past the
// deadline and always awaits what it issued, so the completed count must equal the
// server's counter exactly (a failed command may or may not have run: the counter may then
// exceed it by at most the failures). ops/s = completed ÷ time until the last thread is done.
// Latency per INCR: reply − issue; for the deferred face the reply time is when get()
// returned for it, the window being read in issue order (replies arrive in that order), and
// only every eighth command of a window is timed (kDeferredSample).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "hiredis_client.hpp"
#include "measure.hpp"

namespace redmux_bench {

namespace {

// One per thread, each on cache lines of its own: a thread writes its count and its latency
// vector's end on every command, and neighbours sharing a line made each of those writes a
// miss (3 % of the machine's samples in a profile of the blocking face).
struct alignas(64) ThreadResult {
  long long completed = 0;
  long long errors = 0;
  std::string first_error;
  std::vector<std::int64_t> latencies;
};

struct RunResult {
  double seconds = 0;
  long long completed = 0;
  long long errors = 0;
  std::string first_error;
  LatencySummary latency;
  ProcessUsage usage_before, usage_after;
};

// Runs loop(t, deadline, result) on `threads` threads started together.
template <class Loop>
RunResult run_threads(int threads, double seconds, const std::string& what, Loop loop) {
  std::vector<ThreadResult> results(threads);
  std::latch ready(threads);
  std::latch go(1);
  Clock::time_point deadline;  // written before go opens; read only after
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ThreadResult& result = results[t];
      result.latencies.reserve(1 << 14);
      ready.count_down();
      go.wait();
      try {
        loop(t, deadline, result);
      } catch (const std::exception& e) {
        ++result.errors;
        if (result.first_error.empty()) result.first_error = e.what();
      }
    });
  }
  ready.wait();
  RunResult run;
  {
    Progress progress(what);
    run.usage_before = ProcessUsage::now();
    const auto start = Clock::now();
    deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    go.count_down();
    for (auto& th : pool) th.join();
    run.seconds = ms_between(start, Clock::now()) / 1000.0;
    run.usage_after = ProcessUsage::now();
  }
  std::vector<std::vector<std::int64_t>> latencies;
  latencies.reserve(threads);
  for (ThreadResult& r : results) {
    run.completed += r.completed;
    run.errors += r.errors;
    if (run.first_error.empty()) run.first_error = r.first_error;
    latencies.push_back(std::move(r.latencies));
  }
  run.latency = summarize(latencies);
  return run;
}

/// The counter thread `t` increments: the variant's key, or one of --keys of them.
std::string thread_key(const Bench& bench, const std::string& key, int t) {
  const int keys = std::max(1, bench.options().keys);
  return keys == 1 ? key : key + ":" + std::to_string(t % keys);
}

/// The sum of the variant's counters (all --keys of them).
long long counters(Bench& bench, const std::string& key, int threads) {
  const int keys = std::min(std::max(1, bench.options().keys), std::max(1, threads));
  long long sum = 0;
  for (int k = 0; k < keys; ++k) sum += bench.counter(thread_key(bench, key, k));
  return sum;
}

void delete_counters(Bench& bench, const std::string& key) {
  const int keys = std::max(1, bench.options().keys);
  for (int k = 0; k < keys; ++k) bench.del(thread_key(bench, key, k));
}

void record_error(ThreadResult& result, const std::exception& e) {
  ++result.errors;
  if (result.first_error.empty()) result.first_error = e.what();
}

Row to_row(Bench& bench, std::string variant, std::string client, int threads, const RunResult& run,
           const std::string& key) {
  Row row = Row::timed("callers", std::move(variant), std::move(client), threads, run);
  add_usage(row, run.usage_before, run.usage_after, run.completed);
  const long long counter = counters(bench, key, threads);
  row.ok = counter >= run.completed && counter <= run.completed + run.errors;
  row.check = "counter=" + std::to_string(counter);
  if (run.errors) {
    row.add("errors", run.errors);
    row.check += " errors=" + std::to_string(run.errors) + " (first: " + run.first_error + ")";
  }
  return row;
}

Row plain(Bench& bench, int threads, double seconds) {
  const std::string key = Bench::key("callers", "plain");
  delete_counters(bench, key);
  std::vector<std::unique_ptr<HiredisConnection>> connections;
  std::vector<std::string> keys;
  connections.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    keys.push_back(thread_key(bench, key, t));
    auto connection = std::make_unique<HiredisConnection>(bench.config());
    // Against a cluster each thread's connection goes to the node serving its counter.
    if (auto moved = connection->moved_for(keys.back())) {
      connection = std::make_unique<HiredisConnection>(bench.config(), *moved);
    }
    connections.push_back(std::move(connection));
  }
  const RunResult run =
      run_threads(threads, seconds, "callers: plain (hiredis, a connection per thread)",
                  [&](int t, Clock::time_point deadline, ThreadResult& result) {
                    HiredisConnection& c = *connections[t];
                    const std::string& mine = keys[t];
                    for (;;) {
                      const auto t0 = Clock::now();
                      if (t0 >= deadline) break;
                      c.incr(mine);
                      result.latencies.push_back(ns_between(t0, Clock::now()));
                      ++result.completed;
                    }
                  });
  Row row = to_row(bench, "plain", "hiredis", threads, run, key);
  row.add("connections", static_cast<long long>(threads));
  return row;
}

template <class Loop>
Row through_multiplexer(Bench& bench, const std::string& variant, int threads, double seconds,
                        const std::string& what, Loop loop) {
  const std::string key = Bench::key("callers", variant);
  delete_counters(bench, key);
  auto mux = bench.connect("redmux-bench-callers");
  redmux::Database db = mux->database();
  const auto before = mux->status();
  const redmux::LatencyHistogram histogram_before = delivered_histogram(*mux, "INCR");
  const RunResult run = run_threads(threads, seconds, what,
                                    [&](int t, Clock::time_point deadline, ThreadResult& result) {
                                      loop(db, thread_key(bench, key, t), deadline, result);
                                    });
  const auto after = mux->status();
  Row row = to_row(bench, variant, "redmux", threads, run, key);
  // The histograms record a command's delivery just after its future completes: the last
  // ones may land a moment after the threads joined.
  add_histogram_latency(row, histogram_before, delivered_histogram(*mux, "INCR"));
  row.add("connections", static_cast<long long>(after.connections));
  if (after.writes > before.writes) {
    row.add("cmds_per_write",
            static_cast<double>(after.commands - before.commands) / (after.writes - before.writes),
            1);
  }
  return row;
}

Row blocking_face(Bench& bench, const std::string& variant, int threads, double seconds,
                  redmux::WaitPolicy policy) {
  const bool sleep = policy == redmux::WaitPolicy::Sleep;
  struct Restore {
    redmux::WaitPolicy before = redmux::wait_policy();
    ~Restore() { redmux::set_wait_policy(before); }
  } restore;
  redmux::set_wait_policy(policy);
  return through_multiplexer(bench, variant, threads, seconds,
                             sleep ? "callers: blocking face (get() per INCR, WaitPolicy::Sleep)"
                                   : "callers: blocking face (get() per INCR)",
                             [](redmux::Database& db, const std::string& key,
                                Clock::time_point deadline, ThreadResult& result) {
                               for (;;) {
                                 const auto t0 = Clock::now();
                                 if (t0 >= deadline) break;
                                 try {
                                   db.incr(key).get();
                                   result.latencies.push_back(ns_between(t0, Clock::now()));
                                   ++result.completed;
                                 } catch (const redmux::RedmuxError& e) {
                                   record_error(result, e);
                                 }
                               }
                             });
}

// The deferred face times one command in kDeferredSample (the first of each run of them in a
// window): two clock reads per command cost about a tenth of what the client spends on it,
// and a uniform sample of every eighth command estimates the same percentiles.
constexpr int kDeferredSample = 8;

Row deferred_face(Bench& bench, int threads, double seconds, int window) {
  Row row =
      through_multiplexer(bench, "deferred-face", threads, seconds,
                          "callers: deferred face (windows of " + std::to_string(window) + ")",
                          [window](redmux::Database& db, const std::string& key,
                                   Clock::time_point deadline, ThreadResult& result) {
                            std::vector<redmux::Future<long long>> futures(window);
                            std::vector<Clock::time_point> issued(window);
                            while (Clock::now() < deadline) {
                              for (int i = 0; i < window; ++i) {
                                if (i % kDeferredSample == 0) issued[i] = Clock::now();
                                futures[i] = db.incr(key);
                              }
                              for (int i = 0; i < window; ++i) {
                                try {
                                  futures[i].get();
                                  if (i % kDeferredSample == 0) {
                                    result.latencies.push_back(ns_between(issued[i], Clock::now()));
                                  }
                                  ++result.completed;
                                } catch (const redmux::RedmuxError& e) {
                                  record_error(result, e);
                                }
                              }
                            }
                          });
  row.add("window", static_cast<long long>(window));
  return row;
}

// The hand-off model: each thread puts a request on a queue under a mutex and yields the CPU
// (sched_yield, as a blocked get() does under WaitPolicy::Adaptive) until one other thread,
// which takes the whole queue each time it runs and then yields too, has marked it done. No
// socket, no server, no parsing: what the operating system charges a blocking face for
// handing each command's caller off and back, on this machine at this thread count.
Row handoff_model(int threads, double seconds) {
  struct alignas(64) Request {
    std::atomic<bool> done{false};
  };
  std::vector<Request> requests(threads);
  std::mutex mutex;
  std::vector<Request*> queue;
  std::atomic<bool> stop{false};
  std::thread completer([&] {
    std::vector<Request*> taken;
    while (!stop.load(std::memory_order_relaxed)) {
      {
        std::lock_guard lock(mutex);
        taken.swap(queue);
      }
      for (Request* r : taken) r->done.store(true, std::memory_order_release);
      taken.clear();
      ::sched_yield();
    }
  });
  const RunResult run = run_threads(threads, seconds, "callers: hand-off model (no server)",
                                    [&](int t, Clock::time_point deadline, ThreadResult& result) {
                                      Request& mine = requests[t];
                                      for (;;) {
                                        const auto t0 = Clock::now();
                                        if (t0 >= deadline) break;
                                        mine.done.store(false, std::memory_order_relaxed);
                                        {
                                          std::lock_guard lock(mutex);
                                          queue.push_back(&mine);
                                        }
                                        while (!mine.done.load(std::memory_order_acquire))
                                          ::sched_yield();
                                        result.latencies.push_back(ns_between(t0, Clock::now()));
                                        ++result.completed;
                                      }
                                    });
  stop.store(true, std::memory_order_relaxed);
  completer.join();
  Row row = Row::timed("callers", "handoff-model", "model (no server)", threads, run);
  add_usage(row, run.usage_before, run.usage_after, run.completed);
  row.ok = run.completed > 0;
  row.check = "hand-offs=" + std::to_string(run.completed);
  return row;
}

struct ServerBest {
  const char* variant;
  int clients;
  int pipeline;
};
constexpr ServerBest kServerBest[] = {{"redis-benchmark-c1-P1000", 1, 1000},
                                      {"redis-benchmark-c50-P64", 50, 64}};

const Row* find(const Table& table, std::string_view variant) {
  for (const Row& r : table.rows) {
    if (r.variant == variant) return &r;
  }
  return nullptr;
}

}  // namespace

LoopRun run_callers_loop(int threads, double seconds, const std::string& what,
                         const std::function<void(int)>& op) {
  const RunResult run = run_threads(threads, seconds, what,
                                    [&](int t, Clock::time_point deadline, ThreadResult& result) {
                                      for (;;) {
                                        const auto t0 = Clock::now();
                                        if (t0 >= deadline) break;
                                        try {
                                          op(t);
                                          result.latencies.push_back(ns_between(t0, Clock::now()));
                                          ++result.completed;
                                        } catch (const std::exception& e) {
                                          record_error(result, e);
                                        }
                                      }
                                    });
  LoopRun out;
  out.seconds = run.seconds;
  out.completed = run.completed;
  out.errors = run.errors;
  out.first_error = run.first_error;
  out.latency = run.latency;
  return out;
}

std::vector<Row> callers_rows(Bench& bench, int threads, double seconds, int window,
                              long long redis_benchmark_requests, std::vector<std::string>& notes) {
  const bool baselines = !bench.options().no_baselines && bench.hiredis_usable();
  // Runs interleave variants (a, b, c, a, b, c …) so drift in machine load hits all alike.
  RowRuns runs;
  const int repeat = std::max(1, bench.options().repeat);
  const std::vector<std::string>& only = bench.options().only;
  auto named = [&](std::string_view variant) {
    return std::find(only.begin(), only.end(), variant) != only.end();
  };
  auto wanted = [&](std::string_view variant) { return only.empty() || named(variant); };
  for (int r = 0; r < repeat; ++r) {
    if (baselines && wanted("plain")) runs.add(plain(bench, threads, seconds));
    // blocking-face waits the way --wait-policy says; blocking-face-sleep always sleeps.
    const redmux::WaitPolicy chosen = redmux::wait_policy();
    if (wanted("blocking-face")) {
      runs.add(blocking_face(bench, "blocking-face", threads, seconds, chosen));
    }
    if (chosen != redmux::WaitPolicy::Sleep && wanted("blocking-face-sleep")) {
      runs.add(
          blocking_face(bench, "blocking-face-sleep", threads, seconds, redmux::WaitPolicy::Sleep));
    }
    if (wanted("deferred-face")) runs.add(deferred_face(bench, threads, seconds, window));
    if (named("handoff-model")) runs.add(handoff_model(threads, seconds));
    // The server's own best, in the same run: one connection with 1,000 in flight, and 50
    // connections with 64 each (redis-benchmark's two fastest shapes for INCR here).
    for (const ServerBest& shape : kServerBest) {
      if (!baselines || redis_benchmark_requests <= 0 || bench.is_cluster() ||
          !wanted(shape.variant)) {
        continue;
      }
      RedisBenchmark run;
      run.clients = shape.clients;
      run.pipeline = shape.pipeline;
      run.requests = redis_benchmark_requests;
      run.label = "callers";
      Row row;
      std::vector<std::string> skipped;
      if (redis_benchmark_row(bench, run, "callers", std::string(shape.variant), row, skipped)) {
        runs.add(std::move(row));
      } else if (r == 0) {
        notes.insert(notes.end(), skipped.begin(), skipped.end());
      }
    }
  }
  return runs.medians();
}

void run_callers(Bench& bench, int threads, double seconds, int window,
                 long long redis_benchmark_requests) {
  const bool baselines = !bench.options().no_baselines && bench.hiredis_usable();
  Table table;
  table.title = "callers: " + std::to_string(threads) + " threads × " + fixed(seconds, 1) +
                " s of INCR (the go-redis autopipeline table)";
  table.shows =
      "many threads on one multiplexer: the blocking face already batches their commands; "
      "issuing windows (deferred face) approaches a hand-pipelined client.";
  table.setup = bench.setup_line(
                    std::to_string(threads),
                    (bench.options().keys > 1 ? "INCR of " + std::to_string(bench.options().keys) +
                                                    " keys (thread t: key t mod " +
                                                    std::to_string(bench.options().keys) + ")"
                                              : std::string("INCR of one key")) +
                        " for " + fixed(seconds, 1) + " s, window " + std::to_string(window)) +
                " · " + load_text();
  table.rows = callers_rows(bench, threads, seconds, window, redis_benchmark_requests, table.notes);
  table.reference = baselines ? "plain" : "";
  const Row* p = find(table, "plain");
  const Row* b = find(table, "blocking-face");
  const Row* d = find(table, "deferred-face");
  const Row* best = nullptr;  // the faster of the server's two shapes
  for (const ServerBest& shape : kServerBest) {
    const Row* row = find(table, shape.variant);
    if (row && (!best || row->ops_per_sec > best->ops_per_sec)) best = row;
  }
  const std::string at = " (" + std::to_string(threads) + " threads)";
  if (p && b) {
    const double r = b->ops_per_sec / p->ops_per_sec;
    table.comparisons.push_back(
        {"callers", "blocking-face ops/s ÷ plain ops/s" + at, r, "≥ 8 at 500 threads", r >= 8});
  }
  if (const Row* m = find(table, "handoff-model"); m && b) {
    table.notes.push_back(
        "blocking-face ops/s ÷ handoff-model ops/s = " + fixed(b->ops_per_sec / m->ops_per_sec, 2) +
        " (the model: the same threads handing off through a queue to one "
        "thread, no socket and no server — what scheduling alone allows here)");
  }
  if (best && d) {
    const double r = d->ops_per_sec / best->ops_per_sec;
    table.comparisons.push_back(
        {"callers",
         "deferred-face ops/s ÷ the best redis-benchmark row (" + best->variant + ")" + at, r,
         "≥ 0.95", r >= 0.95});
  }
  table.notes.push_back(
      "latency: reply − issue per INCR (deferred face: get() return in issue order − issue); "
      "ops/s: completed ÷ time until the last thread finished its last window.");
  for (const Row& r : table.rows) delete_counters(bench, Bench::key("callers", r.variant));
  // Seed 004 (go-redis autopipeline, 500 goroutines, 3 s, loopback): normal blocking 57,438,
  // autopipeline blocking 632,742, ordered read later 2,436,067 ops/s.
  for (Row& r : table.rows) {
    if (r.variant == "plain") r.seed_ops = 57438;
    if (r.variant == "blocking-face") r.seed_ops = 632742;
    if (r.variant == "deferred-face") r.seed_ops = 2436067;
  }
  table.notes.push_back(
      "seed (ops/s): seed 004, go-redis autopipelining at 500 goroutines for 3 s — normal "
      "blocking client, AutoPipeline() blocking, AsyncAutoPipeline() read later; another "
      "machine, so compare the ratios (11.0x and 42.4x normal there).");
  bench.report().print(table);
}

}  // namespace redmux_bench
