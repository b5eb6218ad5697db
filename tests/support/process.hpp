// Running helper programs (redis-cli, redis-server) from tests without a shell: argv is
// passed as is, so arguments need no quoting. Stateless: safe from any thread (each call
// forks its own child).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace redmux::test {

/// How a finished (or abandoned) child process ended and what it printed.
struct ProcessResult {
  int exit_code = -1;      ///< exit status, or -1 when killed by a signal
  int term_signal = 0;     ///< signal that ended it, 0 if it exited
  bool timed_out = false;  ///< it ran past the timeout and was killed with SIGKILL
  std::string out;         ///< everything written to stdout
  std::string err;         ///< everything written to stderr

  bool ok() const noexcept { return exit_code == 0 && !timed_out; }
  /// One line for error messages: "exit code 1", "killed by signal 9", "timed out after …".
  std::string describe() const;
};

/// The full path of `name` if it names an executable file (a path containing '/') or is
/// found on PATH; empty when not found.
std::string find_executable(std::string_view name);

/// Runs argv[0] (looked up on PATH) with the given arguments and `extra_env` ("NAME=value")
/// added to this process's environment; stdin is /dev/null. Waits for it to exit, or kills it
/// with SIGKILL after `timeout`. Throws std::runtime_error if argv[0] cannot be found.
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30),
                          const std::vector<std::string>& extra_env = {});

/// `text` without leading and trailing whitespace (spaces, tabs, CR, LF).
std::string trim(std::string_view text);

/// The names of this process's threads that start with `prefix` (from /proc/self/task).
std::vector<std::string> threads_named(std::string_view prefix);

/// A child process that sleeps (`sleep 120`), started the way system() and most helpers
/// start one: posix_spawn closing nothing, so it inherits every descriptor of this process
/// that is not close-on-exec. Killed and reaped when the object goes away. Owned by the thread
/// that made it.
class SleepingChild {
 public:
  SleepingChild();
  ~SleepingChild();
  SleepingChild(const SleepingChild&) = delete;
  SleepingChild& operator=(const SleepingChild&) = delete;

  /// True while the child runs (false when it could not be started).
  bool alive() const;

 private:
  int pid_ = -1;
};

}  // namespace redmux::test
