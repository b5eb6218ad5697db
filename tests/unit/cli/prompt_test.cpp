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

TEST(PromptTest, CommandsCarryingAPasswordStayOutOfTheHistory) {
  for (const char* line : {"AUTH s3cret", "auth bob s3cret", "ACL SETUSER carl on >s3cret",
                           "config set requirepass s3cret", "CONFIG SET maxmemory 1 masterauth x",
                           "HELLO 3 AUTH bob s3cret", "hello 3 setname x auth bob s3cret",
                           "MIGRATE h 6379 \"\" 0 5000 AUTH s3cret KEYS a",
                           "MIGRATE h 6379 k 0 5000 auth2 bob s3cret", "AUTH \"unclosed"}) {
    EXPECT_TRUE(holds_secret(line)) << line;
    EXPECT_FALSE(worth_remembering(line, "")) << line;
  }
  for (const char* line : {"GET auth", "CONFIG SET maxmemory 100mb", "CONFIG GET requirepass",
                           "HELLO 3", "ACL WHOAMI", "SET password x"}) {
    EXPECT_FALSE(holds_secret(line)) << line;
    EXPECT_TRUE(worth_remembering(line, "")) << line;
  }
}

}  // namespace
}  // namespace redmux::cli
