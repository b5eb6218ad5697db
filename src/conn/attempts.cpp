#include "conn/attempts.hpp"

#include <algorithm>
#include <random>

#include "conn/messages.hpp"

namespace redmux::detail {
namespace {

constexpr int kLoggedAttempts = 4;  // the first attempts' reasons go into the connect error

}  // namespace

std::chrono::milliseconds reconnect_delay(const Config& config, int failed,
                                          double jitter) noexcept {
  // Exponential backoff with jitter: base × 2^(attempts-1), capped, then ±20%.
  const int exponent = std::min(failed > 0 ? failed - 1 : 0, 20);
  auto delay = config.reconnect_base_delay * (1LL << exponent);
  delay = std::min<std::chrono::milliseconds>(delay, config.reconnect_max_delay);
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(delay.count()) * jitter));
}

double reconnect_jitter() {
  thread_local std::minstd_rand random(std::random_device{}());
  return std::uniform_real_distribution<double>(0.8, 1.2)(random);
}

std::optional<Error> Attempts::failed(const Error& error, std::string_view endpoint,
                                      bool first_waits, bool for_good) {
  last_ = error;
  ++failed_;
  if (ever_ready_ || !first_waits) return std::nullopt;
  if (failed_ <= kLoggedAttempts) reasons_.push_back(last_.message());
  if (failed_ <= config_.connect_retry && !for_good) return std::nullopt;
  return connect_error::gave_up(endpoint, failed_, config_, reasons_, last_);
}

}  // namespace redmux::detail
