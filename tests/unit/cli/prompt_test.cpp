// What the prompt decides itself (libedit does the editing): where the history file is, and
// which lines go into it.
#include "prompt.hpp"

#include <gtest/gtest.h>

namespace redmux::cli {
namespace {

TEST(PromptTest, HistoryFileFromTheEnvironment) {
  EXPECT_EQ(history_file(nullptr, "/home/ada"), "/home/ada/.redmux_history");
  EXPECT_EQ(history_file("/tmp/h", "/home/ada"), "/tmp/h");
  EXPECT_EQ(history_file("", "/home/ada"), "");  // REDMUX_HISTFILE= turns the file off
  EXPECT_EQ(history_file(nullptr, nullptr), "");
  EXPECT_EQ(history_file(nullptr, ""), "");
}

TEST(PromptTest, BlankLinesAndRepeatsStayOutOfTheHistory) {
  EXPECT_TRUE(worth_remembering("GET a", ""));
  EXPECT_TRUE(worth_remembering("GET a", "GET b"));
  EXPECT_FALSE(worth_remembering("GET a", "GET a"));
  EXPECT_FALSE(worth_remembering("  \t", ""));
  EXPECT_FALSE(worth_remembering("", "GET a"));
  // Trailing blanks (Tab completion leaves one) do not make another entry.
  EXPECT_FALSE(worth_remembering("GET a ", "GET a"));
  EXPECT_EQ(history_entry("CLIENT GETNAME \t"), "CLIENT GETNAME");
  EXPECT_EQ(history_entry("  GET a"), "  GET a");
}

}  // namespace
}  // namespace redmux::cli
