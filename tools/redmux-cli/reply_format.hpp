// Printing a Reply the way redis-cli does: the human format for a terminal ("(integer) 1",
// "1) \"a\"", "1# \"k\" => \"v\"" …), the raw format for pipes (bare values, one per line),
// and JSON. Pure functions of the Reply: safe from any thread.
//
// Where redis-cli 7.0 has no rendering of its own (it cannot print big numbers or attributes)
// redmux-cli chooses: "(big number) 1234…", and an attribute map printed before its value as
// "1| \"key\" => value" lines (docs/cli.md).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "redmux/reply.hpp"

namespace redmux::cli {

/// JSON values with their keys in insertion order (a map's fields print as the server sent
/// them).
using Json = nlohmann::ordered_json;

/// redis-cli's terminal format (its cliFormatReplyTTY), ending in a newline.
std::string format_human(const Reply& reply);
/// redis-cli's raw format (cliFormatReplyRaw plus its "\n" delimiter), ending in a newline.
std::string format_raw(const Reply& reply);
/// The reply as a JSON value: strings, numbers (big numbers and non-finite doubles as
/// strings), true/false, null, arrays, objects for maps whose keys are all strings or
/// integers (else arrays of [key, value]), errors as {"error": "…"}.
Json to_json(const Reply& reply);
/// to_json(reply) as one line, ending in a newline.
std::string format_json(const Reply& reply);

/// An error reply as the formats show it: "(error) ERR …\n", "ERR …\n\n", {"error":"…"}.
std::string format_human_error(std::string_view message);
std::string format_raw_error(std::string_view message);
std::string format_json_error(std::string_view message);

/// True for the commands whose replies redis-cli prints in the raw format even on a terminal
/// (INFO, LOLWUT, CLIENT LIST/INFO, CLUSTER NODES/INFO, MEMORY DOCTOR/MALLOC-STATS, LATENCY
/// DOCTOR/GRAPH, the DEBUG reports): text meant to be read as it is, not as a quoted string.
bool printed_raw_by_redis_cli(const std::vector<std::string>& words);

/// `bytes` as text a JSON writer accepts: valid UTF-8 is kept, every other byte becomes the
/// character U+00XX (its Latin-1 reading), so no byte is dropped.
std::string utf8_text(std::string_view bytes);

}  // namespace redmux::cli
