// Result types of the typed commands that are more than a string or a number — a sorted-set
// member with its score, a page of SCAN, the server's clock, INFO and CLIENT LIST parsed —
// and their ReplyTraits, which accept both the RESP2 and the RESP3 shape of each reply.
//
// All types here are plain values that own their data: copy them, move them, read them from
// any thread (no internal synchronisation). The parsers are pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/convert.hpp"
#include "redmux/reply.hpp"

namespace redmux {

/// A sorted-set member and its score (ZRANGE … WITHSCORES, ZPOPMIN …).
struct ScoredMember {
  std::string member{};
  double score = 0;
  friend bool operator==(const ScoredMember&, const ScoredMember&) = default;
};

/// A hash field and its value (HRANDFIELD … WITHVALUES).
struct FieldValue {
  std::string field{};
  std::string value{};
  friend bool operator==(const FieldValue&, const FieldValue&) = default;
};

/// One page of a SCAN-family command: the cursor to ask for next (0 when the iteration is
/// complete) and the page's items. A page may be empty while the cursor is not 0.
template <class T>
struct ScanPageOf {
  std::uint64_t cursor = 0;
  std::vector<T> items{};
};
/// A page of SCAN: key names.
using ScanPage = ScanPageOf<std::string>;

/// What LMPOP answers: the list it popped from and the elements, head first.
struct ListPop {
  std::string key{};
  std::vector<std::string> elements{};
};

/// The server's clock (TIME): whole seconds and microseconds since the Unix epoch.
struct ServerTime {
  long long seconds = 0;
  long long microseconds = 0;
  /// The same instant as a system_clock time point.
  std::chrono::system_clock::time_point time_point() const noexcept {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(seconds) + std::chrono::microseconds(microseconds)));
  }
};

/// INFO parsed: section (lower case: "server", "clients", "keyspace" …) → field → value.
/// Values are kept as text; get_integer() / get_double() read numeric ones.
class InfoSections {
 public:
  using Fields = std::map<std::string, std::string, std::less<>>;
  using Sections = std::map<std::string, Fields, std::less<>>;

  /// Parses INFO's text ("# Server\r\nredis_version:7.0.15\r\n…"). Never fails: lines that
  /// are neither a "# Section" header nor "field:value" are skipped; fields before any
  /// header go to section "".
  static InfoSections parse(std::string_view text);

  /// The field's value, or nullopt. `section` is case-insensitive ("Server" == "server").
  std::optional<std::string_view> get(std::string_view section, std::string_view field) const;
  /// The field's value in whichever section has it first (sections in name order).
  std::optional<std::string_view> find(std::string_view field) const;
  /// The field as an integer; nullopt when missing or not a whole number.
  std::optional<long long> get_integer(std::string_view section, std::string_view field) const;
  /// The field as a double; nullopt when missing or not a number.
  std::optional<double> get_double(std::string_view section, std::string_view field) const;

  const Sections& sections() const noexcept { return sections_; }
  bool empty() const noexcept { return sections_.empty(); }

 private:
  Sections sections_;
};

/// One client connection as CLIENT LIST describes it. The common fields are typed (missing
/// ones keep their defaults); every field, known or not, is in `fields` as text.
struct ClientInfo {
  long long id = -1;
  std::string addr;    ///< "127.0.0.1:52555"
  std::string laddr;   ///< the server's side of the connection
  std::string name;    ///< empty when the client set none
  long long age = 0;   ///< seconds since the connection was made
  long long idle = 0;  ///< seconds since its last command
  std::string flags;   ///< "N", "x" (in MULTI), "P" (pub/sub) … see CLIENT LIST's docs
  int db = 0;
  std::string cmd;  ///< last command, "client|list" for subcommands
  std::string user;
  long long omem = 0;     ///< output buffer memory, bytes
  long long tot_mem = 0;  ///< total memory the connection uses, bytes ("tot-mem")
  int resp = 2;           ///< protocol version (7.0+)
  std::map<std::string, std::string, std::less<>> fields;

  /// A field's raw text by its CLIENT LIST name ("qbuf", "lib-name" …), or nullopt.
  std::optional<std::string_view> get(std::string_view field) const;

  /// Parses CLIENT LIST's text, one client per line ("id=3 addr=… cmd=client|list …").
  static std::vector<ClientInfo> parse_list(std::string_view text);
  /// Parses one line (also CLIENT INFO's answer).
  static ClientInfo parse(std::string_view line);
};

// --- Reply conversions --------------------------------------------------------------------

/// A [member, score] pair: 2-element array (RESP2: score as a bulk string; RESP3: double).
template <>
struct ReplyTraits<ScoredMember> {
  static Result<ScoredMember> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<std::string, double>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return ScoredMember{std::move(pair->first), pair->second};
  }
};

/// RESP2 flat [m1, s1, m2, s2 …], RESP3 [[m1, s1], [m2, s2] …], or a Map.
template <>
struct ReplyTraits<std::vector<ScoredMember>> {
  static Result<std::vector<ScoredMember>> convert(NodeSpan reply) {
    using Container = std::vector<ScoredMember>;
    return detail::convert_pairs<Container, std::string, double>(
        reply, "members with scores", [](Container& out, std::string&& m, double&& s) {
          out.push_back(ScoredMember{std::move(m), s});
        });
  }
};

template <>
struct ReplyTraits<std::vector<FieldValue>> {
  static Result<std::vector<FieldValue>> convert(NodeSpan reply) {
    using Container = std::vector<FieldValue>;
    return detail::convert_pairs<Container, std::string, std::string>(
        reply, "fields with values", [](Container& out, std::string&& f, std::string&& v) {
          out.push_back(FieldValue{std::move(f), std::move(v)});
        });
  }
};

/// [cursor as a bulk string, [items …]] (SCAN, and later HSCAN/SSCAN/ZSCAN).
template <class T>
struct ReplyTraits<ScanPageOf<T>> {
  static Result<ScanPageOf<T>> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<std::uint64_t, std::vector<T>>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return ScanPageOf<T>{pair->first, std::move(pair->second)};
  }
};

/// [key, [elements …]] (LMPOP; the caller asks for std::optional<ListPop> for the nil).
template <>
struct ReplyTraits<ListPop> {
  static Result<ListPop> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<std::string, std::vector<std::string>>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return ListPop{std::move(pair->first), std::move(pair->second)};
  }
};

/// [seconds, microseconds] as bulk strings.
template <>
struct ReplyTraits<ServerTime> {
  static Result<ServerTime> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<long long, long long>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return ServerTime{pair->first, pair->second};
  }
};

/// A bulk (RESP2) or verbatim (RESP3) string of INFO text.
template <>
struct ReplyTraits<InfoSections> {
  static Result<InfoSections> convert(NodeSpan reply) {
    auto text = ReplyTraits<std::string>::convert(reply);
    if (!text) return std::move(text).error();
    return InfoSections::parse(*text);
  }
};

/// A bulk (RESP2) or verbatim (RESP3) string of CLIENT LIST text.
template <>
struct ReplyTraits<std::vector<ClientInfo>> {
  static Result<std::vector<ClientInfo>> convert(NodeSpan reply) {
    auto text = ReplyTraits<std::string>::convert(reply);
    if (!text) return std::move(text).error();
    return ClientInfo::parse_list(*text);
  }
};

template <>
struct ReplyTraits<ClientInfo> {
  static Result<ClientInfo> convert(NodeSpan reply) {
    auto text = ReplyTraits<std::string>::convert(reply);
    if (!text) return std::move(text).error();
    return ClientInfo::parse(*text);
  }
};

}  // namespace redmux
