#include "report.hpp"

#include "json_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace redmux_bench {

namespace {

// Display width of UTF-8 text: code points, not bytes ("µs", "≥" are one column each).
std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;
  return width;
}

std::string pad(std::string_view text, std::size_t width, bool right) {
  const std::size_t w = display_width(text);
  const std::string fill(w < width ? width - w : 0, ' ');
  return right ? fill + std::string(text) : std::string(text) + fill;
}

std::string number_or_dash(double value, int decimals) {
  return value < 0 ? "—" : fixed(value, decimals);
}

std::string json_number(double value, int decimals) {
  if (value < 0 || !std::isfinite(value)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string client_label(const Row& row) {
  return row.baseline ? row.client + " (baseline)" : row.client;
}

}  // namespace

void Row::add(std::string name, long long value) {
  extra.push_back({std::move(name), std::to_string(value), true});
}

void Row::add(std::string name, double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  extra.push_back({std::move(name), buf, true});
}

void Row::add_text(std::string name, std::string value) {
  extra.push_back({std::move(name), std::move(value), false});
}

void RowRuns::add(Row row) {
  for (auto& runs : by_variant_) {
    if (runs.front().variant == row.variant) {
      runs.push_back(std::move(row));
      return;
    }
  }
  by_variant_.push_back({std::move(row)});
}

std::vector<Row> RowRuns::medians() const {
  std::vector<Row> out;
  for (std::vector<Row> runs : by_variant_) {
    if (runs.size() == 1) {
      out.push_back(runs.front());
      continue;
    }
    bool all_ok = true;
    std::string failed;
    for (const Row& r : runs) {
      if (!r.ok && failed.empty()) failed = r.check;
      all_ok = all_ok && r.ok;
    }
    std::sort(runs.begin(), runs.end(),
              [](const Row& a, const Row& b) { return a.ops_per_sec < b.ops_per_sec; });
    Row median = runs[(runs.size() - 1) / 2];
    median.add("runs", static_cast<long long>(runs.size()));
    if (!all_ok) {
      median.ok = false;
      median.check += " (another run failed: " + failed + ")";
    }
    out.push_back(std::move(median));
  }
  return out;
}

std::string with_commas(long long value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "—";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string text = buf;
  const std::size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot);
  const std::string rest = dot == std::string::npos ? "" : text.substr(dot);
  // Separate thousands only in the whole part; keep the sign.
  if (whole.size() > 4 || (whole.size() > 3 && whole[0] != '-')) {
    return with_commas(std::stoll(whole)) + rest;
  }
  return text;
}

std::string json_string(std::string_view text) {
  return redmux::tools::json_quote(text);
}

Report::Report(bool json_to_stdout, const std::string& json_file) : json_(json_to_stdout) {
  if (!json_file.empty()) {
    json_file_ = std::fopen(json_file.c_str(), "w");
    if (!json_file_) throw std::runtime_error("cannot write --json-file " + json_file);
  }
}

Report::~Report() {
  if (json_file_) std::fclose(json_file_);
}

void Report::print(const Table& table) {
  for (const Row& row : table.rows) failures_ += !row.ok;
  if (json_) {
    write_json(stdout, table);
  } else {
    print_text(table);
  }
  if (json_file_) write_json(json_file_, table);
  std::fflush(stdout);
}

void Report::print_text(const Table& table) {
  double reference_ops = 0;
  for (const Row& row : table.rows) {
    if (!table.reference.empty() && row.variant == table.reference) reference_ops = row.ops_per_sec;
  }
  // Columns: fixed ones, then every extra column in order of first appearance.
  std::vector<std::string> extra_names;
  for (const Row& row : table.rows) {
    for (const Field& f : row.extra) {
      bool seen = false;
      for (const auto& n : extra_names) seen = seen || n == f.name;
      if (!seen) extra_names.push_back(f.name);
    }
  }
  std::vector<std::string> header = {"variant", "client", "threads", "commands",
                                     "ms",      "ops/s",  "p50 µs",  "p99 µs"};
  for (const auto& n : extra_names) header.push_back(n);
  if (reference_ops > 0) header.push_back("vs " + table.reference);
  header.push_back("check");
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : table.rows) {
    std::vector<std::string> line = {row.variant,
                                     client_label(row),
                                     std::to_string(row.threads),
                                     with_commas(row.commands),
                                     number_or_dash(row.ms, 1),
                                     fixed(row.ops_per_sec, 0),
                                     number_or_dash(row.p50_us, 1),
                                     number_or_dash(row.p99_us, 1)};
    for (const auto& n : extra_names) {
      std::string value = "";
      for (const Field& f : row.extra) {
        if (f.name == n) value = f.text;
      }
      line.push_back(value);
    }
    if (reference_ops > 0) line.push_back(fixed(row.ops_per_sec / reference_ops, 2) + "x");
    line.push_back((row.ok ? "ok " : "FAILED ") + row.check);
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = display_width(header[c]);
    for (const auto& line : cells) width[c] = std::max(width[c], display_width(line[c]));
  }
  auto emit = [&](const std::vector<std::string>& line) {
    std::string out = " ";
    for (std::size_t c = 0; c < line.size(); ++c) {
      const bool left = c < 2 || c + 1 == line.size();
      out += " " + pad(line[c], width[c], !left);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::printf("%s\n", out.c_str());
  };
  std::printf("\n== %s\n", table.title.c_str());
  std::printf("   %s\n", table.shows.c_str());
  std::printf("   %s\n\n", table.setup.c_str());
  emit(header);
  for (const auto& line : cells) emit(line);
  if (!table.comparisons.empty() || !table.notes.empty()) std::printf("\n");
  for (const Comparison& c : table.comparisons) {
    std::printf("   %s = %s (target %s: %s)\n", c.name.c_str(), fixed(c.value, 2).c_str(),
                c.target.c_str(), c.met ? "met" : "NOT met");
  }
  for (const auto& note : table.notes) std::printf("   %s\n", note.c_str());
}

void Report::write_json(std::FILE* out, const Table& table) {
  for (const Row& row : table.rows) {
    std::string line = "{";
    line += "\"scenario\":" + json_string(row.scenario);
    line += ",\"variant\":" + json_string(row.variant);
    line += ",\"client\":" + json_string(row.client);
    line += std::string(",\"baseline\":") + (row.baseline ? "true" : "false");
    line += ",\"threads\":" + std::to_string(row.threads);
    line += ",\"commands\":" + std::to_string(row.commands);
    line += ",\"ops_per_sec\":" + json_number(row.ops_per_sec, 1);
    line += ",\"p50_us\":" + json_number(row.p50_us, 2);
    line += ",\"p99_us\":" + json_number(row.p99_us, 2);
    if (row.ms >= 0) line += ",\"ms\":" + json_number(row.ms, 3);
    for (const Field& f : row.extra) {
      line += "," + json_string(f.name) + ":" + (f.numeric ? f.text : json_string(f.text));
    }
    line += std::string(",\"ok\":") + (row.ok ? "true" : "false");
    line += ",\"check\":" + json_string(row.check);
    line += ",\"setup\":" + json_string(table.setup);
    line += "}";
    std::fprintf(out, "%s\n", line.c_str());
  }
  for (const Comparison& c : table.comparisons) {
    std::fprintf(out,
                 "{\"scenario\":\"comparison\",\"of\":%s,\"variant\":%s,\"value\":%s,"
                 "\"target\":%s,\"met\":%s}\n",
                 json_string(c.scenario).c_str(), json_string(c.name).c_str(),
                 json_number(c.value, 4).c_str(), json_string(c.target).c_str(),
                 c.met ? "true" : "false");
  }
  std::fflush(out);
}

}  // namespace redmux_bench
