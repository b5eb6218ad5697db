#include "completion.hpp"

#include <algorithm>
#include <cctype>

namespace redmux::cli {
namespace {

// "client|list" → "CLIENT LIST".
std::string display_name(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    c = c == '|' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(text[i])) !=
        std::toupper(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

void add_entry(const Reply& entry, std::vector<std::string>& names) {
  if (!entry.is_aggregate() || entry.size() == 0) return;
  const auto fields = entry.elements();
  if (!fields[0].is_string()) return;
  names.push_back(display_name(fields[0].text()));
  // Redis 7: [name, arity, flags, first, last, step, acl categories, tips, key specs,
  // subcommands]; each subcommand is an entry of the same shape named "parent|sub".
  if (fields.size() > 9 && fields[9].is_aggregate()) {
    for (const Reply& sub : fields[9].elements()) add_entry(sub, names);
  }
}

}  // namespace

CommandNames::CommandNames(std::vector<std::string> names) {
  for (std::string& name : names) names_.push_back(display_name(name));
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
}

CommandNames CommandNames::from_command_reply(const Reply& reply) {
  std::vector<std::string> names;
  if (reply.is_aggregate()) {
    for (const Reply& entry : reply.elements()) add_entry(entry, names);
  }
  return CommandNames(std::move(names));
}

std::vector<std::string> CommandNames::complete(std::string_view line) const {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  if (line.empty()) return {};
  // Blanks between words compare as one space ("client  li" is "CLIENT LI").
  std::string prefix;
  for (const char c : line) {
    const bool blank = c == ' ' || c == '\t';
    if (blank && !prefix.empty() && prefix.back() == ' ') continue;
    prefix += blank ? ' ' : c;
  }
  std::vector<std::string> out;
  for (const std::string& name : names_) {
    if (starts_with_nocase(name, prefix)) out.push_back(name);
  }
  return out;
}

std::vector<std::string> CommandNames::complete_word(std::string_view line) const {
  // The words already typed in full: those followed by a blank.
  std::size_t typed_words = 0;
  bool in_word = false;
  for (const char c : line) {
    const bool blank = c == ' ' || c == '\t';
    if (blank && in_word) ++typed_words;
    in_word = !blank;
  }
  std::vector<std::string> out;
  for (const std::string& name : complete(line)) {
    std::size_t begin = 0;
    for (std::size_t w = 0; w < typed_words && begin != std::string::npos; ++w) {
      begin = name.find(' ', begin);
      if (begin != std::string::npos) ++begin;
    }
    if (begin == std::string::npos || begin >= name.size()) continue;
    std::string word = name.substr(begin, name.find(' ', begin) - begin);
    if (std::find(out.begin(), out.end(), word) == out.end()) out.push_back(std::move(word));
  }
  return out;
}

}  // namespace redmux::cli
