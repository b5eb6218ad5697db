// Small helpers shared by the fault-injection tests: connecting with test options, tallying
// how commands ended, and reading this process's resident memory. Stateless or plain
// values; OutcomeTally is thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/redmux.hpp"

namespace redmux::fault {

/// Connects to `address` with a client name and `options` (",asyncTimeout=500" …) appended.
inline std::shared_ptr<Multiplexer> connect_to(const std::string& address,
                                               const std::string& options = "") {
  return Multiplexer::connect(address + ",name=redmux-fault" + options);
}

/// The error code of a result, errc::ok for a value.
template <class T>
errc code_of(const Result<T>& result) {
  return result.has_value() ? errc::ok : result.error().code();
}

/// The enumerator's name ("outcome_unknown"), for test output.
inline const char* name_of(errc code) {
  switch (code) {
    case errc::ok:
      return "ok";
    case errc::protocol_error:
      return "protocol_error";
    case errc::server_error:
      return "server_error";
    case errc::unexpected_reply:
      return "unexpected_reply";
    case errc::timeout:
      return "timeout";
    case errc::queue_full:
      return "queue_full";
    case errc::not_sent:
      return "not_sent";
    case errc::outcome_unknown:
      return "outcome_unknown";
    case errc::connection_failed:
      return "connection_failed";
    case errc::authentication_failed:
      return "authentication_failed";
    case errc::disconnected:
      return "disconnected";
    case errc::shut_down:
      return "shut_down";
    case errc::deadlock:
      return "deadlock";
    case errc::admin_required:
      return "admin_required";
    case errc::not_allowed:
      return "not_allowed";
    case errc::invalid_config:
      return "invalid_config";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::transaction_aborted:
      return "transaction_aborted";
    case errc::subscription_overflow:
      return "subscription_overflow";
    case errc::handler_failed:
      return "handler_failed";
    case errc::subscription_ended:
      return "subscription_ended";
  }
  return "unknown errc";
}

/// How many commands ended with each errc (errc::ok: a value). Safe from any thread.
class OutcomeTally {
 public:
  void add(errc code) { counts_.at(index(code)).fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t count(errc code) const {
    return counts_.at(index(code)).load(std::memory_order_relaxed);
  }
  /// Every outcome but ok. (A sum of all counters less ok would read ok twice; under load the
  /// second read can be the larger, and the unsigned difference wraps round.)
  std::uint64_t errors() const {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      if (i != index(errc::ok)) sum += counts_[i].load(std::memory_order_relaxed);
    }
    return sum;
  }
  /// "ok=120 timeout=3 outcome_unknown=7" (codes that occurred only).
  std::string describe() const {
    std::string text;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      const auto n = counts_[i].load(std::memory_order_relaxed);
      if (n == 0) continue;
      if (!text.empty()) text += ' ';
      text += std::string(name_of(static_cast<errc>(i))) + "=" + std::to_string(n);
    }
    return text.empty() ? "nothing" : text;
  }

 private:
  static std::size_t index(errc code) { return static_cast<std::size_t>(code); }
  std::array<std::atomic<std::uint64_t>, 32> counts_{};
};

/// Prints one line of what a fault test observed (shown by CTest on failure, and with -V), so
/// a passing run still shows that the fault actually hit something.
inline void report(const std::string& what) {
  std::printf("[ observed ] %s\n", what.c_str());
}

/// Checks one counter that many callers INCRed while their connections broke against what
/// they were told: it is at least the INCRs that returned a value and at most those plus the
/// ones whose outcome is unknown (`unknown_timeouts`: timeouts of commands that were, or were
/// being, sent), so an INCR reported "not sent" never ran; and every value returned (`values`)
/// was returned once, none above the counter. Reports what it saw (`extra` appended).
inline void expect_counter_matches_outcomes(long long final_value, const OutcomeTally& tally,
                                            long long unknown_timeouts,
                                            std::vector<long long> values,
                                            const std::string& extra = "") {
  const auto acknowledged = static_cast<long long>(tally.count(errc::ok));
  const auto unknown =
      static_cast<long long>(tally.count(errc::outcome_unknown)) + unknown_timeouts;
  const std::string observed = "outcomes: " + tally.describe() +
                               ", timeouts while sent: " + std::to_string(unknown_timeouts) +
                               ", final counter " + std::to_string(final_value) + extra;
  report(observed);
  SCOPED_TRACE(observed);
  EXPECT_GE(final_value, acknowledged);
  EXPECT_LE(final_value, acknowledged + unknown);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::adjacent_find(values.begin(), values.end()), values.end())
      << "one INCR result was delivered to two callers";
  ASSERT_FALSE(values.empty());
  EXPECT_LE(values.back(), final_value);
}

/// This process's resident set size in KiB (VmRSS of /proc/self/status); -1 if unknown.
inline long long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

}  // namespace redmux::fault
