// The prompt's line editing, fed keys without a terminal.
#include "line_editor.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

namespace redmux::cli {
namespace {

// Feeds `bytes` through the key decoder into `editor`; returns the last result.
EditResult type(LineEditor& editor, std::string bytes) {
  EditResult result = EditResult::Editing;
  while (!bytes.empty()) {
    auto [key, used] = decode_key(bytes);
    if (used == 0) break;
    bytes.erase(0, used);
    result = editor.apply(key);
    if (result != EditResult::Editing) break;
  }
  return result;
}

TEST(DecodeKeyTest, EscapeSequences) {
  EXPECT_EQ(decode_key("\x1b[A").first.kind, KeyKind::Up);
  EXPECT_EQ(decode_key("\x1b[B").first.kind, KeyKind::Down);
  EXPECT_EQ(decode_key("\x1bOC").first.kind, KeyKind::Right);
  EXPECT_EQ(decode_key("\x1b[3~").first.kind, KeyKind::Delete);
  EXPECT_EQ(decode_key("\x1b[3~").second, 4u);
  EXPECT_EQ(decode_key("\x1b[").second, 0u);  // incomplete: wait for more
  EXPECT_EQ(decode_key("\x7f").first.kind, KeyKind::Backspace);
  EXPECT_EQ(decode_key("\r").first.kind, KeyKind::Enter);
  EXPECT_EQ(decode_key("x").first.byte, 'x');
}

TEST(LineEditorTest, TypingMovingAndDeleting) {
  History history;
  LineEditor editor(history);
  EXPECT_EQ(type(editor, "GT k"), EditResult::Editing);
  type(editor, "\x1b[D\x1b[D\x1b[D");  // cursor after "G"
  type(editor, "E");
  EXPECT_EQ(editor.line(), "GET k");
  type(editor, "\x05\x7f");  // End, Backspace
  EXPECT_EQ(editor.line(), "GET ");
  type(editor, "\x01\x1b[3~");  // Home, Delete
  EXPECT_EQ(editor.line(), "ET ");
  EXPECT_EQ(type(editor, "\r"), EditResult::Done);
}

TEST(LineEditorTest, HistoryUpAndDownKeepsTheTypedLine) {
  History history;
  history.add("SET a 1");
  history.add("GET a");
  LineEditor editor(history);
  type(editor, "PI");
  type(editor, "\x1b[A");
  EXPECT_EQ(editor.line(), "GET a");
  type(editor, "\x1b[A\x1b[A");  // stops at the oldest
  EXPECT_EQ(editor.line(), "SET a 1");
  type(editor, "\x1b[B\x1b[B");
  EXPECT_EQ(editor.line(), "PI");
}

TEST(LineEditorTest, CtrlCAndCtrlD) {
  History history;
  LineEditor editor(history);
  EXPECT_EQ(type(editor, "\x04"), EditResult::EndOfFile);
  LineEditor other(history);
  EXPECT_EQ(type(other, "abc\x03"), EditResult::Interrupted);
}

TEST(HistoryTest, SkipsEmptyAndRepeatsAndRoundTripsThroughAFile) {
  History history(3);
  history.add("");
  history.add("a");
  history.add("a");
  history.add("b");
  history.add("c");
  history.add("d");
  EXPECT_EQ(history.entries(), (std::vector<std::string>{"b", "c", "d"}));
  const auto path = std::filesystem::temp_directory_path() / "redmux_cli_history_test";
  history.save(path.string());
  History loaded;
  loaded.load(path.string());
  EXPECT_EQ(loaded.entries(), history.entries());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace redmux::cli
