// The interactive prompt. On a terminal, Debian's libedit (BSD editline, readline-compatible
// API) edits the line — ←/→, Home/End, Ctrl-A/E/U/W, ↑/↓ and Ctrl-R through the history, Tab
// to complete a command name — and keeps a history file. When stdin is not a terminal, lines
// are read as they come: no prompt, no editing, no history (a script piping commands in
// leaves no trace in the history file).
//
// Threads: libedit's readline state is global, so at most one Prompt exists at a time, used
// from one thread.
#pragma once

#include <optional>
#include <string>

#include "completion.hpp"

namespace redmux::cli {

/// The history file: `histfile` ($REDMUX_HISTFILE) when set — an empty value means no history
/// file —, else `home`/.redmux_history ($HOME), else none (empty). Pure.
std::string history_file(const char* histfile, const char* home);

/// `line` as the history keeps it: without trailing blanks (a completed word leaves one).
std::string history_entry(const std::string& line);
/// A line may go into the history: not blank, not the same entry as the one before it, and
/// not a command that carries a secret (holds_secret()).
bool worth_remembering(const std::string& line, const std::string& previous);
/// True for a command line that carries a password, which the history file must not keep:
/// AUTH; ACL SETUSER; CONFIG SET of masterauth, masteruser, requirepass or a TLS key's
/// passphrase; HELLO … AUTH; MIGRATE … AUTH/AUTH2. (A line that does not split is kept out
/// too: its words cannot be checked.)
bool holds_secret(const std::string& line);

class Prompt {
 public:
  /// `history_path` empty: no history file. `names` feed Tab completion. On a terminal the
  /// history file is loaded (a missing file is no error).
  Prompt(std::string history_path, CommandNames names);
  ~Prompt();
  Prompt(const Prompt&) = delete;
  Prompt& operator=(const Prompt&) = delete;

  /// stdin is a terminal: the line is edited and the history kept.
  bool on_terminal() const noexcept { return terminal_; }

  /// One line, shown after `prompt` on a terminal; nullopt at end of input (Ctrl-D on an
  /// empty line, or the end of a pipe).
  std::optional<std::string> read(const std::string& prompt);

  /// Adds `line` to the history (see worth_remembering) and saves the history file, at once,
  /// as redis-cli does (a session that is killed keeps what it typed). Nothing off a terminal.
  void remember(const std::string& line);

 private:
  std::string history_path_;
  CommandNames names_;
  bool terminal_ = false;
  std::string previous_;
};

}  // namespace redmux::cli
