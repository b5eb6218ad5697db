#include "cache/client_cache.hpp"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include "resp/parser.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using Clock = ClientCache::Clock;

/// One parsed reply, kept alive with its bytes (the nodes view them).
struct Parsed {
  explicit Parsed(std::string bytes) : text(std::move(bytes)) {
    EXPECT_EQ(parser.parse(text), resp::ParseStatus::Complete) << text;
  }
  NodeSpan nodes() const { return parser.nodes(); }
  std::string text;
  resp::Parser parser;
};

/// A read of `key` as the multiplexer would look it up: GET key on database 0.
struct Read {
  explicit Read(std::string k, std::string command = "GET", int database = 0)
      : key(std::move(k)), name(std::move(command)), db(database) {
    args = {Arg(name), Arg(key)};
    ClientCache::identity_of(db, args, identity);
  }
  std::string key;
  std::string name;
  int db;
  std::vector<Arg> args;
  std::string identity;
};

class ClientCacheTest : public ::testing::Test {
 protected:
  ClientCacheTest() { cache.set_active(true); }

  ClientCache::Lookup look(const Read& read, Clock::time_point at) {
    return cache.lookup(read.db, read.args, read.key, at, out);
  }
  /// A whole fill: lookup, PTTL answer, reply. True when stored.
  bool fill(const Read& read, const Parsed& reply, long long pttl = -1) {
    const ClientCache::Lookup lookup = look(read, t0);
    EXPECT_EQ(lookup.outcome, ClientCache::Lookup::Outcome::Fill);
    cache.note_ttl(read.key, read.identity, lookup.ticket, pttl);
    return cache.complete_fill(read.key, read.identity, lookup.ticket, reply.nodes(), t0);
  }

  ClientCache cache{1 << 20, 60s};
  CachedReply out;
  const Clock::time_point t0 = Clock::now();
};

TEST_F(ClientCacheTest, AStoredReplyIsServedAsItWasRead) {
  const Read read("k");
  const Parsed value("$5\r\nhello\r\n");
  ASSERT_TRUE(fill(read, value));
  ASSERT_EQ(look(read, t0 + 1ms).outcome, ClientCache::Lookup::Outcome::Hit);
  ASSERT_EQ(out.nodes.size(), 1u);
  EXPECT_EQ(out.nodes[0].type, ReplyType::BulkString);
  EXPECT_EQ(out.nodes[0].value, "hello");
  // An aggregate, and a verbatim string (whose "fmt:" bytes before the value are kept).
  const Read all("h", "HGETALL");
  const Parsed map("%2\r\n$1\r\na\r\n=7\r\ntxt:one\r\n$1\r\nb\r\n:2\r\n");
  ASSERT_TRUE(fill(all, map));
  ASSERT_EQ(look(all, t0).outcome, ClientCache::Lookup::Outcome::Hit);
  ASSERT_EQ(out.nodes.size(), 5u);
  EXPECT_EQ(out.nodes[0].type, ReplyType::Map);
  EXPECT_EQ(out.nodes[2].value, "one");
  EXPECT_EQ(verbatim_format(out.nodes[2]), "txt");
  EXPECT_EQ(out.nodes[4].value, "2");
  const CacheTally tally = cache.tally();
  EXPECT_EQ(tally.hits, 2u);
  EXPECT_EQ(tally.misses, 2u);
  EXPECT_EQ(tally.entries, 2u);
}

// The fill race: an invalidation that arrives between the read's lookup (before it is
// written) and its reply means the reply may hold the old value: it is not stored.
TEST_F(ClientCacheTest, AnInvalidationBetweenTheReadAndItsReplyRefusesTheFill) {
  const Read read("k");
  const ClientCache::Lookup lookup = look(read, t0);
  ASSERT_EQ(lookup.outcome, ClientCache::Lookup::Outcome::Fill);
  cache.note_ttl(read.key, read.identity, lookup.ticket, -1);
  cache.invalidate("k");
  const Parsed old_value("$3\r\nold\r\n");
  EXPECT_FALSE(cache.complete_fill(read.key, read.identity, lookup.ticket, old_value.nodes(), t0));
  EXPECT_EQ(cache.tally().refused, 1u);
  EXPECT_EQ(cache.tally().entries, 0u);
  // The next read misses (and fills anew): the old value was never served.
  EXPECT_EQ(look(read, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  // A later fill of the same read does not let an earlier ticket's reply in either.
  EXPECT_FALSE(cache.complete_fill(read.key, read.identity, lookup.ticket, old_value.nodes(), t0));
}

TEST_F(ClientCacheTest, AReadWhileAnotherFillsGoesOutPlainAndTheFirstFillStillStores) {
  const Read read("k");
  const ClientCache::Lookup first = look(read, t0);
  ASSERT_EQ(first.outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(look(read, t0).outcome, ClientCache::Lookup::Outcome::Plain);
  cache.note_ttl(read.key, read.identity, first.ticket, -1);
  const Parsed value("$1\r\nv\r\n");
  EXPECT_TRUE(cache.complete_fill(read.key, read.identity, first.ticket, value.nodes(), t0));
}

TEST_F(ClientCacheTest, AnInvalidationDropsEveryReadOfTheKeyInEveryDatabase) {
  const Parsed value("$1\r\nv\r\n");
  const Read get("k"), strlen_read("k", "STRLEN"), other_db("k", "GET", 3), other("x");
  ASSERT_TRUE(fill(get, value));
  ASSERT_TRUE(fill(strlen_read, Parsed(":1\r\n")));
  ASSERT_TRUE(fill(other_db, value));
  ASSERT_TRUE(fill(other, value));
  cache.invalidate("k");
  EXPECT_EQ(look(get, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(look(strlen_read, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(look(other_db, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(look(other, t0).outcome, ClientCache::Lookup::Outcome::Hit);
}

// Redis Cluster: a node that no longer serves a slot loses the entries (and the fills in
// progress) of that slot's keys, and only those.
TEST_F(ClientCacheTest, InvalidateWhereDropsTheChosenKeysWithTheirFillsAndKeepsTheRest) {
  const Parsed value("$1\r\nv\r\n");
  const Read moved("{a}1"), moved_too("{a}2", "STRLEN"), kept("{b}1"), filling("{a}3");
  ASSERT_TRUE(fill(moved, value));
  ASSERT_TRUE(fill(moved_too, Parsed(":1\r\n")));
  ASSERT_TRUE(fill(kept, value));
  const ClientCache::Lookup pending = look(filling, t0);
  cache.note_ttl(filling.key, filling.identity, pending.ticket, -1);
  const std::uint64_t invalidations = cache.tally().invalidations;
  EXPECT_EQ(cache.invalidate_where([](std::string_view key) { return key.starts_with("{a}"); }),
            3u);
  EXPECT_EQ(cache.tally().invalidations, invalidations + 3);
  EXPECT_FALSE(
      cache.complete_fill(filling.key, filling.identity, pending.ticket, value.nodes(), t0));
  EXPECT_EQ(look(moved, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(look(moved_too, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(look(kept, t0).outcome, ClientCache::Lookup::Outcome::Hit);
  EXPECT_EQ(cache.tally().entries, 1u);
}

// A nil invalidation (FLUSHALL, FLUSHDB) and a session's end drop everything, fills too;
// an inactive cache serves nothing and fills nothing.
TEST_F(ClientCacheTest, ANilInvalidationAndABreakDropEverythingWithTheFillsInProgress) {
  const Parsed value("$1\r\nv\r\n");
  const Read a("a"), b("b");
  ASSERT_TRUE(fill(a, value));
  const ClientCache::Lookup pending = look(b, t0);
  cache.note_ttl(b.key, b.identity, pending.ticket, -1);
  cache.invalidate_all();
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_FALSE(cache.complete_fill(b.key, b.identity, pending.ticket, value.nodes(), t0));
  EXPECT_EQ(look(a, t0).outcome, ClientCache::Lookup::Outcome::Fill);

  ASSERT_TRUE(fill(b, value));
  const ClientCache::Lookup in_flight = look(Read("c"), t0);
  cache.set_active(false);  // the connection broke
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(look(b, t0).outcome, ClientCache::Lookup::Outcome::Plain);
  const Read c("c");
  EXPECT_FALSE(cache.complete_fill(c.key, c.identity, in_flight.ticket, value.nodes(), t0));
  cache.set_active(true);  // a new session: still nothing from the old one
  EXPECT_EQ(look(b, t0).outcome, ClientCache::Lookup::Outcome::Fill);
}

// An entry never outlives the key's TTL on the server (from the PTTL sent with the read,
// counted from when the read was looked up), nor clientCacheMaxTtl.
TEST_F(ClientCacheTest, AnEntryLivesAtMostTheServersTtlAndTheMaximum) {
  ClientCache capped(1 << 20, 50ms);
  capped.set_active(true);
  const Parsed value("$1\r\nv\r\n");
  auto fill_into = [&](ClientCache& into, const Read& read, long long pttl) {
    const ClientCache::Lookup lookup = into.lookup(read.db, read.args, read.key, t0, out);
    into.note_ttl(read.key, read.identity, lookup.ticket, pttl);
    return into.complete_fill(read.key, read.identity, lookup.ticket, value.nodes(), t0);
  };
  const Read server_ttl("s"), no_ttl("n"), long_ttl("l"), expiring("e"), unknown("u");
  ASSERT_TRUE(fill_into(capped, server_ttl, 20));
  ASSERT_TRUE(fill_into(capped, no_ttl, -1));
  ASSERT_TRUE(fill_into(capped, long_ttl, 3'600'000));
  EXPECT_FALSE(fill_into(capped, expiring, 0));
  {  // no PTTL answer at all (refused): not stored
    const ClientCache::Lookup lookup = capped.lookup(0, unknown.args, unknown.key, t0, out);
    EXPECT_FALSE(
        capped.complete_fill(unknown.key, unknown.identity, lookup.ticket, value.nodes(), t0));
  }
  auto at = [&](const Read& read, std::chrono::milliseconds after) {
    return capped.lookup(0, read.args, read.key, t0 + after, out).outcome;
  };
  EXPECT_EQ(at(server_ttl, 19ms), ClientCache::Lookup::Outcome::Hit);
  EXPECT_EQ(at(server_ttl, 20ms), ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(at(no_ttl, 49ms), ClientCache::Lookup::Outcome::Hit);
  EXPECT_EQ(at(no_ttl, 50ms), ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(at(long_ttl, 50ms), ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(capped.tally().expired, 3u);
}

// bytes() is the exact sum of the charges; a store past the bound evicts the least recently
// used entries first; a reply larger than the whole bound is not stored.
TEST_F(ClientCacheTest, MemoryIsCountedExactlyAndBoundedByEvictingTheLeastRecentlyUsed) {
  const Parsed value("$10\r\n0123456789\r\n");
  const Read a("a"), b("b"), c("c");
  const std::size_t one = ClientCache::charge_of(1, a.identity.size(), 1, 10);
  ClientCache small(3 * one - 1, 60s);  // room for two entries and a fill, not three
  small.set_active(true);
  auto fill_into = [&](const Read& read) {
    const ClientCache::Lookup lookup = small.lookup(0, read.args, read.key, t0, out);
    if (lookup.outcome != ClientCache::Lookup::Outcome::Fill) return false;
    small.note_ttl(read.key, read.identity, lookup.ticket, -1);
    return small.complete_fill(read.key, read.identity, lookup.ticket, value.nodes(), t0);
  };
  ASSERT_TRUE(fill_into(a));
  EXPECT_EQ(small.bytes(), one);
  ASSERT_TRUE(fill_into(b));
  EXPECT_EQ(small.bytes(), 2 * one);
  ASSERT_EQ(small.lookup(0, a.args, a.key, t0, out).outcome,
            ClientCache::Lookup::Outcome::Hit);  // a is now the most recently used
  ASSERT_TRUE(fill_into(c));                     // evicts b
  EXPECT_EQ(small.bytes(), 2 * one);
  EXPECT_EQ(small.tally().evictions, 1u);
  EXPECT_EQ(small.lookup(0, a.args, a.key, t0, out).outcome, ClientCache::Lookup::Outcome::Hit);
  EXPECT_EQ(small.lookup(0, c.args, c.key, t0, out).outcome, ClientCache::Lookup::Outcome::Hit);
  EXPECT_EQ(small.lookup(0, b.args, b.key, t0, out).outcome, ClientCache::Lookup::Outcome::Fill);
  EXPECT_EQ(small.bytes(), 2 * one + ClientCache::charge_of(1, b.identity.size(), 0, 0));
  small.abandon_fill(b.key, b.identity, 0);  // a wrong ticket removes nothing
  small.invalidate("a");
  small.invalidate("c");
  EXPECT_EQ(small.bytes(), ClientCache::charge_of(1, b.identity.size(), 0, 0));  // b's fill
  const std::string big(4 * one, 'x');
  const Parsed huge("$" + std::to_string(big.size()) + "\r\n" + big + "\r\n");
  const Read h("h");
  const ClientCache::Lookup lookup = small.lookup(0, h.args, h.key, t0, out);
  small.note_ttl(h.key, h.identity, lookup.ticket, -1);
  EXPECT_FALSE(small.complete_fill(h.key, h.identity, lookup.ticket, huge.nodes(), t0));
  EXPECT_EQ(small.bytes(), ClientCache::charge_of(1, b.identity.size(), 0, 0));
}

// bytes() is what the cache holds on the heap, as the allocator itself counts it (mallinfo2,
// glibc) around filling a cache: small entries, where the blocks' headers, the key's map node
// and the entry's fixed size outweigh the data, and large ones.
TEST(ClientCacheMemoryTest, BytesIsWhatTheAllocatorHoldsForTheEntries) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator keeps counts of its own";
#endif
  struct Shape {
    std::string key_prefix;
    std::size_t value_size;
  };
  for (const Shape& shape : {Shape{"k", 3}, Shape{"u:", 16}, Shape{"user:profile:", 100},
                             Shape{"user:profile:0123456789:", 1000}}) {
    constexpr int kEntries = 20000;
    std::vector<Read> reads;
    reads.reserve(kEntries);
    for (int i = 0; i < kEntries; ++i) reads.emplace_back(shape.key_prefix + std::to_string(i));
    const std::string value(shape.value_size, 'v');
    const Parsed reply("$" + std::to_string(value.size()) + "\r\n" + value + "\r\n");
    ClientCache cache(std::size_t{1} << 30, 60s);
    cache.set_active(true);
    CachedReply out;
    const Clock::time_point t0 = Clock::now();
    const auto heap = [] {
      const struct mallinfo2 info = ::mallinfo2();
      return static_cast<double>(info.uordblks + info.hblkhd);
    };
    const double before = heap();
    for (const Read& read : reads) {
      const ClientCache::Lookup lookup = cache.lookup(read.db, read.args, read.key, t0, out);
      cache.note_ttl(read.key, read.identity, lookup.ticket, -1);
      ASSERT_TRUE(cache.complete_fill(read.key, read.identity, lookup.ticket, reply.nodes(), t0));
    }
    const double ratio = (heap() - before) / static_cast<double>(cache.bytes());
    EXPECT_GT(ratio, 0.9) << shape.key_prefix << " " << shape.value_size << " bytes";
    EXPECT_LT(ratio, 1.1) << shape.key_prefix << " " << shape.value_size << " bytes";
    std::printf("%s…, %zu-byte values: the allocator holds %.3f x bytes()\n",
                shape.key_prefix.c_str(), shape.value_size, ratio);
  }
}

TEST_F(ClientCacheTest, AFailedFillLeavesNothingBehind) {
  const Read read("k");
  const ClientCache::Lookup lookup = look(read, t0);
  cache.abandon_fill(read.key, read.identity, lookup.ticket);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(look(read, t0).outcome, ClientCache::Lookup::Outcome::Fill);
  const Parsed error("-ERR wrong\r\n");
  const ClientCache::Lookup again = look(Read("e"), t0);
  const Read e("e");
  cache.note_ttl(e.key, e.identity, again.ticket, -1);
  EXPECT_FALSE(cache.complete_fill(e.key, e.identity, again.ticket, error.nodes(), t0));
}

}  // namespace
}  // namespace redmux::detail
