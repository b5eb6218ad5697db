// Completion of command names at the interactive prompt, as redis-cli offers it: the names
// come from the server's own command table (COMMAND, read once when the prompt starts, so
// the list matches the server's version and modules), subcommands as two words
// ("CLIENT LIST"). Pure: no I/O; safe from any thread once built.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redmux/reply.hpp"

namespace redmux::cli {

class CommandNames {
 public:
  CommandNames() = default;
  /// Every name in COMMAND's reply (RESP2 or RESP3): element 0 of each entry, and of each
  /// entry of its subcommands (element 9, Redis 7) as "PARENT SUB". Upper case, sorted,
  /// without duplicates. A reply of another shape gives what it can (possibly nothing).
  static CommandNames from_command_reply(const Reply& reply);
  /// From a list of names ("get", "client|list" …), for tests and fallbacks.
  explicit CommandNames(std::vector<std::string> names);

  const std::vector<std::string>& names() const noexcept { return names_; }

  /// The full lines that complete `line` (the text before the cursor): the names that start
  /// with it, compared without case; leading blanks ignored. Empty when `line` is blank or
  /// past the command's words.
  /// Example: complete("cli") → {"CLIENT", "CLIENT CACHING", …}; complete("client ki") →
  /// {"CLIENT KILL"}.
  std::vector<std::string> complete(std::string_view line) const;

  /// What the prompt offers for the word being typed at the end of `line`: the distinct
  /// words at that position of the names complete() finds (a line editor replaces one
  /// word). Example: complete_word("client ki") → {"KILL"}; complete_word("cl") → {"CLIENT",
  /// "CLUSTER"}; complete_word("client ") → every CLIENT subcommand.
  std::vector<std::string> complete_word(std::string_view line) const;

 private:
  std::vector<std::string> names_;
};

}  // namespace redmux::cli
