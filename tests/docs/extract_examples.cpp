// Extracts the C++ blocks of the documentation (README.md and docs/*.md) into files a
// compiler can check, for the docs_examples test (docs_examples.cmake beside this file).
//
//   extract_examples <source dir> <output dir>
//
// A ```cpp block is one of:
//   - a whole program or translation unit: its first line is an #include. Written to
//     program_<n>.cpp, compiled and linked on its own.
//   - a fragment: the line before the fence is <!-- fragment -->. Its statements go into a
//     function of fragments.cpp that has `mux` (std::shared_ptr<redmux::Multiplexer>) and
//     `db` (redmux::Database) in scope, as most pages assume.
//   - declarations: <!-- fragment: declarations --> before the fence. The block goes to
//     namespace scope of fragments.cpp (in a namespace of its own).
//   - <!-- not compiled: why --> before the fence: skipped, and counted.
// Any other ```cpp block is an error: a page must say what each block is. Every block is
// preceded by a #line directive, so a compiler error names the page and line.
// Prints one line per kind with its count; exits 1 on an unmarked block.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Block {
  std::string page;  ///< relative to the source dir
  int line = 0;      ///< of the first code line
  std::string marker;
  std::string code;
};

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const auto end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

std::vector<Block> blocks_of(const fs::path& file, const std::string& page) {
  std::ifstream in(file);
  std::vector<Block> blocks;
  std::string line;
  std::string previous;  // the last non-empty line outside a block
  int number = 0;
  bool inside = false;
  bool cpp = false;
  Block block;
  while (std::getline(in, line)) {
    ++number;
    const std::string stripped = trim(line);
    if (!inside && stripped.starts_with("```")) {
      inside = true;
      const std::string language = stripped.substr(3);
      cpp = language == "cpp" || language == "c++";
      block = Block{page, number + 1, previous, {}};
      continue;
    }
    if (inside && stripped == "```") {
      inside = false;
      if (cpp) blocks.push_back(block);
      previous.clear();
      continue;
    }
    if (inside) {
      block.code += line + "\n";
    } else if (!stripped.empty()) {
      previous = stripped;
    }
  }
  return blocks;
}

std::string line_directive(const Block& block) {
  return "#line " + std::to_string(block.line) + " \"" + block.page + "\"\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: extract_examples <source dir> <output dir>\n";
    return 2;
  }
  const fs::path source = argv[1];
  const fs::path out = argv[2];
  fs::create_directories(out);
  std::vector<fs::path> pages = {source / "README.md"};
  for (const auto& entry : fs::directory_iterator(source / "docs")) {
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  }
  std::sort(pages.begin(), pages.end());

  std::ostringstream fragments;
  fragments << "#include <redmux/redmux.hpp>\n\n"
               "#include <chrono>\n#include <cstdio>\n#include <iostream>\n#include <map>\n"
               "#include <memory>\n#include <optional>\n#include <string>\n#include <thread>\n"
               "#include <vector>\n\nusing namespace std::chrono_literals;\n\n";
  int programs = 0, statements = 0, declarations = 0, skipped = 0, unmarked = 0;
  for (const fs::path& page_path : pages) {
    const std::string page = fs::relative(page_path, source).string();
    for (const Block& block : blocks_of(page_path, page)) {
      const std::string first = trim(block.code.substr(0, block.code.find('\n')));
      if (block.marker.starts_with("<!-- not compiled")) {
        ++skipped;
      } else if (block.marker == "<!-- fragment -->") {
        fragments << "[[maybe_unused]] static void fragment_" << statements + declarations
                  << "(std::shared_ptr<redmux::Multiplexer> mux, redmux::Database db) {\n"
                  << "  (void)mux;\n  (void)db;\n  {\n"  // a page may declare its own db
                  << line_directive(block) << block.code << "  }\n}\n\n";
        ++statements;
      } else if (block.marker == "<!-- fragment: declarations -->") {
        fragments << "namespace declarations_" << statements + declarations << " {\n"
                  << line_directive(block) << block.code << "}\n\n";
        ++declarations;
      } else if (first.starts_with("#include")) {
        std::ofstream program(out / ("program_" + std::to_string(programs++) + ".cpp"));
        program << line_directive(block) << block.code;
      } else {
        std::cerr << page << ":" << block.line - 1
                  << ": a ```cpp block that is not a whole program (its first line is no "
                     "#include) needs a marker on the line before it: <!-- fragment -->, "
                     "<!-- fragment: declarations --> or <!-- not compiled: why -->\n";
        ++unmarked;
      }
    }
  }
  std::ofstream(out / "fragments.cpp") << fragments.str();
  std::cout << "programs " << programs << "\nfragments " << statements << "\ndeclarations "
            << declarations << "\nnot-compiled " << skipped << "\n";
  return unmarked == 0 ? 0 : 1;
}
