#include "observe/observer.hpp"
#include "observe/unanswered.hpp"

#include <algorithm>
#include <map>

#include "core/enum_names.hpp"

namespace redmux {

std::string_view to_string(CommandOutcome outcome) noexcept {
  static constexpr std::string_view kNames[] = {"value", "server error", "timeout",
                                                "connection error"};
  return detail::name_of(outcome, kNames);
}

std::string_view to_string(BatchKind kind) noexcept {
  static constexpr std::string_view kNames[] = {"batch", "transaction"};
  return detail::name_of(kind, kNames);
}

std::string_view to_string(LogLevel level) noexcept {
  static constexpr std::string_view kNames[] = {"debug", "info", "warning", "error", "off"};
  return detail::name_of(level, kNames);
}

namespace detail {

Unanswered unanswered(const Error& error) noexcept {
  switch (error.code()) {
    case errc::timeout:
      return {CommandOutcome::Timeout, "timeout"};
    case errc::queue_full:
      return {CommandOutcome::ConnectionError, "queue_full"};
    case errc::not_sent:
    case errc::outcome_unknown:
    case errc::connection_failed:
    case errc::authentication_failed:
    case errc::disconnected:
    case errc::shut_down:
      return {CommandOutcome::ConnectionError, "connection_error"};
    default:  // refused before it was sent (CROSSSLOT, a database the server lacks …)
      return {CommandOutcome::ConnectionError, "refused"};
  }
}

namespace {

/// A hook that runs longer than this counts as slow (status(): slow_hooks).
constexpr std::chrono::milliseconds kSlowHook{1};

std::size_t slot_of(const char* name) noexcept {
  // Names are the command table's: one address per name, so the address is the key.
  const auto address = reinterpret_cast<std::uintptr_t>(name);
  return static_cast<std::size_t>((address >> 3) * 0x9E3779B97F4A7C15ULL >> 55);  // 9 bits
}

std::string micros(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(d).count()) + " µs";
}

}  // namespace

// slowCommandThreshold set: every command's phases are measured from the start, so that
// status().slow_commands counts with or without a log hook to tell.
Observer::Observer(const Config& config)
    : histograms_(config.latency_histograms),
      slow_threshold_(config.slow_command_threshold),
      events_wanted_(config.slow_command_threshold.count() > 0) {}

Observer::~Observer() {
  for (std::atomic<LatencyPair*>& slot : names_) delete slot.load(std::memory_order_relaxed);
  delete other_names_.load(std::memory_order_relaxed);
}

LatencyPair* Observer::command_latency(std::string_view name) noexcept {
  if (!histograms_) return nullptr;
  static_assert(kNames == 512, "slot_of() yields 9 bits");
  std::size_t slot = slot_of(name.data());
  for (std::size_t probe = 0; probe < kNames; ++probe, slot = (slot + 1) % kNames) {
    LatencyPair* entry = names_[slot].load(std::memory_order_acquire);
    if (entry == nullptr) {
      // First time this name is seen (not per command): allocate, then claim the slot.
      LatencyPair* fresh = nullptr;
      try {
        fresh = new LatencyPair(name);
      } catch (...) {
        return nullptr;
      }
      if (names_[slot].compare_exchange_strong(entry, fresh, std::memory_order_acq_rel)) {
        return fresh;
      }
      delete fresh;  // another I/O thread claimed it first: `entry` is what it put there
    }
    if (entry->name.data() == name.data() || entry->name == name) return entry;
  }
  LatencyPair* other = other_names_.load(std::memory_order_acquire);
  if (other) return other;
  try {
    LatencyPair* fresh = new LatencyPair("(other)");
    if (other_names_.compare_exchange_strong(other, fresh, std::memory_order_acq_rel)) return fresh;
    delete fresh;
    return other;
  } catch (...) {
    return nullptr;
  }
}

LatencyPair* Observer::endpoint_latency(std::string_view endpoint) {
  if (!histograms_) return nullptr;
  std::lock_guard lock(endpoints_mutex_);
  for (const std::unique_ptr<LatencyPair>& entry : endpoints_) {
    if (entry->name == endpoint) return entry.get();
  }
  endpoints_.push_back(std::make_unique<LatencyPair>(endpoint));
  return endpoints_.back().get();
}

Latencies Observer::latencies() const {
  Latencies out;
  if (!histograms_) return out;
  // Several entries may carry one name (a command the table knows under two spellings):
  // merged by name.
  std::map<std::string, LatencyStats, std::less<>> by_name;
  auto add = [](std::map<std::string, LatencyStats, std::less<>>& into, const LatencyPair& pair) {
    LatencyStats& stats = into[pair.name];
    stats.name = pair.name;
    pair.to_reply.copy_to(stats.to_reply);
    pair.to_delivery.copy_to(stats.to_delivery);
  };
  for (const std::atomic<LatencyPair*>& slot : names_) {
    if (const LatencyPair* pair = slot.load(std::memory_order_acquire)) add(by_name, *pair);
  }
  if (const LatencyPair* other = other_names_.load(std::memory_order_acquire)) add(by_name, *other);
  for (auto& [name, stats] : by_name) {
    if (stats.to_reply.count() > 0 || stats.to_delivery.count() > 0) {
      out.by_command.push_back(std::move(stats));
    }
  }
  std::map<std::string, LatencyStats, std::less<>> by_endpoint;
  {
    std::lock_guard lock(endpoints_mutex_);
    for (const std::unique_ptr<LatencyPair>& pair : endpoints_) add(by_endpoint, *pair);
  }
  for (auto& [name, stats] : by_endpoint) out.by_endpoint.push_back(std::move(stats));
  return out;
}

void Observer::publish(std::unique_ptr<Hooks> hooks) {
  events_wanted_.store(static_cast<bool>(hooks->command) || slow_threshold_.count() > 0,
                       std::memory_order_release);
  writes_wanted_.store(static_cast<bool>(hooks->write), std::memory_order_release);
  batches_wanted_.store(static_cast<bool>(hooks->batch), std::memory_order_release);
  log_level_.store(hooks->log ? hooks->log_level : LogLevel::Off, std::memory_order_release);
  hooks_.store(hooks.get(), std::memory_order_release);
  all_hooks_.push_back(std::move(hooks));
}

template <typename Edit>
void Observer::update_hooks(Edit&& edit) {
  std::lock_guard lock(hooks_mutex_);
  const Hooks* current = hooks_.load(std::memory_order_acquire);
  auto next = std::make_unique<Hooks>(current ? *current : Hooks{});
  edit(*next);
  publish(std::move(next));
}

void Observer::set_command_hook(CommandHook hook) {
  update_hooks([&](Hooks& hooks) { hooks.command = std::move(hook); });
}

void Observer::set_write_hook(WriteHook hook) {
  update_hooks([&](Hooks& hooks) { hooks.write = std::move(hook); });
}

void Observer::set_batch_hook(BatchHook hook) {
  update_hooks([&](Hooks& hooks) { hooks.batch = std::move(hook); });
}

void Observer::set_log_hook(LogLevel level, LogHook hook) {
  update_hooks([&](Hooks& hooks) {
    hooks.log = std::move(hook);
    hooks.log_level = level;
  });
}

template <typename Call>
void Observer::run_hook(Call&& call, std::string_view what) noexcept {
  const Clock::time_point start = now();
  try {
    call();
  } catch (const std::exception& e) {  // a throwing hook must not take down an I/O thread
    hook_threw(what, e.what());
  } catch (...) {
    hook_threw(what, "an exception not derived from std::exception");
  }
  if (now() - start > kSlowHook) slow_hooks_.fetch_add(1, std::memory_order_relaxed);
}

void Observer::hook_threw(std::string_view what, std::string_view exception) noexcept {
  hook_errors_.fetch_add(1, std::memory_order_relaxed);
  if (what == "log" || !logs(LogLevel::Error)) return;  // a throwing log hook is not logged
  try {
    log(LogLevel::Error, {},
        "the " + std::string(what) + " hook threw: " + std::string(exception) +
            " (counted in hook_errors; the hook stays installed)");
  } catch (...) {  // out of memory building the message: the count above still shows it
  }
}

void Observer::command_done(const CommandEvent& event) noexcept {
  const Hooks* hooks = hooks_.load(std::memory_order_acquire);
  if (hooks && hooks->command) run_hook([&] { hooks->command(event); }, "command");
  // Slow: answered (or answered from the cache) late. A timeout or a broken connection is
  // logged as such, not again as slow; a blocking command waited as long as it asked to.
  const bool answered =
      (event.outcome == CommandOutcome::Value || event.outcome == CommandOutcome::ServerError) &&
      !event.blocking;
  if (slow_threshold_.count() > 0 && answered && event.phases.delivered != Clock::time_point{} &&
      event.phases.delivered - event.phases.created > slow_threshold_) {
    slow_commands_.fetch_add(1, std::memory_order_relaxed);
    if (logs(LogLevel::Warning)) note_slow(&event, event.phases.delivered);
  } else if (slow_held_.load(std::memory_order_relaxed) && logs(LogLevel::Warning)) {
    // A record held back is logged by the first command to end a second after the last one.
    note_slow(nullptr,
              event.phases.delivered != Clock::time_point{} ? event.phases.delivered : now());
  }
}

void Observer::note_slow(const CommandEvent* slow, Clock::time_point at) noexcept {
  std::string record;
  std::string endpoint;
  try {
    const std::string text = slow ? slow_text(*slow) : std::string();
    std::lock_guard lock(slow_log_mutex_);
    if (slow) {
      slow_endpoint_.assign(slow->server_address);
      if (slow->server_port != 0) slow_endpoint_ += ":" + std::to_string(slow->server_port);
    }
    record = slow_log_.note(at, slow ? 1 : 0, text);
    slow_held_.store(slow_log_.holds(), std::memory_order_relaxed);
    if (!record.empty()) endpoint = slow_endpoint_;
  } catch (...) {  // out of memory building the message: the count still shows it
    return;
  }
  if (!record.empty()) log(LogLevel::Warning, endpoint, record);
}

std::string Observer::slow_text(const CommandEvent& event) const {
  const CommandPhases& p = event.phases;
  const bool caller_wrote = p.written == p.created;
  std::string text = "slow command: " + std::string(event.operation_name) + " took " +
                     micros(p.delivered - p.created) + " (threshold " + micros(slow_threshold_) +
                     "): ";
  text += caller_wrote ? "written by its caller at once"
                       : "queued " + micros(p.written - p.created) + " until written";
  text += ", " + micros(p.reply_read - p.written) + " until its reply was read (the server and " +
          "the network), " + micros(p.delivered - p.reply_read) + " until delivered; " +
          std::to_string(event.bytes_written) + " bytes out, " + std::to_string(event.bytes_read) +
          " bytes in";
  return text;
}

void Observer::write_done(const WriteEvent& event) noexcept {
  const Hooks* hooks = hooks_.load(std::memory_order_acquire);
  if (hooks && hooks->write) run_hook([&] { hooks->write(event); }, "write");
}

void Observer::batch_done(const BatchEvent& event) noexcept {
  const Hooks* hooks = hooks_.load(std::memory_order_acquire);
  if (hooks && hooks->batch) run_hook([&] { hooks->batch(event); }, "batch");
}

void Observer::log(LogLevel level, std::string_view endpoint, std::string_view message) noexcept {
  if (!logs(level)) return;
  const Hooks* hooks = hooks_.load(std::memory_order_acquire);
  if (!hooks || !hooks->log) return;
  LogRecord record;
  record.level = level;
  record.endpoint = endpoint;
  record.message = message;
  run_hook([&] { hooks->log(record); }, "log");
}

std::string SpacedLog::flush(Clock::time_point now) {
  return unlogged_ == 0 ? std::string() : take(now);
}

std::string SpacedLog::note(Clock::time_point now, std::uint64_t count, std::string_view latest) {
  if (count > 0) {
    unlogged_ += count;
    latest_.assign(latest);
  }
  const bool first = logged_at_ == Clock::time_point{};
  if (unlogged_ == 0 || (!first && now - logged_at_ < std::chrono::seconds(1))) return {};
  return take(now);
}

std::string SpacedLog::take(Clock::time_point now) {
  const bool first = logged_at_ == Clock::time_point{};
  std::string record;
  if (unlogged_ > 1) {
    record = std::to_string(unlogged_) + " " + many_;
    if (!first) record += " since the last such record";
    record += "; the latest: ";
  }
  record += latest_;
  logged_at_ = now;
  unlogged_ = 0;
  latest_.clear();
  return record;
}

}  // namespace detail
}  // namespace redmux
