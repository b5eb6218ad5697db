// open-loop: tail latency at fixed arrival rates. Each client's capacity is measured first
// (500 callers, closed loop, each awaiting each command; redmux's once, for both faces, so
// that they run at the same rates); then 500 callers send at 25, 50 and 80 % of it
// (--percents), INCR and GET (of a 64-byte value), for --seconds per row. Caller c's k-th command
// has an intended send time, start + (c + k × callers) ÷ rate: the commands of all callers together
// arrive evenly at the rate. A command's latency is its reply time − its intended send time, so a
// caller that falls behind (its previous reply was late, or the machine did not run it in time)
// counts the wait against the command (no coordinated omission).
//   blocking-face   db.incr(key).get() at each intended time (one command per caller at a
//                   time; a late reply delays the caller's next send, and that is measured);
//   deferred-face   the caller issues every command whose intended time has come without
//                   waiting for replies; each completion is stamped by a then() callback;
//   plain           hiredis, a connection per caller, like blocking-face (baseline);
//   ioredis         node's ioredis with enableAutoPipelining, 500 async callers in one
//                   process, when $REDMUX_BENCH_IOREDIS (or --ioredis) names a node_modules
//                   folder that has it (baseline; skipped with the reason otherwise).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <memory>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "hiredis_client.hpp"
#include "measure.hpp"

namespace redmux_bench {
namespace {

struct Tail {
  double p50 = -1, p99 = -1, p999 = -1, max = -1;  // µs
  long long samples = 0;
};

Tail tail_of(std::vector<std::int64_t>& ns) {
  Tail t;
  t.samples = static_cast<long long>(ns.size());
  if (ns.empty()) return t;
  std::sort(ns.begin(), ns.end());
  auto rank = [&](double p) {
    auto r = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(ns.size())));
    return static_cast<double>(ns[std::clamp<std::size_t>(r, 1, ns.size()) - 1]) / 1000.0;
  };
  t.p50 = rank(50);
  t.p99 = rank(99);
  t.p999 = rank(99.9);
  t.max = static_cast<double>(ns.back()) / 1000.0;
  return t;
}

struct OpenRun {
  double seconds = 0;
  long long completed = 0;
  long long errors = 0;
  long long late_sends = 0;  ///< commands sent more than 1 ms after their intended time
  long long refused = 0;     ///< errors that were queue_full (the client was overloaded)
  std::string first_error;
  Tail tail;
  ProcessUsage before, after;
};

/// `callers` threads; caller c runs body(c, first_intended, interval, deadline, latencies,
/// counters).
struct CallerCounters {
  long long completed = 0, errors = 0, late = 0;
  long long refused = 0;  ///< of the errors, refused at once: maxQueuedCommands was reached
  std::string first_error;
};

template <class Body>
OpenRun run_open(int callers, double rate, double seconds, const std::string& what, Body body) {
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(callers) / rate));
  std::vector<std::vector<std::int64_t>> latencies(callers);
  std::vector<CallerCounters> counters(callers);
  std::latch ready(callers);
  std::latch go(1);
  Clock::time_point start, deadline;
  std::vector<std::thread> pool;
  pool.reserve(callers);
  for (int c = 0; c < callers; ++c) {
    pool.emplace_back([&, c] {
      latencies[c].reserve(static_cast<std::size_t>(rate * seconds / callers * 1.2) + 16);
      ready.count_down();
      go.wait();
      const auto first = start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(c / rate));
      try {
        body(c, first, interval, deadline, latencies[c], counters[c]);
      } catch (const std::exception& e) {
        ++counters[c].errors;
        if (counters[c].first_error.empty()) counters[c].first_error = e.what();
      }
    });
  }
  ready.wait();
  OpenRun run;
  {
    Progress progress(what);
    run.before = ProcessUsage::now();
    start = Clock::now() + std::chrono::milliseconds(20);
    deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    go.count_down();
    for (auto& t : pool) t.join();
    run.seconds = ms_between(start, Clock::now()) / 1000.0;
    run.after = ProcessUsage::now();
  }
  std::vector<std::int64_t> all;
  for (int c = 0; c < callers; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    run.completed += counters[c].completed;
    run.errors += counters[c].errors;
    run.late_sends += counters[c].late;
    run.refused += counters[c].refused;
    if (run.first_error.empty()) run.first_error = counters[c].first_error;
  }
  run.tail = tail_of(all);
  return run;
}

/// One command sent and awaited at each intended time (blocking face, hiredis).
template <class Op>
void blocking_caller(Clock::time_point next, Clock::duration interval, Clock::time_point deadline,
                     std::vector<std::int64_t>& latencies, CallerCounters& counters, Op op) {
  for (; next < deadline; next += interval) {
    const auto now = Clock::now();
    if (now < next) {
      std::this_thread::sleep_until(next);
    } else if (now - next > std::chrono::milliseconds(1)) {
      ++counters.late;
    }
    try {
      op();
      latencies.push_back(ns_between(next, Clock::now()));
      ++counters.completed;
    } catch (const std::exception& e) {
      ++counters.errors;
      if (counters.first_error.empty()) counters.first_error = e.what();
    }
  }
}

enum class Command { Incr, Get };

const char* command_name(Command c) {
  return c == Command::Incr ? "INCR" : "GET";
}

struct Client {
  std::string variant;
  std::string client;
};

std::string key_for(Command command) {
  return Bench::key("open-loop", command == Command::Incr ? "counter" : "value");
}

/// The deferred face: issue every due command, stamp completions in then() callbacks.
void deferred_caller(redmux::Database& db, Command command, Clock::time_point next,
                     Clock::duration interval, Clock::time_point deadline,
                     std::vector<std::int64_t>& latencies, CallerCounters& counters) {
  const std::string key = key_for(command);
  const auto total = static_cast<std::size_t>((deadline - next) / interval) + 1;
  latencies.assign(total, -1);
  std::atomic<std::size_t> done{0};
  std::atomic<long long> errors{0};
  std::atomic<long long> refused{0};
  std::atomic<bool> error_taken{false};
  std::string first_error;  // written once, by the callback that took error_taken
  std::size_t issued = 0;
  redmux::Future<void> last;
  for (; next < deadline && issued < total; next += interval, ++issued) {
    const auto now = Clock::now();
    if (now < next) {
      std::this_thread::sleep_until(next);
    } else if (now - next > std::chrono::milliseconds(1)) {
      ++counters.late;
    }
    std::int64_t* slot = &latencies[issued];
    auto stamp = [slot, next, &done, &errors, &refused, &error_taken, &first_error](const auto& r) {
      *slot = ns_between(next, Clock::now());
      if (!r) {
        errors.fetch_add(1, std::memory_order_relaxed);
        if (r.error().code() == redmux::errc::queue_full) {
          refused.fetch_add(1, std::memory_order_relaxed);
        }
        if (!error_taken.exchange(true)) first_error = r.error().message();
      }
      done.fetch_add(1, std::memory_order_release);
    };
    if (command == Command::Incr) {
      last = db.incr(key).then([stamp](redmux::Result<long long> r) { stamp(r); });
    } else {
      last = db.get(key).then([stamp](redmux::Result<std::optional<std::string>> r) { stamp(r); });
    }
  }
  // Replies come in order and their callbacks run in order on the I/O thread, so the last
  // one's continuation completes after every other's; sleep in its wait rather than poll (500
  // callers polling every few microseconds would take the CPUs from the I/O thread).
  if (last.valid()) last.wait();
  while (done.load(std::memory_order_acquire) < issued) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a resent command, if any
  }
  latencies.resize(issued);
  counters.completed = static_cast<long long>(issued) - errors.load();
  counters.errors += errors.load();
  counters.refused += refused.load();
  if (counters.first_error.empty()) counters.first_error = first_error;
}

/// Closed-loop capacity (commands per second) of a client at `callers` callers, 1 s.
double capacity(Bench& bench, const std::string& variant, Command command, int callers,
                redmux::Database& db, std::vector<std::unique_ptr<HiredisConnection>>& plain) {
  const std::string key = key_for(command);
  const std::string what = "open-loop: capacity of " + variant + " (" + command_name(command) + ")";
  LoopRun run;
  if (variant == "plain") {
    run = run_callers_loop(callers, 1.0, what, [&](int t) {
      command == Command::Incr ? (void)plain[t]->incr(key) : (void)plain[t]->get_length(key);
    });
  } else {
    // redmux, for both faces: each caller awaits each command, as for ioredis. The deferred
    // face's rows send without awaiting, but every send is a caller woken for it: rates from
    // its windowed capacity (2-3 M/s) asked 500 sleeping threads for more wake-ups a second
    // than two cores give, and measured the generator rather than the client.
    run = run_callers_loop(callers, 1.0, what, [&](int) {
      command == Command::Incr ? (void)db.incr(key).get() : (void)db.get(key).get();
    });
  }
  (void)bench;
  return static_cast<double>(run.completed) / run.seconds;
}

std::string ioredis_folder(const std::string& given) {
  std::string folder = given;
  if (folder.empty()) {
    const char* env = std::getenv("REDMUX_BENCH_IOREDIS");
    folder = env && *env ? env : "";
  }
  return folder;
}

/// Why ioredis cannot run, or empty.
std::string ioredis_missing(const std::string& folder) {
  if (folder.empty()) {
    return "ioredis rows skipped: set REDMUX_BENCH_IOREDIS (or --ioredis) to a node_modules "
           "folder with ioredis (npm install ioredis, outside the repository)";
  }
  struct stat st {};
  if (stat((folder + "/ioredis/package.json").c_str(), &st) != 0) {
    return "ioredis rows skipped: no ioredis/package.json under " + folder;
  }
  if (system("node --version > /dev/null 2>&1") != 0) return "ioredis rows skipped: no node";
  return {};
}

// The node program: `callers` async callers on one ioredis client with enableAutoPipelining,
// each sending at its intended times (a timer to the next one, then every due command
// without awaiting), latencies from the intended time; rate 0 is a closed loop (each caller
// awaits each command: the capacity). Prints "completed errors seconds p50 p99 p999 max" (µs).
constexpr const char* kIoredisScript = R"JS(
const [host, port, rate, seconds, callers, command, key] = process.argv.slice(2);
const Redis = require('ioredis');
const redis = new Redis({host, port: Number(port), enableAutoPipelining: true});
const R = Number(rate), S = Number(seconds), C = Number(callers);
const lat = []; let errors = 0;
const now = () => Number(process.hrtime.bigint()) / 1e3;
const send = () => command === 'INCR' ? redis.incr(key) : redis.get(key);
const sleep_until = t => new Promise(r => setTimeout(r, Math.max(0, (t - now()) / 1e3)));
async function caller(c, start, end) {
  if (R === 0) {  // closed loop: capacity
    while (now() < end) {
      const t0 = now();
      try { await send(); lat.push(now() - t0); } catch (e) { errors++; }
    }
    return;
  }
  const interval = C * 1e6 / R, inflight = [];
  for (let next = start + c * 1e6 / R; next < end;) {
    await sleep_until(next);
    const t = now();
    while (next <= t && next < end) {
      const intended = next;
      inflight.push(send().then(() => lat.push(now() - intended), () => errors++));
      next += interval;
    }
  }
  await Promise.all(inflight);
}
redis.on('ready', async () => {
  const start = now() + 20000, end = start + S * 1e6;
  const all = [];
  for (let c = 0; c < C; ++c) all.push(caller(c, start, end));
  await Promise.all(all);
  const seconds = (now() - start) / 1e6;
  lat.sort((a, b) => a - b);
  const r = p => lat.length ? lat[Math.min(lat.length, Math.max(1, Math.ceil(p / 100 * lat.length))) - 1] : -1;
  console.log(lat.length, errors, seconds.toFixed(3), r(50).toFixed(1), r(99).toFixed(1),
              r(99.9).toFixed(1), (lat.length ? lat[lat.length - 1] : -1).toFixed(1));
  redis.disconnect();
});
redis.on('error', e => { console.error(String(e)); });
)JS";

bool run_ioredis(Bench& bench, const std::string& folder, double rate, double seconds, int callers,
                 Command command, OpenRun& out, std::string& why) {
  const std::string script = "/tmp/redmux-bench-ioredis-" + std::to_string(getpid()) + ".js";
  {
    std::ofstream f(script);
    f << kIoredisScript;
  }
  const redmux::Endpoint& ep = bench.config().endpoints.front();
  std::ostringstream cmd;
  cmd << "NODE_PATH='" << folder << "' node " << script << " " << ep.host << " " << ep.port << " "
      << static_cast<long long>(rate) << " " << seconds << " " << callers << " "
      << command_name(command) << " '" << key_for(command) << "' 2>/dev/null";
  out.before = ProcessUsage::now();
  FILE* p = popen(cmd.str().c_str(), "r");
  char line[512] = {0};
  const bool got = p && fgets(line, sizeof line, p);
  if (p) pclose(p);
  unlink(script.c_str());
  out.after = ProcessUsage::now();
  std::istringstream in(got ? line : "");
  if (!(in >> out.completed >> out.errors >> out.seconds >> out.tail.p50 >> out.tail.p99 >>
        out.tail.p999 >> out.tail.max)) {
    why = "ioredis rows skipped: the node program printed no result";
    return false;
  }
  out.tail.samples = out.completed;
  return true;
}

}  // namespace

void run_open_loop(Bench& bench, int callers, double seconds,
                   const std::vector<long long>& percents, const std::string& ioredis) {
  const bool baselines = !bench.options().no_baselines && bench.hiredis_usable();
  std::string listed;
  for (long long p : percents) listed += (listed.empty() ? "" : "/") + std::to_string(p);
  Table table;
  table.title = "open-loop: " + std::to_string(callers) + " callers at " + listed +
                " % of each client's capacity, INCR and GET";
  table.shows =
      "commands sent at fixed times whatever the replies do; latency from each command's "
      "intended send time, so waiting behind a slow reply counts (no coordinated omission).";
  table.setup = bench.setup_line(std::to_string(callers),
                                 "INCR of one key and GET of one key, " + fixed(seconds, 1) +
                                     " s per rate; capacity: closed loop, 1 s",
                                 "integer counter (INCR), 64-byte value (GET)") +
                " · " + load_text();
  auto mux = bench.connect("redmux-bench-open-loop");
  redmux::Database db = mux->database();
  (void)db.set(key_for(Command::Get), std::string(64, 'v')).get();
  bench.del(key_for(Command::Incr));
  std::vector<std::unique_ptr<HiredisConnection>> plain;
  if (baselines) {
    for (int c = 0; c < callers; ++c)
      plain.push_back(std::make_unique<HiredisConnection>(bench.config()));
  }
  const std::string folder = ioredis_folder(ioredis);
  std::string skip_ioredis =
      baselines ? ioredis_missing(folder) : "ioredis rows skipped (--no-baselines)";

  std::vector<Client> clients = {{"blocking-face", "redmux"}, {"deferred-face", "redmux"}};
  if (baselines) clients.push_back({"plain", "hiredis"});
  if (skip_ioredis.empty()) clients.push_back({"ioredis-auto", "ioredis"});
  for (const Command command : {Command::Incr, Command::Get}) {
    double redmux_cap = 0;  // measured once: both faces run at the same rates
    for (const Client& client : clients) {
      // ioredis's capacity: its closed loop (rate 0), completed ÷ time.
      double cap = 0;
      if (client.client == "redmux") {
        if (redmux_cap <= 0) redmux_cap = capacity(bench, "redmux", command, callers, db, plain);
        cap = redmux_cap;
      } else if (client.variant == "ioredis-auto") {
        OpenRun probe;
        if (run_ioredis(bench, folder, 0, 1.0, callers, command, probe, skip_ioredis)) {
          cap = static_cast<double>(probe.completed) / probe.seconds;
        }
      } else {
        cap = capacity(bench, client.variant, command, callers, db, plain);
      }
      if (cap <= 0) continue;
      for (const long long percent : percents) {
        const double rate = cap * static_cast<double>(percent) / 100.0;
        const std::string what = "open-loop: " + client.variant + " " + command_name(command) +
                                 " at " + std::to_string(percent) + " %";
        OpenRun run;
        if (client.variant == "ioredis-auto") {
          Progress progress(what);
          if (!run_ioredis(bench, folder, rate, seconds, callers, command, run, skip_ioredis))
            break;
        } else {
          const std::string key = key_for(command);
          run = run_open(
              callers, rate, seconds, what,
              [&](int c, Clock::time_point first, Clock::duration interval,
                  Clock::time_point deadline, std::vector<std::int64_t>& lat,
                  CallerCounters& counters) {
                if (client.variant == "deferred-face") {
                  deferred_caller(db, command, first, interval, deadline, lat, counters);
                } else if (client.variant == "blocking-face") {
                  blocking_caller(first, interval, deadline, lat, counters, [&] {
                    command == Command::Incr ? (void)db.incr(key).get() : (void)db.get(key).get();
                  });
                } else {
                  HiredisConnection& h = *plain[c];
                  blocking_caller(first, interval, deadline, lat, counters, [&] {
                    command == Command::Incr ? (void)h.incr(key) : (void)h.get_length(key);
                  });
                }
              });
        }
        Row row;
        row.scenario = "open-loop";
        row.variant = client.variant + "-" + (command == Command::Incr ? "incr" : "get") + "-" +
                      std::to_string(percent);
        row.client = client.client;
        row.baseline = client.client != "redmux";
        row.threads = callers;
        row.commands = run.completed;
        row.ops_per_sec = static_cast<double>(run.completed) / run.seconds;
        row.p50_us = run.tail.p50;
        row.p99_us = run.tail.p99;
        row.add("percent", percent);
        row.add("capacity", cap, 0);
        row.add("rate", rate, 0);
        row.add("p999_us", run.tail.p999, 1);
        row.add("max_us", run.tail.max, 1);
        if (client.client != "ioredis") {
          row.add("late_sends", run.late_sends);
          add_usage(row, run.before, run.after, run.completed);
        }
        // The check is that no command failed but by being refused at once (maxQueuedCommands:
        // the rate was more than this client could take, which "achieved", "refused" and the
        // latencies show).
        row.ok = run.errors == run.refused;
        if (run.refused) row.add("refused", run.refused);
        row.check = "achieved " + fixed(row.ops_per_sec / rate * 100.0, 1) + " % of the rate";
        if (run.errors)
          row.check += ", errors " + std::to_string(run.errors) + ": " + run.first_error;
        table.rows.push_back(std::move(row));
      }
    }
  }
  if (!skip_ioredis.empty()) table.notes.push_back(skip_ioredis);
  table.notes.push_back(
      "capacity: closed-loop commands/s of that client at the same callers for 1 s, each "
      "caller awaiting each command (redmux: measured once, both faces run at its rates; "
      "ioredis: async callers); rate: "
      "the fixed arrival rate; late_sends: commands sent more than 1 ms after "
      "their intended time (the caller was behind). p50 … max_us from the intended send time; "
      "achieved: completed ÷ (rate × time until the last reply).");
  bench.del(key_for(Command::Incr));
  bench.del(key_for(Command::Get));
  bench.report().print(table);
}

}  // namespace redmux_bench
