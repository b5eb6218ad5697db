// The interactive prompt's line editing, without readline: a sans-IO core (LineEditor:
// keys in, the line and cursor out, history navigation) that the unit tests drive, and
// read_line(), which runs it on a terminal in raw mode (termios) or falls back to plain
// std::getline when stdin is not a terminal. Keys understood: printable bytes, Enter,
// Backspace, Delete, ←/→, Home/End (also Ctrl-A/Ctrl-E), ↑/↓ through history, Ctrl-U
// (clear), Ctrl-C (abandon the line), Ctrl-D (end on an empty line). One thread at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redmux::cli {

enum class KeyKind {
  Text,
  Enter,
  Backspace,
  Delete,
  Left,
  Right,
  Home,
  End,
  Up,
  Down,
  ClearLine,
  Interrupt,
  EndOfFile,
  Ignored
};

struct Key {
  KeyKind kind = KeyKind::Ignored;
  char byte = 0;  ///< for Text
};

/// Decodes the next key from `bytes` (escape sequences such as "\x1b[A" included); returns
/// the key and how many bytes it used, or 0 bytes used when more input is needed.
std::pair<Key, std::size_t> decode_key(std::string_view bytes);

/// History kept in memory, optionally loaded from and appended to a file.
class History {
 public:
  explicit History(std::size_t max_entries = 1000) : max_entries_(max_entries) {}
  /// Adds a line (not an empty one, nor a repeat of the last).
  void add(std::string line);
  const std::vector<std::string>& entries() const noexcept { return entries_; }
  /// Loads lines from `path` (missing file: nothing). Saves every entry to `path`.
  void load(const std::string& path);
  void save(const std::string& path) const;

 private:
  std::size_t max_entries_;
  std::vector<std::string> entries_;
};

enum class EditResult { Editing, Done, Interrupted, EndOfFile };

class LineEditor {
 public:
  explicit LineEditor(const History& history)
      : history_(history), position_(history.entries().size()) {}

  EditResult apply(const Key& key);
  const std::string& line() const noexcept { return line_; }
  std::size_t cursor() const noexcept { return cursor_; }

 private:
  void show_history(std::size_t position);

  const History& history_;
  std::string line_;
  std::size_t cursor_ = 0;
  std::size_t position_;  ///< history entry shown; entries().size() is the line being typed
  std::string typed_;     ///< the line being typed, kept while browsing history
};

/// Reads one line with `prompt`: edited in raw mode when stdin and stdout are terminals,
/// else std::getline (no prompt echo when stdin is not a terminal). nullopt at end of input.
/// An interrupted line (Ctrl-C) comes back as an empty string.
std::optional<std::string> read_line(const std::string& prompt, const History& history);

}  // namespace redmux::cli
