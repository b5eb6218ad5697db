// baseline: redis-benchmark -t incr -c 1 -P 64 -n N against the same server, run as a
// subprocess (no shell) when it is on PATH, its CSV output parsed into a row. It INCRs the
// key "counter:__rand_int__"; the key is deleted afterwards unless it existed before.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"

extern char** environ;

namespace redmux_bench {

namespace {

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Runs argv, returns its stdout (stderr goes to /dev/null) and exit status.
bool capture(const std::vector<std::string>& args, std::string& out, int& status) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    return false;
  }
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(pipefd[0]);
  waitpid(pid, &status, 0);
  return true;
}

// The CSV fields of the line that starts with "<TEST>" ("INCR", "SET").
std::vector<std::string> test_fields(const std::string& csv, const std::string& test) {
  std::stringstream lines(csv);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("\"" + test + "\"", 0) != 0) continue;
    std::vector<std::string> fields;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) {
      if (cell.size() >= 2 && cell.front() == '"') cell = cell.substr(1, cell.size() - 2);
      fields.push_back(cell);
    }
    return fields;
  }
  return {};
}

}  // namespace

bool redis_benchmark_run(Bench& bench, const RedisBenchmark& run, Row& row,
                         std::vector<std::string>& notes) {
  const std::string program = find_on_path("redis-benchmark");
  if (program.empty()) {
    notes.push_back("redis-benchmark is not on PATH: its row is left out.");
    return false;
  }
  const redmux::Config& config = bench.config();
  if (config.ssl) {
    notes.push_back("redis-benchmark row skipped: TLS endpoint.");
    return false;
  }
  const redmux::Endpoint& ep = config.endpoints.front();
  std::vector<std::string> args = {program};
  if (ep.is_unix()) {
    args.insert(args.end(), {"-s", ep.unix_path});
  } else {
    args.insert(args.end(), {"-h", ep.host, "-p", std::to_string(ep.port)});
  }
  if (!config.user.empty()) args.insert(args.end(), {"--user", config.user});
  if (!config.password.empty()) args.insert(args.end(), {"-a", config.password});
  if (config.default_database) {
    args.insert(args.end(), {"--dbnum", std::to_string(config.default_database)});
  }
  args.insert(args.end(), {"-t", run.test, "-c", std::to_string(run.clients), "-P",
                           std::to_string(run.pipeline), "-n", std::to_string(run.requests), "-d",
                           std::to_string(run.data_size), "--csv"});
  // The keys redis-benchmark writes without -r: deleted afterwards unless they existed.
  const std::vector<std::string> keys = {"counter:__rand_int__", "key:__rand_int__"};
  std::vector<bool> existed;
  for (const std::string& key : keys) existed.push_back(bench.observer().exists(key).get());
  std::string out;
  int status = 0;
  bool ran = false;
  std::string test_upper = run.test;
  for (char& c : test_upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string what = "redis-benchmark -t " + run.test + " -c " + std::to_string(run.clients) +
                           " -P " + std::to_string(run.pipeline) + " -n " +
                           std::to_string(run.requests) +
                           (run.data_size != 3 ? " -d " + std::to_string(run.data_size) : "");
  {
    Progress progress(run.label.empty() ? what : run.label + ": " + what);
    ran = capture(args, out, status);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!existed[i]) bench.del(keys[i]);
  }
  const std::vector<std::string> f = test_fields(out, test_upper);
  if (!ran || f.size() < 7) {
    notes.push_back("redis-benchmark failed (exit status " + std::to_string(status) +
                    "): its row is left out.");
    return false;
  }
  row.client = "redis-benchmark";
  row.baseline = true;
  row.threads = run.clients;
  row.commands = run.requests;
  row.ops_per_sec = std::strtod(f[1].c_str(), nullptr);
  row.ms = run.requests / row.ops_per_sec * 1000.0;
  row.p50_us = std::strtod(f[4].c_str(), nullptr) * 1000.0;
  row.p99_us = std::strtod(f[6].c_str(), nullptr) * 1000.0;
  row.check = "as reported by " + what;
  return true;
}

bool redis_benchmark_row(Bench& bench, const RedisBenchmark& run, std::string scenario,
                         std::string variant, Row& row, std::vector<std::string>& notes) {
  if (!redis_benchmark_run(bench, run, row, notes)) return false;
  row.scenario = std::move(scenario);
  row.variant = std::move(variant);
  row.add("connections", static_cast<long long>(run.clients));
  row.add("window", static_cast<long long>(run.pipeline));
  return true;
}

void run_baseline(Bench& bench, long long requests) {
  Table table;
  table.title = "baseline: redis-benchmark -t incr -c 1 -P 64 -n " + with_commas(requests);
  table.shows =
      "the server's own benchmark on one connection with 64 commands in flight: the pipelined "
      "rate the deferred face is compared with.";
  table.setup = bench.setup_line("1 (redis-benchmark)", with_commas(requests) + " × INCR");
  RedisBenchmark run;
  run.requests = requests;
  run.pipeline = 64;
  run.label = "baseline";
  Row row;
  if (redis_benchmark_row(bench, run, "baseline", "redis-benchmark-P64", row, table.notes)) {
    table.rows.push_back(std::move(row));
  }
  table.notes.push_back(
      "latencies are redis-benchmark's own (per request, from its histogram, in µs).");
  bench.report().print(table);
}

}  // namespace redmux_bench
