#include "prompt.hpp"

#include <editline/readline.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>
#include <vector>

#include "command_line.hpp"

namespace redmux::cli {
namespace {

constexpr int kHistoryEntries = 1000;

// The one Prompt's names, for libedit's completion callback (a plain function pointer).
const CommandNames* g_names = nullptr;

char* copy(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// readline's convention: NULL for no match; else {replacement, match…, NULL}, where the
// replacement is the matches' longest common prefix (the match itself when there is one).
// readline frees the array and the strings with free().
extern "C" char** complete_command(const char*, int, int end) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  if (g_names == nullptr || rl_line_buffer == nullptr) return nullptr;
  const std::vector<std::string> words =
      g_names->complete_word(std::string_view(rl_line_buffer, static_cast<std::size_t>(end)));
  if (words.empty()) return nullptr;
  std::string common = words.front();
  for (const std::string& word : words) {
    std::size_t n = 0;
    while (n < common.size() && n < word.size() && common[n] == word[n]) ++n;
    common.resize(n);
  }
  auto** matches = static_cast<char**>(std::calloc(words.size() + 2, sizeof(char*)));
  if (matches == nullptr) return nullptr;
  std::size_t i = 0;
  matches[i++] = copy(words.size() == 1 ? words.front() : common);
  if (words.size() > 1) {
    for (const std::string& word : words) matches[i++] = copy(word);
  }
  return matches;
}

}  // namespace

std::string history_file(const char* histfile, const char* home) {
  if (histfile != nullptr) return histfile;
  if (home != nullptr && *home != '\0') return std::string(home) + "/.redmux_history";
  return {};
}

std::string history_entry(const std::string& line) {
  const std::size_t end = line.find_last_not_of(" \t");
  return end == std::string::npos ? std::string() : line.substr(0, end + 1);
}

bool holds_secret(const std::string& line) {
  const std::optional<std::vector<std::string>> words = split_command_line(line);
  if (!words) return true;
  if (words->empty()) return false;
  auto is = [&](std::size_t i, std::string_view name) {
    return i < words->size() && std::equal((*words)[i].begin(), (*words)[i].end(), name.begin(),
                                           name.end(), [](char a, char b) {
                                             return std::tolower(static_cast<unsigned char>(a)) ==
                                                    std::tolower(static_cast<unsigned char>(b));
                                           });
  };
  if (is(0, "AUTH")) return true;
  if (is(0, "ACL") && is(1, "SETUSER")) return true;
  if (is(0, "CONFIG") && is(1, "SET")) {
    for (std::size_t i = 2; i < words->size(); i += 2) {  // CONFIG SET name value [name value …]
      for (std::string_view secret : {"masterauth", "masteruser", "requirepass",
                                      "tls-key-file-pass", "tls-client-key-file-pass"}) {
        if (is(i, secret)) return true;
      }
    }
    return false;
  }
  if (is(0, "HELLO") || is(0, "MIGRATE")) {
    for (std::size_t i = 1; i < words->size(); ++i) {
      if (is(i, "AUTH") || is(i, "AUTH2")) return true;
    }
  }
  return false;
}

bool worth_remembering(const std::string& line, const std::string& previous) {
  const std::string entry = history_entry(line);
  return !entry.empty() && entry != history_entry(previous) && !holds_secret(entry);
}

Prompt::Prompt(std::string history_path, CommandNames names)
    : history_path_(std::move(history_path)),
      names_(std::move(names)),
      terminal_(isatty(STDIN_FILENO) != 0) {
  if (!terminal_) return;
  g_names = &names_;
  rl_readline_name = "redmux-cli";
  rl_attempted_completion_function = complete_command;
  using_history();
  stifle_history(kHistoryEntries);
  if (!history_path_.empty()) read_history(history_path_.c_str());
}

Prompt::~Prompt() {
  if (!terminal_) return;
  rl_attempted_completion_function = nullptr;
  g_names = nullptr;
}

std::optional<std::string> Prompt::read(const std::string& prompt) {
  if (!terminal_) {
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
  }
  std::cout << std::flush;
  char* line = readline(prompt.c_str());
  if (line == nullptr) return std::nullopt;
  std::string out(line);
  std::free(line);
  return out;
}

void Prompt::remember(const std::string& line) {
  if (!terminal_ || !worth_remembering(line, previous_)) return;
  previous_ = history_entry(line);
  add_history(previous_.c_str());
  if (!history_path_.empty()) write_history(history_path_.c_str());
}

}  // namespace redmux::cli
