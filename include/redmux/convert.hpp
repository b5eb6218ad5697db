// Conversions from a reply (a NodeSpan, root first) to typed results: the built-in
// ReplyTraits<T> specialisations, header-only so that every layer (and the futures) can
// instantiate them without linking the protocol library. This header gathers them:
// convert/scalars.hpp, convert/containers.hpp, and ReplyTraits<Reply> in reply.hpp; the
// messages are built in convert/description.hpp, numbers read in convert/numbers.hpp.
//
// RESP2 and RESP3 shapes convert alike. The rules, by requested type:
//   integral types   Integer; numeric simple/bulk/verbatim strings and big numbers that fit;
//                    Boolean as 0/1. Out of range is an error.
//   double           Double (inf, -inf, nan too), Integer, big numbers, numeric strings
//                    ("3.5", "inf" — RESP2 ZSCORE).
//   bool             Boolean; Integer 0 or 1; simple string "OK" → true; Null → false
//                    (SET … NX answers nil when it did nothing).
//   std::string      simple/bulk/verbatim strings (verbatim without "txt:"), big numbers,
//                    integers and doubles as their text. Null is an error: ask for
//                    std::optional<std::string>.
//   std::optional<T> Null → nullopt, anything else as T.
//   std::vector<T>   Array, Set, Push; a Map flattened to key, value, key, value … (the RESP2
//                    shape of HGETALL). Null is an error: ask for std::optional<std::vector>.
//   std::pair<A,B>   an aggregate of exactly 2 elements, or a Map of one pair.
//   std::vector<std::pair<K,V>>, std::map<K,V>, std::unordered_map<K,V>
//                    a Map, or an even-length flat Array/Set (RESP2), or an Array of
//                    2-element Arrays (RESP3 ZRANGE … WITHSCORES) — chosen when the first
//                    element is an Array of 2. Duplicate keys in maps: the last wins.
//   void             any reply that is not an error.
//   Reply            any reply that is not an error at the root; inside containers
//                    (std::vector<Reply> of an EXEC) error elements are kept as values.
// An error reply (SimpleError, BulkError) where a value was expected gives
// Error(errc::server_error, its message); any other mismatch gives
// Error(errc::unexpected_reply, `expected integer, got bulk string "abc"`), prefixed with the
// element's position inside containers (`element 2: …`).
//
// Thread-safety: pure functions of their input.
#pragma once

#include "redmux/convert/containers.hpp"
#include "redmux/convert/scalars.hpp"
#include "redmux/reply.hpp"
