// Attempts: the series of connection attempts since the connection was last ready (sans-IO)
// — how many failed and why, when the first series gives up (after connectRetry retries),
// and how long to wait before the next attempt (the reconnect backoff).
//
// Threads: the connection's I/O thread only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "redmux/config.hpp"
#include "redmux/error.hpp"

namespace redmux::detail {

/// The wait before the next attempt after `failed` attempts in a row: reconnectBaseDelay ×
/// 2^(failed−1), capped at reconnectMaxDelay, times `jitter` (0.8 … 1.2).
std::chrono::milliseconds reconnect_delay(const Config& config, int failed, double jitter) noexcept;

/// A jitter factor for reconnect_delay(), uniform in [0.8, 1.2).
double reconnect_jitter();

class Attempts {
 public:
  explicit Attempts(const Config& config) noexcept : config_(config) {}

  /// One attempt failed with `error`. While the first series is still reported (the caller
  /// of start() waits: `first_waits`), its reason joins the log; once connectRetry retries
  /// failed too, returns the error to report to that caller. A refusal the next attempt
  /// would meet again (`for_good`, Handshake::refused_for_good(): the configured password,
  /// the SELECT of defaultDatabase) ends the series at once.
  std::optional<Error> failed(const Error& error, std::string_view endpoint, bool first_waits,
                              bool for_good = false);
  /// A ready connection broke with `cause`: the next attempt is the first of a new series,
  /// waiting as after one failure.
  void broke(const Error& cause) {
    last_ = cause;
    failed_ = 1;
  }
  /// The connection became ready. True when it had been ready before (a reconnect).
  bool succeeded() noexcept {
    const bool again = ever_ready_;
    ever_ready_ = true;
    failed_ = 0;
    reasons_.clear();
    return again;
  }

  int failed_in_a_row() const noexcept { return failed_; }
  const Error& last_error() const noexcept { return last_; }
  std::chrono::milliseconds next_delay(double jitter) const noexcept {
    return reconnect_delay(config_, failed_, jitter);
  }

 private:
  const Config& config_;
  int failed_ = 0;  ///< failed attempts in the current series
  Error last_;
  std::vector<std::string> reasons_;  ///< why the first series' first attempts failed
  bool ever_ready_ = false;
};

}  // namespace redmux::detail
