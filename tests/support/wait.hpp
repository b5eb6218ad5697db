// Polling helper for tests that wait for something observable from outside (a server's
// INFO counter, a port accepting connections). Prefer awaiting an event (a Future, a
// callback) when the code under test offers one; poll with a generous deadline otherwise.
// Stateless: safe from any thread.
#pragma once

#include <chrono>
#include <thread>

namespace redmux::test {

/// Calls `predicate` every `interval` until it returns true or `timeout` has passed.
/// Returns the last result, so `ASSERT_TRUE(wait_until(...))` fails only on timeout.
/// The predicate is always called at least once, and once more at the deadline.
template <typename Predicate>
bool wait_until(Predicate&& predicate, std::chrono::milliseconds timeout = std::chrono::seconds(10),
                std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return static_cast<bool>(predicate());
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace redmux::test
