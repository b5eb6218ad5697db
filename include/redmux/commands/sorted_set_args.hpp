// Argument types of the sorted-set commands: score and lex bounds, ZRANGE queries, ZADD and
// ZUNIONSTORE/ZINTERSTORE options. Plain values; not synchronised. Included by
// sorted_sets.hpp.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "redmux/commands/sink.hpp"
#include "redmux/commands/strings.hpp"  // SetCondition

namespace redmux {

/// One end of a score interval: inclusive by default (`1.5` → "1.5"), exclusive on request
/// ("(1.5"); ScoreBound::min()/max() are -inf/+inf. Converts implicitly from double.
class ScoreBound {
 public:
  ScoreBound(double score) noexcept
      : ScoreBound(score, false) {}  // NOLINT(google-explicit-constructor)
  static ScoreBound inclusive(double score) noexcept { return ScoreBound(score, false); }
  static ScoreBound exclusive(double score) noexcept { return ScoreBound(score, true); }
  static ScoreBound min() noexcept { return ScoreBound(-std::numeric_limits<double>::infinity()); }
  static ScoreBound max() noexcept { return ScoreBound(std::numeric_limits<double>::infinity()); }

  /// The argument text ("(1.5", "-inf" …); valid while this object lives.
  std::string_view text() const noexcept { return {buf_, length_}; }

  ScoreBound(const ScoreBound& other) noexcept { *this = other; }
  ScoreBound& operator=(const ScoreBound& other) noexcept {
    std::copy(other.buf_, other.buf_ + other.length_, buf_);
    length_ = other.length_;
    return *this;
  }

 private:
  ScoreBound(double score, bool exclusive) noexcept {
    char* p = buf_;
    if (exclusive) *p++ = '(';
    p = std::to_chars(p, buf_ + sizeof buf_, score).ptr;
    length_ = static_cast<std::size_t>(p - buf_);
  }
  char buf_[32];
  std::size_t length_ = 0;
};

/// One end of a lexicographic interval (ZRANGE … BYLEX): "[a" inclusive, "(a" exclusive,
/// LexBound::min()/max() are "-"/"+".
class LexBound {
 public:
  static LexBound inclusive(std::string_view member) { return LexBound('[', member); }
  static LexBound exclusive(std::string_view member) { return LexBound('(', member); }
  static LexBound min() { return LexBound("-"); }
  static LexBound max() { return LexBound("+"); }
  std::string_view text() const noexcept { return text_; }

 private:
  explicit LexBound(std::string text) : text_(std::move(text)) {}
  LexBound(char prefix, std::string_view member) : text_(1, prefix) { text_.append(member); }
  std::string text_;
};

/// What ZRANGE / ZRANGESTORE select: by rank (index), by score or lexicographically,
/// optionally reversed and paged.
///   ZRange::by_rank(0, -1)                                   // all, lowest score first
///   ZRange::by_score(ScoreBound::exclusive(1), ScoreBound::max()).limit(0, 10)
///   ZRange::by_score(0, 100).reversed()                      // highest first
class ZRange {
 public:
  /// Ranks `start`..`stop` inclusive; negative counts from the end. Reversed, ranks count
  /// from the highest score.
  static ZRange by_rank(long long start, long long stop) {
    return ZRange(Kind::Rank, Arg(start).bytes(), Arg(stop).bytes());
  }
  /// Scores in [min, max] (bounds may be exclusive). Always lower bound first, even when
  /// reversed (redmux swaps them for the server).
  static ZRange by_score(ScoreBound min, ScoreBound max) {
    return ZRange(Kind::Score, min.text(), max.text());
  }
  /// Members between `min` and `max` (all members should share one score).
  static ZRange by_lex(const LexBound& min, const LexBound& max) {
    return ZRange(Kind::Lex, min.text(), max.text());
  }
  /// Highest score first (REV).
  ZRange& reversed() & noexcept {
    reverse_ = true;
    return *this;
  }
  ZRange&& reversed() && noexcept { return std::move(reversed()); }
  /// Skip `offset` matches and return at most `count` (negative: all). LIMIT; by score or
  /// lex only (the server rejects it by rank).
  ZRange& limit(long long offset, long long count) & noexcept {
    offset_ = offset;
    count_ = count;
    return *this;
  }
  ZRange&& limit(long long offset, long long count) && noexcept {
    return std::move(limit(offset, count));
  }

  /// Appends "start stop [BYSCORE|BYLEX] [REV] [LIMIT o c]" to `args`. The arguments view
  /// this object: keep it alive until the command is sent.
  void append_to(detail::ArgList& args) const {
    const bool swap = reverse_ && kind_ != Kind::Rank;
    args.add(std::string_view(swap ? stop_ : start_));
    args.add(std::string_view(swap ? start_ : stop_));
    if (kind_ == Kind::Score) args.add("BYSCORE");
    if (kind_ == Kind::Lex) args.add("BYLEX");
    if (reverse_) args.add("REV");
    if (offset_) {
      args.add("LIMIT");
      args.add(*offset_);
      args.add(count_);
    }
  }

 private:
  enum class Kind : unsigned char { Rank, Score, Lex };
  ZRange(Kind kind, std::string_view start, std::string_view stop)
      : kind_(kind), start_(start), stop_(stop) {}
  Kind kind_;
  std::string start_;
  std::string stop_;
  bool reverse_ = false;
  std::optional<long long> offset_;
  long long count_ = -1;
};

/// ZADD's comparison with the current score (GT/LT; Redis 6.2+).
enum class ScoreCondition : unsigned char {
  Always,
  IfGreater,  ///< GT: only update when the new score is greater
  IfLess,     ///< LT: only when it is less
};

/// Options of ZADD.
struct ZAddOptions {
  SetCondition condition = SetCondition::Always;  ///< NX: only add; XX: only update
  ScoreCondition score_condition = ScoreCondition::Always;
  bool changed = false;  ///< CH: count updated members too, not only added ones
};

/// How ZUNIONSTORE/ZINTERSTORE combine the scores of a member found in several sets.
enum class ZAggregate : unsigned char { Sum, Min, Max };

/// Options of ZUNIONSTORE/ZINTERSTORE.
struct ZStoreOptions {
  std::span<const double> weights{};  ///< WEIGHTS, one per key; empty: all 1
  ZAggregate aggregate = ZAggregate::Sum;
};

}  // namespace redmux
