// ScanRange: a lazy, resumable walk over a SCAN-family cursor (SCAN, HSCAN, SSCAN, ZSCAN), one
// page per server round trip, usable in a range-for from an ordinary thread:
//
//   for (const std::string& key : redmux::scan_keys(db, {.pattern = "user:*", .page_size = 500}))
//     …
//   for (const FieldValue& fv : redmux::scan_hash(db, "user:1")) …
//
// Never KEYS/HGETALL/SMEMBERS: each page is a bounded amount of server work. What a walk
// guarantees is SCAN's: an element present for the whole walk is yielded at least once;
// elements added or removed meanwhile may or may not be. An element may be yielded more than
// once when the collection is resized (shrunk) during the walk — on a collection nobody
// changes, each element comes exactly once. In a cluster a key walk holds to this only while
// no slot moves and no failover happens (KeyCommands::scan()). `skip_duplicates()` makes it exactly
// once regardless, at the cost of remembering every key, field or member yielded (memory grows with
// the walk).
//
// Resuming: `cursor()` is the cursor of the next page (0 once complete) — a new range started
// from it continues after the current page, skipping what is left of that page;
// `page_cursor()` is the cursor of the current page — starting from it yields that page
// again, so nothing is skipped (at-least-once processing that survives a restart).
//
// Ownership and threads: a ScanRange owns its fetcher (a copy of the sink, or a pointer to a
// non-copyable one) and the current page; one range must be used by one thread at a time.
// Iterating blocks the thread on each page (Future::get()), so it must not run on one of
// redmux's I/O threads (DeadlockError), nor over a Batch (whose replies arrive only after
// execute()). A failing page (a wrong type …) throws the typed error from the iterator's ++
// (or begin()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "redmux/commands/keys.hpp"
#include "redmux/types.hpp"

namespace redmux {

namespace detail {
/// What identifies an element for skip_duplicates(): a key or member, a hash's field.
inline std::string_view scan_identity(const std::string& key) noexcept {
  return key;
}
inline std::string_view scan_identity(const FieldValue& item) noexcept {
  return item.field;
}
inline std::string_view scan_identity(const ScoredMember& item) noexcept {
  return item.member;
}
}  // namespace detail

/// Walks the pages `fetch(cursor)` returns (a Future<ScanPageOf<T>>) from `cursor` until
/// the server's cursor comes back 0. Generic over the SCAN-family command: scan_keys(),
/// scan_hash(), scan_set() and scan_sorted_set() below pass the fetcher.
template <class Fetch>
class ScanRange {
 public:
  using Page = decltype(std::declval<Fetch&>()(std::uint64_t{}).get());
  using value_type = typename decltype(Page::items)::value_type;

  explicit ScanRange(Fetch fetch, std::uint64_t cursor = 0)
      : fetch_(std::move(fetch)), page_cursor_(cursor), next_cursor_(cursor) {}

  /// Yields each element at most once, even if the server returns it on several pages
  /// (remembers every one yielded). Call before iterating.
  ///   for (auto& key : scan_keys(db).skip_duplicates()) …
  ScanRange& skip_duplicates() & {
    skip_duplicates_ = true;
    return *this;
  }
  ScanRange skip_duplicates() && {
    skip_duplicates_ = true;
    return std::move(*this);
  }

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = ScanRange::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    iterator() = default;
    reference operator*() const { return range_->page_[range_->index_]; }
    pointer operator->() const { return &**this; }
    iterator& operator++() {
      range_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
      return it.finished();
    }

   private:
    friend class ScanRange;
    explicit iterator(ScanRange* range) : range_(range) {}
    bool finished() const noexcept { return range_ == nullptr || range_->at_end(); }
    ScanRange* range_ = nullptr;
  };

  /// Fetches pages until one is non-empty (or the walk ends). Call once per range.
  iterator begin() {
    if (!started_) {
      started_ = true;
      fill();
    }
    return iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return {}; }

  /// The cursor to pass to a new range to continue after the current page: 0 once the
  /// walk is complete. Items of the current page not yet reached are not revisited by it.
  /// After a fetch that failed (the iterator threw), cursor() is the cursor of the page that
  /// failed: a new range from it (or incrementing this one again) fetches that page again.
  /// It is 0 when the first page failed, which done() (false) tells from a complete walk.
  std::uint64_t cursor() const noexcept { return next_cursor_; }
  /// The cursor the current page was fetched with: a new range started from it yields the
  /// current page again (nothing skipped, some items repeated).
  std::uint64_t page_cursor() const noexcept { return page_cursor_; }
  /// True once every page has been fetched and consumed.
  bool done() const noexcept { return started_ && at_end(); }
  /// Server round trips so far.
  std::size_t pages_fetched() const noexcept { return pages_fetched_; }

 private:
  bool at_end() const noexcept { return index_ >= page_.size() && finished_; }
  void advance() {
    ++index_;
    if (index_ >= page_.size()) fill();
  }
  // Fetches until a page has items or the server's cursor is 0. A page may be empty while
  // the cursor is not (MATCH/TYPE filter after the server's COUNT work).
  void fill() {
    while (index_ >= page_.size() && !finished_) {
      Page page = fetch_(next_cursor_).get();
      ++pages_fetched_;
      page_cursor_ = next_cursor_;
      next_cursor_ = page.cursor;
      finished_ = page.cursor == 0;
      page_ = std::move(page.items);
      index_ = 0;
      if (skip_duplicates_) {
        std::erase_if(page_, [this](const value_type& item) {
          return !seen_.emplace(detail::scan_identity(item)).second;
        });
      }
    }
  }

  Fetch fetch_;
  std::vector<value_type> page_;
  std::size_t index_ = 0;
  std::uint64_t page_cursor_ = 0;
  std::uint64_t next_cursor_ = 0;
  std::size_t pages_fetched_ = 0;
  bool started_ = false;
  bool finished_ = false;
  bool skip_duplicates_ = false;
  std::unordered_set<std::string> seen_;  ///< with skip_duplicates_: every identity yielded
};

namespace detail {

/// A copy of a copyable sink (Database), else a pointer to it (it must outlive the range).
template <class Sink>
class SinkRef {
 public:
  explicit SinkRef(Sink& sink) : sink_(init(sink)) {}
  Sink& get() {
    if constexpr (std::is_copy_constructible_v<Sink>) {
      return sink_;
    } else {
      return *sink_;
    }
  }

 private:
  using Held = std::conditional_t<std::is_copy_constructible_v<Sink>, Sink, Sink*>;
  static Held init(Sink& sink) {
    if constexpr (std::is_copy_constructible_v<Sink>) {
      return sink;
    } else {
      return &sink;
    }
  }
  Held sink_;
};

/// The sink a range over `Sink&&` (a scan function's argument) holds: a temporary only when
/// the range can keep a copy of it (`scan_keys(mux->database(3))`).
template <class Sink>
using HeldSink = std::remove_reference_t<Sink>;
template <class Sink>
inline constexpr bool kHoldable =
    std::is_lvalue_reference_v<Sink> || std::is_copy_constructible_v<std::remove_cvref_t<Sink>>;

/// The fetcher of HSCAN/SSCAN/ZSCAN: `page(sink, key, cursor, options, call)` sends one.
/// The key and pattern are copied: the range usually outlives the caller's arguments.
template <class Sink, class Page>
struct ElementFetch {
  SinkRef<Sink> sink;
  std::string key;
  std::string pattern;
  long long page_size;
  CallOptions call;
  Page page;
  auto operator()(std::uint64_t at) {
    return page(sink.get(), std::string_view(key), at, ElementScanOptions{pattern, page_size},
                call);
  }
};

template <class Sink, class Page>
ScanRange<ElementFetch<Sink, Page>> element_range(Sink& sink, std::string_view key,
                                                  const ElementScanOptions& options,
                                                  std::uint64_t cursor, const CallOptions& call,
                                                  Page page) {
  return ScanRange<ElementFetch<Sink, Page>>(
      ElementFetch<Sink, Page>{SinkRef<Sink>(sink), std::string(key), std::string(options.pattern),
                               options.page_size, call, page},
      cursor);
}

}  // namespace detail

/// Every key matching `options` (SCAN … MATCH … COUNT … TYPE …), starting at `cursor`.
/// `sink` (a Database …) is copied when copyable, else referenced (it must then outlive
/// the range; a temporary one must be copyable: `scan_keys(mux->database(3))`). `call`
/// applies to every page's SCAN.
///   for (const std::string& key : scan_keys(db, {.pattern = "user:*", .type = "hash"})) …
template <class Sink>
requires(detail::kHoldable<Sink>) auto scan_keys(Sink&& sink, ScanOptions options = {},
                                                 std::uint64_t cursor = 0, CallOptions call = {}) {
  using S = detail::HeldSink<Sink>;
  // The pattern and type are copied: the range usually outlives the caller's arguments.
  struct Fetch {
    detail::SinkRef<S> sink;
    std::string pattern;
    std::string type;
    long long page_size;
    CallOptions call;
    auto operator()(std::uint64_t at) {
      return sink.get().scan(at, ScanOptions{pattern, page_size, type}, call);
    }
  };
  return ScanRange<Fetch>(Fetch{detail::SinkRef<S>(sink), std::string(options.pattern),
                                std::string(options.type), options.page_size, call},
                          cursor);
}

/// Every field of the hash at `key` with its value (HSCAN … MATCH … COUNT …), lazily.
///   for (const FieldValue& fv : scan_hash(db, "user:1")) …
template <class Sink>
requires(detail::kHoldable<Sink>) auto scan_hash(Sink&& sink, std::string_view key,
                                                 ElementScanOptions options = {},
                                                 std::uint64_t cursor = 0, CallOptions call = {}) {
  return detail::element_range(
      sink, key, options, cursor, call,
      [](detail::HeldSink<Sink>& s, std::string_view k, std::uint64_t at, ElementScanOptions o,
         const CallOptions& c) { return s.hscan(k, at, o, c); });
}

/// Every field of the hash at `key` without its value (HSCAN … NOVALUES: Valkey 8, Redis 7.4;
/// an older server's refusal is the ServerError the first page throws), lazily.
///   for (const std::string& field : scan_hash_fields(db, "user:1")) …
template <class Sink>
requires(detail::kHoldable<Sink>) auto scan_hash_fields(Sink&& sink, std::string_view key,
                                                        ElementScanOptions options = {},
                                                        std::uint64_t cursor = 0,
                                                        CallOptions call = {}) {
  return detail::element_range(
      sink, key, options, cursor, call,
      [](detail::HeldSink<Sink>& s, std::string_view k, std::uint64_t at, ElementScanOptions o,
         const CallOptions& c) { return s.hscan_fields(k, at, o, c); });
}

/// Every member of the set at `key` (SSCAN …), lazily.
template <class Sink>
requires(detail::kHoldable<Sink>) auto scan_set(Sink&& sink, std::string_view key,
                                                ElementScanOptions options = {},
                                                std::uint64_t cursor = 0, CallOptions call = {}) {
  return detail::element_range(
      sink, key, options, cursor, call,
      [](detail::HeldSink<Sink>& s, std::string_view k, std::uint64_t at, ElementScanOptions o,
         const CallOptions& c) { return s.sscan(k, at, o, c); });
}

/// Every member of the sorted set at `key` with its score (ZSCAN …), lazily. Not in score
/// order: in the server's internal order, like every SCAN.
template <class Sink>
requires(detail::kHoldable<Sink>) auto scan_sorted_set(Sink&& sink, std::string_view key,
                                                       ElementScanOptions options = {},
                                                       std::uint64_t cursor = 0,
                                                       CallOptions call = {}) {
  return detail::element_range(
      sink, key, options, cursor, call,
      [](detail::HeldSink<Sink>& s, std::string_view k, std::uint64_t at, ElementScanOptions o,
         const CallOptions& c) { return s.zscan(k, at, o, c); });
}

/// Every member of the sorted set at `key` without its score (ZSCAN … NOSCORES: Valkey 8;
/// Redis's refusal is the ServerError the first page throws), lazily.
template <class Sink>
requires(detail::kHoldable<Sink>) auto scan_sorted_set_members(Sink&& sink, std::string_view key,
                                                               ElementScanOptions options = {},
                                                               std::uint64_t cursor = 0,
                                                               CallOptions call = {}) {
  return detail::element_range(
      sink, key, options, cursor, call,
      [](detail::HeldSink<Sink>& s, std::string_view k, std::uint64_t at, ElementScanOptions o,
         const CallOptions& c) { return s.zscan_members(k, at, o, c); });
}

}  // namespace redmux
