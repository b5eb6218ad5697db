#include "report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
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

using Json = nlohmann::ordered_json;

// A measured value rounded to `decimals`, or null when not measured (negative, not finite).
Json json_number(double value, int decimals) {
  if (value < 0 || !std::isfinite(value)) return nullptr;
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// A field's value: numeric fields hold their number's text ("12.5"), others text.
Json field_value(const std::string& text, bool numeric) {
  if (numeric) {
    Json value = Json::parse(text, nullptr, false);
    if (value.is_number()) return value;
  }
  return text;
}

std::string decimal_text(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string client_label(const Row& row) {
  return row.baseline ? row.client + " (baseline)" : row.client;
}

}  // namespace

Field& Field::with_seed(double value, int decimals) {
  seed = decimal_text(value, decimals);
  seed_numeric = true;
  return *this;
}

Field& Field::with_seed_text(std::string value) {
  seed = std::move(value);
  seed_numeric = false;
  return *this;
}

Field& Row::add(std::string name, long long value) {
  extra.push_back(Field{std::move(name), std::to_string(value), true, {}, false});
  return extra.back();
}

Field& Row::add(std::string name, double value, int decimals) {
  extra.push_back(Field{std::move(name), decimal_text(value, decimals), true, {}, false});
  return extra.back();
}

Field& Row::add_text(std::string name, std::string value) {
  extra.push_back(Field{std::move(name), std::move(value), false, {}, false});
  return extra.back();
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
  // Columns: variant and client, the fixed measurements some row has, every extra column in
  // order of first appearance (each followed by its seed column when a row has a seed
  // figure for it), the ratio to the reference row, the check.
  struct Column {
    std::string header;
    std::function<std::string(const Row&)> cell;
    bool left = false;
  };
  std::vector<Column> columns = {{"variant", [](const Row& r) { return r.variant; }, true},
                                 {"client", [](const Row& r) { return client_label(r); }, true}};
  auto any = [&](auto&& has) { return std::any_of(table.rows.begin(), table.rows.end(), has); };
  if (any([](const Row& r) { return r.threads > 0; })) {
    columns.push_back({"threads", [](const Row& r) { return std::to_string(r.threads); }});
  }
  if (any([](const Row& r) { return r.commands > 0; })) {
    columns.push_back({"commands", [](const Row& r) { return with_commas(r.commands); }});
  }
  auto seed_cell = [](double value, int decimals) {
    return value < 0 ? std::string() : "(" + fixed(value, decimals) + ")";
  };
  if (any([](const Row& r) { return r.ms >= 0; })) {
    columns.push_back({"ms", [](const Row& r) { return number_or_dash(r.ms, 1); }});
  }
  if (any([](const Row& r) { return r.seed_ms >= 0; })) {
    columns.push_back({"seed", [seed_cell](const Row& r) { return seed_cell(r.seed_ms, 0); }});
  }
  if (any([](const Row& r) { return r.ops_per_sec > 0; })) {
    columns.push_back({"ops/s", [](const Row& r) { return fixed(r.ops_per_sec, 0); }});
  }
  if (any([](const Row& r) { return r.seed_ops >= 0; })) {
    columns.push_back({"seed", [seed_cell](const Row& r) { return seed_cell(r.seed_ops, 0); }});
  }
  if (any([](const Row& r) { return r.p50_us >= 0; })) {
    columns.push_back({"p50 µs", [](const Row& r) { return number_or_dash(r.p50_us, 1); }});
  }
  if (any([](const Row& r) { return r.p99_us >= 0; })) {
    columns.push_back({"p99 µs", [](const Row& r) { return number_or_dash(r.p99_us, 1); }});
  }
  std::vector<std::string> extra_names;
  for (const Row& row : table.rows) {
    for (const Field& f : row.extra) {
      if (std::find(extra_names.begin(), extra_names.end(), f.name) == extra_names.end()) {
        extra_names.push_back(f.name);
      }
    }
  }
  auto field_of = [](const Row& r, const std::string& name) -> const Field* {
    for (const Field& f : r.extra) {
      if (f.name == name) return &f;
    }
    return nullptr;
  };
  for (const std::string& name : extra_names) {
    columns.push_back({name, [name, field_of](const Row& r) {
                         const Field* f = field_of(r, name);
                         return f ? f->text : std::string();
                       }});
    if (any([&](const Row& r) {
          const Field* f = field_of(r, name);
          return f && !f->seed.empty();
        })) {
      columns.push_back({"seed", [name, field_of](const Row& r) {
                           const Field* f = field_of(r, name);
                           return f && !f->seed.empty() ? "(" + f->seed + ")" : std::string();
                         }});
    }
  }
  if (reference_ops > 0) {
    columns.push_back({"vs " + table.reference, [reference_ops](const Row& r) {
                         return fixed(r.ops_per_sec / reference_ops, 2) + "x";
                       }});
  }
  columns.push_back(
      {"check", [](const Row& r) { return (r.ok ? "ok " : "FAILED ") + r.check; }, true});

  std::vector<std::vector<std::string>> cells;
  for (const Row& row : table.rows) {
    std::vector<std::string> line;
    for (const Column& c : columns) line.push_back(c.cell(row));
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) {
    width[c] = display_width(columns[c].header);
    for (const auto& line : cells) width[c] = std::max(width[c], display_width(line[c]));
  }
  auto emit = [&](const std::vector<std::string>& line) {
    std::string out = " ";
    for (std::size_t c = 0; c < line.size(); ++c) {
      out += " " + pad(line[c], width[c], !columns[c].left);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::printf("%s\n", out.c_str());
  };
  std::printf("\n== %s\n", table.title.c_str());
  std::printf("   %s\n", table.shows.c_str());
  std::printf("   %s\n\n", table.setup.c_str());
  std::vector<std::string> header;
  for (const Column& c : columns) header.push_back(c.header);
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
    Json line = {{"scenario", row.scenario},
                 {"variant", row.variant},
                 {"client", row.client},
                 {"baseline", row.baseline},
                 {"threads", row.threads},
                 {"commands", row.commands},
                 {"ops_per_sec", json_number(row.ops_per_sec, 1)},
                 {"p50_us", json_number(row.p50_us, 2)},
                 {"p99_us", json_number(row.p99_us, 2)}};
    if (row.ms >= 0) line["ms"] = json_number(row.ms, 3);
    if (row.seed_ms >= 0) line["seed_ms"] = json_number(row.seed_ms, 3);
    if (row.seed_ops >= 0) line["seed_ops_per_sec"] = json_number(row.seed_ops, 1);
    for (const Field& f : row.extra) {
      line[f.name] = field_value(f.text, f.numeric);
      if (!f.seed.empty()) line["seed_" + f.name] = field_value(f.seed, f.seed_numeric);
    }
    line["ok"] = row.ok;
    line["check"] = row.check;
    // The table's line without its "setup: " label: the key says it.
    constexpr std::string_view kLabel = "setup: ";
    line["setup"] = std::string_view(table.setup).starts_with(kLabel)
                        ? table.setup.substr(kLabel.size())
                        : table.setup;
    std::fprintf(out, "%s\n", line.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  }
  for (const Comparison& c : table.comparisons) {
    const Json line = {{"scenario", "comparison"}, {"of", c.scenario},
                       {"variant", c.name},        {"value", json_number(c.value, 4)},
                       {"target", c.target},       {"met", c.met}};
    std::fprintf(out, "%s\n", line.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  }
  std::fflush(out);
}

}  // namespace redmux_bench
