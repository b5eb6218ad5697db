#include "line_editor.hpp"

#include <termios.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

namespace redmux::cli {

std::pair<Key, std::size_t> decode_key(std::string_view bytes) {
  if (bytes.empty()) return {Key{}, 0};
  const auto c = static_cast<unsigned char>(bytes[0]);
  switch (c) {
    case '\r':
    case '\n':
      return {Key{KeyKind::Enter}, 1};
    case 127:
    case 8:
      return {Key{KeyKind::Backspace}, 1};
    case 1:
      return {Key{KeyKind::Home}, 1};
    case 5:
      return {Key{KeyKind::End}, 1};
    case 2:
      return {Key{KeyKind::Left}, 1};
    case 6:
      return {Key{KeyKind::Right}, 1};
    case 16:
      return {Key{KeyKind::Up}, 1};
    case 14:
      return {Key{KeyKind::Down}, 1};
    case 21:
      return {Key{KeyKind::ClearLine}, 1};
    case 3:
      return {Key{KeyKind::Interrupt}, 1};
    case 4:
      return {Key{KeyKind::EndOfFile}, 1};
    case 27: {
      // ESC [ X, ESC O X, ESC [ n ~
      if (bytes.size() < 3) return {Key{}, 0};
      if (bytes[1] != '[' && bytes[1] != 'O') return {Key{KeyKind::Ignored}, 1};
      const char x = bytes[2];
      if (x >= '0' && x <= '9') {
        const std::size_t tilde = bytes.find('~', 2);
        if (tilde == std::string_view::npos) return {Key{}, bytes.size() > 8 ? 1u : 0u};
        const std::string_view number = bytes.substr(2, tilde - 2);
        KeyKind kind = KeyKind::Ignored;
        if (number == "3") kind = KeyKind::Delete;
        if (number == "1" || number == "7") kind = KeyKind::Home;
        if (number == "4" || number == "8") kind = KeyKind::End;
        return {Key{kind}, tilde + 1};
      }
      KeyKind kind = KeyKind::Ignored;
      switch (x) {
        case 'A':
          kind = KeyKind::Up;
          break;
        case 'B':
          kind = KeyKind::Down;
          break;
        case 'C':
          kind = KeyKind::Right;
          break;
        case 'D':
          kind = KeyKind::Left;
          break;
        case 'H':
          kind = KeyKind::Home;
          break;
        case 'F':
          kind = KeyKind::End;
          break;
        default:
          break;
      }
      return {Key{kind}, 3};
    }
    default:
      if (c < 32) return {Key{KeyKind::Ignored}, 1};
      return {Key{KeyKind::Text, static_cast<char>(c)}, 1};
  }
}

void History::add(std::string line) {
  if (line.empty() || (!entries_.empty() && entries_.back() == line)) return;
  entries_.push_back(std::move(line));
  if (entries_.size() > max_entries_) {
    entries_.erase(entries_.begin(),
                   entries_.begin() + static_cast<std::ptrdiff_t>(entries_.size() - max_entries_));
  }
}

void History::load(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) add(line);
}

void History::save(const std::string& path) const {
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& entry : entries_) out << entry << '\n';
}

void LineEditor::show_history(std::size_t position) {
  if (position_ == history_.entries().size()) typed_ = line_;
  position_ = position;
  line_ = position_ == history_.entries().size() ? typed_ : history_.entries()[position_];
  cursor_ = line_.size();
}

EditResult LineEditor::apply(const Key& key) {
  switch (key.kind) {
    case KeyKind::Text:
      line_.insert(cursor_++, 1, key.byte);
      break;
    case KeyKind::Enter:
      return EditResult::Done;
    case KeyKind::Backspace:
      if (cursor_ > 0) line_.erase(--cursor_, 1);
      break;
    case KeyKind::Delete:
      if (cursor_ < line_.size()) line_.erase(cursor_, 1);
      break;
    case KeyKind::Left:
      if (cursor_ > 0) --cursor_;
      break;
    case KeyKind::Right:
      if (cursor_ < line_.size()) ++cursor_;
      break;
    case KeyKind::Home:
      cursor_ = 0;
      break;
    case KeyKind::End:
      cursor_ = line_.size();
      break;
    case KeyKind::Up:
      if (position_ > 0) show_history(position_ - 1);
      break;
    case KeyKind::Down:
      if (position_ < history_.entries().size()) show_history(position_ + 1);
      break;
    case KeyKind::ClearLine:
      line_.clear();
      cursor_ = 0;
      break;
    case KeyKind::Interrupt:
      return EditResult::Interrupted;
    case KeyKind::EndOfFile:
      if (line_.empty()) return EditResult::EndOfFile;
      if (cursor_ < line_.size()) line_.erase(cursor_, 1);  // Ctrl-D deletes, like readline
      break;
    case KeyKind::Ignored:
      break;
  }
  return EditResult::Editing;
}

namespace {

// Puts the terminal in raw mode for its lifetime (restored even on early return).
class RawMode {
 public:
  RawMode() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0;
  }
  ~RawMode() {
    if (active_) tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;
  bool active() const noexcept { return active_; }

 private:
  termios saved_{};
  bool active_ = false;
};

void write_all(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

void refresh(const std::string& prompt, const LineEditor& editor) {
  // Single-line refresh: back to column 0, prompt and line, clear the rest, place cursor.
  std::string out = "\r" + prompt + editor.line() + "\x1b[0K\r";
  const std::size_t column = prompt.size() + editor.cursor();
  if (column > 0) out += "\x1b[" + std::to_string(column) + "C";
  write_all(out);
}

}  // namespace

std::optional<std::string> read_line(const std::string& prompt, const History& history) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    if (isatty(STDIN_FILENO)) {
      std::cout << prompt << std::flush;
    }
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  }
  std::cout << std::flush;
  RawMode raw;
  if (!raw.active()) {
    std::cout << prompt << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  }
  LineEditor editor(history);
  refresh(prompt, editor);
  std::string pending;
  for (;;) {
    char buf[64];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) {
      write_all("\r\n");
      return std::nullopt;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    for (;;) {
      auto [key, used] = decode_key(pending);
      if (used == 0) break;
      pending.erase(0, used);
      switch (editor.apply(key)) {
        case EditResult::Editing:
          break;
        case EditResult::Done:
          refresh(prompt, editor);  // pasted text arrives with its Enter: show it first
          write_all("\r\n");
          return editor.line();
        case EditResult::Interrupted:
          write_all("^C\r\n");
          return std::string();
        case EditResult::EndOfFile:
          write_all("\r\n");
          return std::nullopt;
      }
    }
    refresh(prompt, editor);
  }
}

}  // namespace redmux::cli
