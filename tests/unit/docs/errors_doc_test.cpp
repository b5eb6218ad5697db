// docs/errors.md quotes the messages redmux prints. This test keeps the quotes true: every
// message it quotes — the fenced blocks, and the `code` spans of 40 characters or more — must
// be made of the library's string literals (src/ and include/), apart from what varies per message
// (numbers, addresses, quoted names, command names, states, the server's words, "…").
//
// How a quote is checked: it is cut at what varies; each remaining piece of two words or more
// must be made up of at most four stretches that each occur inside one string literal run of
// the sources (adjacent literals joined, as the compiler does), or skipped words (values
// printed from variables). A block quoting only the server is marked
// <!-- not checked: why --> on the line before it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs of whitespace as one space; `trim` also drops it at both ends.
std::string squeeze(const std::string& text, bool trim = true) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space) {
      if ((!out.empty() || !trim) && (out.empty() || out.back() != ' ')) out += ' ';
    } else {
      out += c;
    }
  }
  while (trim && !out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Appends the string literals of one C++ file to `corpus`, adjacent ones joined, each run
// ended by '\1' (so that no match crosses from one literal run into another).
void add_literals(const std::string& code, std::string& corpus) {
  std::string run;
  bool in_run = false;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '/' && i + 1 < code.size() && code[i + 1] == '/') {
      i = code.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (c == '/' && i + 1 < code.size() && code[i + 1] == '*') {
      i = code.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
      continue;
    }
    if (c == '\'' && i > 0 && std::isalnum(static_cast<unsigned char>(code[i - 1]))) {
      continue;  // a digit separator (100'000)
    }
    if (c == '\'') {  // a character literal ('"' among them)
      i = code.find('\'', i + (code[i + 1] == '\\' ? 3 : 2));
      if (i == std::string::npos) break;
      continue;
    }
    if (c == '"') {
      for (++i; i < code.size() && code[i] != '"'; ++i) {
        if (code[i] == '\\' && i + 1 < code.size()) {
          const char e = code[++i];
          run += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
          run += code[i];
        }
      }
      in_run = true;
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') continue;
    if (in_run) {
      corpus += squeeze(run, false) + '\1';
      run.clear();
      in_run = false;
    }
  }
  if (in_run) corpus += squeeze(run, false) + '\1';
}

std::string source_literals() {
  std::string corpus;
  for (const char* dir : {"src", "include"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(REDMUX_SOURCE_DIR) / dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".cpp" || ext == ".hpp" || ext == ".inc") add_literals(read(entry.path()), corpus);
    }
  }
  return corpus;
}

struct Quote {
  int line;
  std::string text;
};

// The `code` spans of one paragraph that look like messages.
void spans_of(const std::string& paragraph, int line, std::vector<Quote>& quotes) {
  for (std::size_t at = paragraph.find('`'); at != std::string::npos;
       at = paragraph.find('`', at)) {
    const std::size_t end = paragraph.find('`', at + 1);
    if (end == std::string::npos) break;
    const std::string span = paragraph.substr(at + 1, end - at - 1);
    if (span.size() >= 40 && span.find(' ') != std::string::npos) quotes.push_back({line, span});
    at = end + 1;
  }
}

// The fenced blocks that are not C++ (each one message per line, or one wrapped message),
// and `code` spans of 40 characters or more with spaces in them.
std::vector<Quote> quotes_in(const std::string& page) {
  std::vector<Quote> quotes;
  std::istringstream lines(page);
  std::string line, previous, block, paragraph;
  int number = 0, start = 0, paragraph_start = 0;
  bool inside = false, skip = false;
  while (std::getline(lines, line)) {
    ++number;
    if (line.starts_with("```")) {
      if (!inside) {
        inside = true;
        skip = line.size() > 3 || previous.starts_with("<!-- not checked");
        block.clear();
        start = number + 1;
      } else {
        inside = false;
        if (!skip && !block.empty()) quotes.push_back({start, block});
      }
      continue;
    }
    if (inside) {
      block += line + "\n";
      continue;
    }
    if (!line.empty()) previous = line;
    // A code span may run over a line break: spans are paired within a paragraph.
    if (line.empty()) {
      spans_of(paragraph, paragraph_start, quotes);
      paragraph.clear();
    } else {
      if (paragraph.empty()) paragraph_start = number;
      paragraph += line + "\n";
    }
  }
  spans_of(paragraph, paragraph_start, quotes);
  return quotes;
}

// What varies per message: quoted values, numbers and addresses, command names and server
// error words, the ellipsis, the version, and the words of the server or the OS that
// messages quote (the server's error text, strerror, OpenSSL's reasons), connection states.
const std::regex kVaries(
    R"re("[^"]*"|redmux \d+\.\d+\.\d+|[0-9][0-9.:%]*|\b[A-Z][A-Z_]+\b|…|\[[^\]]*\])re"
    R"re(|invalid username-password pair or user is disabled\.|value is not an integer or out of range)re"
    R"re(|Connection refused|certificate verify failed|Server closed the connection)re"
    R"re(|The cluster is down)re"
    R"re(|command not allowed when used memory > 'maxmemory'\.|script: [0-9a-f]*|on @user_script)re"
    R"re(|\b(idle|connecting|handshaking|ready|reconnecting|closed)\b)re"  // states
    R"re(|\b[A-Za-z]+(, [A-Za-z]+){2,},?)re");  // a generated list: "abortConnect, allowAdmin, …"

// The fewest steps that make up `piece`, where a step is a stretch of 3 or more characters
// that occurs inside one string literal run (messages are built from several literals:
// `" (client name \"" + name + "\")"`, then `": command "` …) or one word skipped (a value
// printed from a variable: a state, a role). At most kMaxSteps: a message a library prints
// is made of few literals; text it does not print needs many short scraps.
constexpr int kMaxSteps = 4;

bool printed(const std::string& piece, const std::string& corpus, std::string& why) {
  const std::size_t n = piece.size();
  std::vector<int> steps(n + 1, kMaxSteps + 1);
  steps[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (steps[i] >= kMaxSteps) continue;
    // The longest stretch from i found in one literal (every shorter one is found too).
    std::size_t low = 0, high = n - i;
    while (low < high) {
      const std::size_t mid = (low + high + 1) / 2;
      if (corpus.find(piece.substr(i, mid)) != std::string::npos) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    for (std::size_t length = 3; length <= low; ++length) {
      steps[i + length] = std::min(steps[i + length], steps[i] + 1);
    }
    std::size_t word_end = piece.find(' ', i + 1);
    if (word_end == std::string::npos) word_end = n;
    steps[word_end] = std::min(steps[word_end], steps[i] + 1);
  }
  if (steps[n] <= kMaxSteps) return true;
  why = "it takes more than " + std::to_string(kMaxSteps) +
        " scraps of the sources' string literals to make it up";
  return false;
}

TEST(ErrorsDoc, EveryQuotedMessageIsOneTheLibraryPrints) {
  const std::string corpus = source_literals();
  ASSERT_GT(corpus.size(), 10000u) << "no string literals found under " << REDMUX_SOURCE_DIR;
  const std::vector<Quote> quotes = quotes_in(read(fs::path(REDMUX_SOURCE_DIR) / "docs/errors.md"));
  ASSERT_GT(quotes.size(), 10u);
  int pieces_checked = 0;
  for (const Quote& quote : quotes) {
    const std::string text = squeeze(quote.text);
    std::sregex_token_iterator it(text.begin(), text.end(), kVaries, -1), end;
    for (; it != end; ++it) {
      std::string piece = squeeze(*it);
      while (!piece.empty() && piece.front() == ' ') piece.erase(0, 1);
      if (std::count(piece.begin(), piece.end(), ' ') < 1 || piece.size() < 12) continue;
      ++pieces_checked;
      std::string why;
      EXPECT_TRUE(printed(piece, corpus, why)) << "docs/errors.md:" << quote.line << ": \"" << piece
                                               << "\" is not text the library prints: " << why;
    }
  }
  EXPECT_GT(pieces_checked, 20);
}

}  // namespace
