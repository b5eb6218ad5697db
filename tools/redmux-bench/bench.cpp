#include "bench.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

namespace redmux_bench {

Bench::Bench(Options options)
    : options_(std::move(options)), report_(options_.json, options_.json_file) {
  config_ = redmux::Config::from_string(options_.url);
  if (options_.histograms) config_.latency_histograms = true;
  if (config_.name.empty()) config_.name = "redmux-bench";
  observer_ = redmux::Multiplexer::connect(config_named(config_.name + "-observer"));
  identity_ = observer_->server_identity();
}

redmux::Config Bench::config_named(std::string_view name) const {
  redmux::Config named = config_;
  named.name = std::string(name);
  return named;
}

std::shared_ptr<redmux::Multiplexer> Bench::connect(std::string_view name) const {
  return redmux::Multiplexer::connect(config_named(name));
}

redmux::Database Bench::admin() const {
  if (!admin_) {
    redmux::Config config = config_named(config_.name + "-admin");
    config.allow_admin = true;
    admin_ = redmux::Multiplexer::connect(config);
  }
  return admin_->database();
}

bool Bench::database_empty() const {
  return observer().dbsize().get() == 0;
}

CommandStat command_stat(const redmux::InfoSections& info, std::string_view command) {
  CommandStat stat;
  const auto line = info.get("commandstats", "cmdstat_" + std::string(command));
  if (!line) return stat;
  const std::string text(*line);
  auto number = [&](std::string_view name) -> std::string {
    const std::size_t at = text.find(std::string(name) + "=");
    if (at == std::string::npos) return "0";
    const std::size_t begin = at + name.size() + 1;
    return text.substr(begin, text.find(',', begin) - begin);
  };
  stat.calls = std::stoll(number("calls"));
  stat.usec_per_call = std::stod(number("usec_per_call"));
  return stat;
}

double mib(long long bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

long long Bench::info_integer(std::string_view section, std::string_view field) const {
  const redmux::InfoSections info = observer().info(section).get();
  return info.get_integer(section, field).value_or(-1);
}

long long Bench::counter(const std::string& key) const {
  const std::optional<std::string> text = observer().get(key).get();
  if (!text) return 0;
  long long value = 0;
  std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

void Bench::del(const std::string& key) const {
  (void)observer().del(key).get();
}

std::string Bench::key(std::string_view scenario, std::string_view variant) {
  return "redmux-bench:" + std::string(scenario) + ":" + std::string(variant);
}

std::string Bench::server_text() const {
  return identity_.product + " " + identity_.version;
}

std::string Bench::setup_line(std::string_view threads, std::string_view commands,
                              std::string_view values) const {
  std::string line = "setup: " + server_text() + " (" + identity_.mode + ", RESP" +
                     std::to_string(identity_.protocol) + ") at " +
                     config_.endpoints.front().to_string();
  line += " · threads " + std::string(threads);
  line += " · commands " + std::string(commands);
  line += " · values " + std::string(values);
  line += " · redmux " + std::string(redmux::kVersion);
  line += " (ioThreads=" + std::to_string(config_.io_threads) + ", waits " +
          (redmux::wait_policy() == redmux::WaitPolicy::Sleep ? "sleep" : "adaptive") + ")";
  line += " · " + std::to_string(std::thread::hardware_concurrency()) + " CPUs";
  return line;
}

ProcessUsage ProcessUsage::now() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  ProcessUsage u;
  u.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  u.switches = usage.ru_nvcsw + usage.ru_nivcsw;
  return u;
}

void add_usage(Row& row, const ProcessUsage& before, const ProcessUsage& after,
               long long commands) {
  if (commands <= 0) return;
  const auto n = static_cast<double>(commands);
  row.add("cpu_us_per_op", (after.cpu_seconds - before.cpu_seconds) * 1e6 / n, 2);
  row.add("switches_per_op", static_cast<double>(after.switches - before.switches) / n, 2);
}

redmux::LatencyHistogram delivered_histogram(const redmux::Multiplexer& mux,
                                             std::string_view command) {
  const redmux::Latencies latencies = mux.latencies();
  const redmux::LatencyStats* stats = latencies.command(command);
  return stats ? stats->to_delivery : redmux::LatencyHistogram();
}

void add_histogram_latency(Row& row, const redmux::LatencyHistogram& before,
                           const redmux::LatencyHistogram& after) {
  const redmux::LatencyHistogram run = after.since(before);  // the run's latencies
  if (run.count() == 0) return;
  row.add("hist_n", static_cast<long long>(run.count()));
  row.add("hist_p50_us", static_cast<double>(run.percentile(0.5).count()) / 1e3, 1);
  row.add("hist_p99_us", static_cast<double>(run.percentile(0.99).count()) / 1e3, 1);
}

Progress::Progress(std::string what)
    : what_(std::move(what)), start_(Clock::now()), tty_(isatty(STDERR_FILENO) == 1) {
  std::fprintf(stderr, "» %s …%s", what_.c_str(), tty_ ? "" : "\n");
  std::fflush(stderr);
  if (tty_) {
    ticker_ = std::thread([this] {
      int shown = 0;
      while (!done_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const int seconds = static_cast<int>(ms_between(start_, Clock::now()) / 1000);
        if (seconds > shown && !done_.load()) {
          shown = seconds;
          std::fprintf(stderr, "\r» %s … %d s", what_.c_str(), seconds);
          std::fflush(stderr);
        }
      }
    });
  }
}

Progress::~Progress() {
  done_ = true;
  if (ticker_.joinable()) ticker_.join();
  const double seconds = ms_between(start_, Clock::now()) / 1000;
  if (tty_) {
    std::fprintf(stderr, "\r» %s … done in %.1f s\n", what_.c_str(), seconds);
  } else {
    std::fprintf(stderr, "» %s: done in %.1f s\n", what_.c_str(), seconds);
  }
  std::fflush(stderr);
}

}  // namespace redmux_bench
