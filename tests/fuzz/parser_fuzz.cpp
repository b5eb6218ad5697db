// libFuzzer target for resp::Parser. For each input it checks that:
//  - parsing never crashes, hangs or trips a sanitizer, and every reply converts (or fails
//    to convert) cleanly to the common result types;
//  - each completed reply is well formed (pre-order depths, sizes, views inside the input);
//  - feeding the same bytes in pieces (sizes taken from the input itself) gives exactly the
//    same replies and the same failure as feeding them at once.
// Small limits are used so that every limit path is reachable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/convert.hpp"
#include "redmux/reply.hpp"
#include "resp/parser.hpp"

namespace {

using redmux::Node;
using redmux::NodeSpan;
using redmux::Reply;
using redmux::resp::Parser;
using redmux::resp::ParserLimits;
using redmux::resp::ParseStatus;

ParserLimits small_limits() {
  ParserLimits limits;
  limits.max_bulk_length = 4096;
  limits.max_aggregate_elements = 1024;
  limits.max_depth = 32;
  limits.max_line_length = 256;
  return limits;
}

void check(bool ok) {
  if (!ok) std::abort();
}

/// Pre-order well-formedness: every aggregate has exactly `size` children (2×size for maps).
std::size_t check_tree(NodeSpan nodes, std::size_t at) {
  check(at < nodes.size());
  const Node& node = nodes[at];
  std::size_t next = at + 1;
  if (!redmux::is_aggregate(node.type)) {
    check(node.value.size() == node.size);
    return next;
  }
  const std::size_t children =
      (node.type == redmux::ReplyType::Map || node.type == redmux::ReplyType::Attribute)
          ? node.size * 2
          : node.size;
  for (std::size_t i = 0; i < children; ++i) {
    check(next < nodes.size() && nodes[next].depth == node.depth + 1);
    next = check_tree(nodes, next);
  }
  return next;
}

struct Outcome {
  std::vector<std::string> replies;
  bool failed = false;
  std::string error;
};

void exercise_conversions(NodeSpan nodes) {
  (void)redmux::from_nodes<long long>(nodes);
  (void)redmux::from_nodes<unsigned>(nodes);
  (void)redmux::from_nodes<double>(nodes);
  (void)redmux::from_nodes<bool>(nodes);
  (void)redmux::from_nodes<std::optional<std::string>>(nodes);
  (void)redmux::from_nodes<std::vector<std::string>>(nodes);
  (void)redmux::from_nodes<std::map<std::string, std::vector<long long>>>(nodes);
  (void)redmux::from_nodes<std::vector<std::pair<std::string, double>>>(nodes);
  (void)redmux::from_nodes<void>(nodes);
}

Outcome parse_whole(std::string_view data) {
  Outcome outcome;
  Parser parser(small_limits());
  std::string_view rest = data;
  for (;;) {
    ParseStatus status = parser.parse(rest);
    if (status == ParseStatus::NeedMore) break;
    if (status == ParseStatus::Failed) {
      outcome.failed = true;
      outcome.error = parser.error().message();
      check(parser.close_error().message() == outcome.error);
      break;
    }
    check(parser.consumed() > 0 && parser.consumed() <= rest.size());
    NodeSpan nodes = parser.nodes();
    check(!nodes.empty() && nodes[0].depth == 0);
    check(check_tree(nodes, 0) == nodes.size());
    for (std::size_t at = 0; at < parser.attributes().size();) {
      check(parser.attributes()[at].depth == 0);
      at = check_tree(parser.attributes(), at);
    }
    exercise_conversions(nodes);
    Reply reply = Reply::from_nodes(nodes, parser.attributes());
    check(Reply::from_nodes(reply.nodes()).to_string() == Reply::from_nodes(nodes).to_string());
    outcome.replies.push_back(reply.to_string());
    rest.remove_prefix(parser.consumed());
  }
  return outcome;
}

/// The same stream fed in pieces whose sizes come from `sizes`, buffer moved every call.
Outcome parse_split(std::string_view data, std::string_view sizes) {
  Outcome outcome;
  Parser parser(small_limits());
  std::string buffer;
  std::size_t fed = 0;
  std::size_t piece = 0;
  while (fed < data.size()) {
    std::size_t n =
        sizes.empty() ? 1 : static_cast<unsigned char>(sizes[piece++ % sizes.size()]) % 17 + 1;
    n = std::min(n, data.size() - fed);
    buffer.append(data.substr(fed, n));
    fed += n;
    for (;;) {
      std::string moved = buffer;  // a new address every call
      ParseStatus status = parser.parse(moved);
      if (status == ParseStatus::NeedMore) break;
      if (status == ParseStatus::Failed) {
        outcome.failed = true;
        outcome.error = parser.error().message();
        return outcome;
      }
      outcome.replies.push_back(Reply::from_nodes(parser.nodes(), parser.attributes()).to_string());
      buffer.erase(0, parser.consumed());
    }
  }
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Outcome whole = parse_whole(input);
  // Split sizes from the input's tail bytes, so the fuzzer explores splits too.
  Outcome split = parse_split(input, input.substr(size > 8 ? size - 8 : 0));
  check(whole.replies == split.replies);
  check(whole.failed == split.failed);
  check(whole.error == split.error);
  return 0;
}
