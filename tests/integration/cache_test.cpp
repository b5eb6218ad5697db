// The client-side cache (clientCache=true) against a real server: reads served from memory,
// and each correctness rule of docs/caching.md — an external write's invalidation, a write
// through the same multiplexer, a break, a nil invalidation, the server's TTL and the
// maximum, the memory bound, the three tracking modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::FaultProxy;
using test::RedisServer;
using test::wait_until;

ClientCacheStatus cache_of(const Multiplexer& mux) {
  return mux.status().cache;
}

/// Reads older than a write that had completed when they began (read your own write).
struct OlderReads {
  long long count = 0;
  long long example = -1;  ///< the last write completed before one of them
  long long writes = 0;
};

/// `readers` threads call `read` while this thread calls `write(1)`, `write(2)` … for
/// `length`; a read that returns a value below the last write completed before it began
/// is counted.
OlderReads read_while_writing(int readers, std::chrono::milliseconds length,
                              const std::function<std::optional<std::string>()>& read,
                              const std::function<void(long long)>& write) {
  std::atomic<long long> done{0};
  std::atomic<bool> stop{false};
  std::atomic<long long> older{0};
  std::atomic<long long> example{-1};
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        const long long floor = done.load();
        const std::optional<std::string> value = read();
        if (value && std::stoll(*value) < floor) {
          ++older;
          example = floor;
        }
      }
    });
  }
  const auto until = std::chrono::steady_clock::now() + length;
  long long i = 0;
  while (std::chrono::steady_clock::now() < until) {
    write(++i);
    done = i;
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  return OlderReads{older.load(), example.load(), i};
}

/// A command on the cache's own connection whose reply comes after every invalidation the
/// server queued for that connection before it: once it answers, they have been applied.
void fence(Database& db) {
  db.command<std::string>("PING").get();
}

TEST(CacheTest, ARepeatedReadIsServedFromMemoryUntilAnExternalWriteInvalidatesIt) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true");
  Database db = mux->database();
  server.cli({"SET", "book", "v1"});
  EXPECT_EQ(db.get("book").get(), "v1");  // miss: the reply is stored
  const long long gets = server.command_calls("get");
  for (int i = 0; i < 10; ++i) EXPECT_EQ(db.get("book").get(), "v1");
  EXPECT_EQ(server.command_calls("get"), gets);  // ten hits, nothing sent
  EXPECT_EQ(cache_of(*mux).hits, 10u);
  EXPECT_TRUE(cache_of(*mux).active);
  EXPECT_GT(cache_of(*mux).bytes, 0u);
  EXPECT_EQ(cache_of(*mux).flushes, 0u);  // the first session found nothing to drop

  server.cli({"SET", "book", "v2"});  // acknowledged: its invalidation is on its way
  fence(db);
  EXPECT_EQ(db.get("book").get(), "v2");
  EXPECT_GE(cache_of(*mux).invalidations, 1u);
  // Flags::NoCache: sent, not stored, not served.
  const long long before = server.command_calls("get");
  EXPECT_EQ(db.get("book", Flags::NoCache).get(), "v2");
  EXPECT_EQ(server.command_calls("get"), before + 1);
  EXPECT_NE(mux->status_text().find("cache=on"), std::string::npos);
}

// A write through the multiplexer (a Database call, a Batch) is seen by the writer's next
// read, from the cache or not.
TEST(CacheTest, AWriteThroughTheSameMultiplexerIsSeenByTheWritersNextRead) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true");
  Database db = mux->database();
  for (int i = 0; i < 200; ++i) {
    const std::string value = std::to_string(i);
    db.set("counter", value).get();
    ASSERT_EQ(db.get("counter").get(), value) << "read " << i << " returned an older value";
    ASSERT_EQ(db.get("counter").get(), value);  // and from the cache, the same
    db.hset("hash", "f", value).get();
    ASSERT_EQ(db.hget("hash", "f").get(), value);
  }
  EXPECT_GT(cache_of(*mux).hits, 0u);
  for (int i = 0; i < 50; ++i) {  // a Batch's writes too
    const std::string value = "b" + std::to_string(i);
    Batch batch = db.batch();
    Future<bool> set = batch.set("counter", value);
    batch.execute();
    set.get();
    ASSERT_EQ(db.get("counter").get(), value) << "read after batch " << i;
  }
  db.command<long long>("DEL", "counter").get();  // a write the typed API does not name
  EXPECT_EQ(db.get("counter").get(), std::nullopt);
}

TEST(CacheTest, AWriteWhoseKeyIsNotItsFirstIsSeenByTheNextReadOnAnyConnection) {
  // Four connections: the write usually goes on another connection than the one that read
  // the key, so the server's invalidation (sent to the reader's connection) can come after
  // the write's reply. Only the multiplexer's own invalidation makes the next read new.
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true,connectionsPerEndpoint=4");
  Database db = mux->database();
  const std::string script = "redis.call('SET', KEYS[2], ARGV[1]) return 1";
  for (int i = 0; i < 200; ++i) {
    const std::string a = "a" + std::to_string(i);
    const std::string b = "b" + std::to_string(i);
    // A script's second declared key.
    db.set(b, "old").get();
    ASSERT_EQ(db.get(b).get(), "old");
    ASSERT_EQ(db.get(b).get(), "old");  // cached
    db.eval<long long>(script, {a, b}, {"new"}).get();
    ASSERT_EQ(db.get(b).get(), "new") << "read " << i << " after EVAL … 2 a b";
    // SORT … STORE: the destination comes after a keyword.
    db.rpush(a, {"3", "1", "2"}).get();
    db.del(b).get();
    db.rpush(b, {"x"}).get();
    ASSERT_EQ(db.llen(b).get(), 1);
    ASSERT_EQ(db.llen(b).get(), 1);  // cached
    db.command<long long>("SORT", a, "STORE", b).get();
    ASSERT_EQ(db.llen(b).get(), 3) << "read " << i << " after SORT a STORE b";
  }
  EXPECT_GT(cache_of(*mux).hits, 0u);
}

TEST(CacheTest, AWriteOnAnotherConnectionThanItsKeysReadsIsSeenOnceItsFutureCompletes) {
  // Two connections: "w{a}" rides one (slot 15495), "r{b}" the other (slot 3300). A write
  // of both (MSET, or a Batch, which rides the connection of its first key) goes on the
  // first, while readers on other threads read r{b} on the second. A read looked up after
  // the write was queued can run before it on its own connection and be stored before the
  // server's invalidation arrives there: once the write's future completes, no read may
  // return the older value.
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() +
                                  ",clientCache=true,connectionsPerEndpoint=2,ioThreads=2");
  Database db = mux->database();
  db.mset({{"w{a}", "0"}, {"r{b}", "0"}}).get();
  const OlderReads older = read_while_writing(
      4, 2s, [&] { return db.get("r{b}").get(); },
      [&](long long i) {
        const std::string v = std::to_string(i);
        if (i % 2 == 0) {
          db.mset({{"w{a}", v}, {"r{b}", v}}).get();
        } else {
          Batch batch = db.batch();
          batch.set("w{a}", v);
          Future<bool> set = batch.set("r{b}", v);
          batch.execute();
          ASSERT_TRUE(set.get());
        }
      });
  EXPECT_EQ(older.count, 0) << "reads older than a completed write, e.g. after write "
                            << older.example << " of " << older.writes << "; "
                            << mux->status_text();
  EXPECT_GT(cache_of(*mux).hits, 0u);
}

// A Transaction and a blocking write (BLMOVE) run on dedicated connections, which no read
// rides: their keys leave every cache again at EXEC's (or the BLMOVE's) reply, before their
// futures complete, so no read after that returns the older value.
TEST(CacheTest, WritesOnDedicatedConnectionsAreSeenOnceTheirFuturesComplete) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true,ioThreads=2");
  Database db = mux->database();
  const auto run = [&](const char* what, const std::function<std::optional<std::string>()>& read,
                       const std::function<void(long long)>& write) {
    write(0);
    const std::uint64_t hits_before = cache_of(*mux).hits;
    const OlderReads older = read_while_writing(3, 1500ms, read, write);
    EXPECT_EQ(older.count, 0) << what << ": reads older than a completed write, e.g. after write "
                              << older.example << " of " << older.writes << "; "
                              << mux->status_text();
    EXPECT_GT(cache_of(*mux).hits, hits_before) << what;
  };
  run(
      "Transaction", [&] { return db.get("tx").get(); },
      [&](long long v) {
        Transaction tx = db.transaction();
        Future<bool> set = tx.set("tx", std::to_string(v));
        ASSERT_TRUE(tx.execute());
        ASSERT_TRUE(set.get());
      });
  run(
      "BLMOVE",
      [&] { return db.command<std::optional<std::string>>("LINDEX", "moved", "0").get(); },
      [&](long long v) {
        db.rpush("source", std::to_string(v)).get();
        ASSERT_EQ(db.command<std::optional<std::string>>("BLMOVE", "source", "moved", "RIGHT",
                                                         "LEFT", "1")
                      .get(),
                  std::to_string(v));
      });
}

TEST(CacheTest, UnderSeveralConnectionsACommandNamingTheKeyFencesAnotherClientsWrite) {
  // "p{a}" rides the second of two connections; a keyless command (PING) the first, so its
  // reply says nothing of the invalidations on the second. EXISTS of the key rides the key's.
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() +
                                  ",clientCache=true,connectionsPerEndpoint=2,ioThreads=2");
  auto other = Multiplexer::connect(server.address());
  Database db = mux->database();
  Database writer = other->database();
  const std::string key = "p{a}";
  int stale = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string before = std::to_string(i);
    writer.set(key, before).get();
    db.exists({key}, CallOptions(Flags::NoCache)).get();
    ASSERT_EQ(db.get(key).get(), before);  // stored
    ASSERT_EQ(db.get(key).get(), before);  // from the cache
    const std::string after = std::to_string(i) + "+";
    writer.set(key, after).get();
    db.exists({key}, CallOptions(Flags::NoCache)).get();
    stale += db.get(key).get() != after;
  }
  EXPECT_EQ(stale, 0) << "cached reads older than a write fenced by EXISTS of its key";
  EXPECT_GT(cache_of(*mux).hits, 0u);
}

// Invalidations sent while the connection is down are lost: the cache goes with the session.
TEST(CacheTest, ABrokenConnectionDropsTheCacheSoWritesMadeWhileDownAreSeen) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto mux = Multiplexer::connect(proxy.address() + ",clientCache=true,reconnectBaseDelay=50ms");
  Database db = mux->database();
  server.cli({"SET", "k", "before"});
  EXPECT_EQ(db.get("k").get(), "before");
  EXPECT_EQ(db.get("k").get(), "before");
  ASSERT_EQ(cache_of(*mux).hits, 1u);
  proxy.set_admission(test::Admission::Refuse);
  proxy.cut_all();
  ASSERT_TRUE(wait_until([&] { return mux->status().connected == 0; }));
  server.cli({"SET", "k", "after"});  // no connection to tell
  proxy.set_admission(test::Admission::Forward);
  ASSERT_TRUE(wait_until([&] { return mux->status().connected == 1; }));
  EXPECT_EQ(db.get("k").get(), "after");
  EXPECT_GE(cache_of(*mux).flushes, 1u);
}

TEST(CacheTest, ANilInvalidationFromFlushallDropsEverything) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true,allowAdmin=true");
  Database db = mux->database();
  server.cli({"SET", "a", "1"});
  server.cli({"SET", "b", "2"});
  EXPECT_EQ(db.get("a").get(), "1");
  EXPECT_EQ(db.get("b").get(), "2");
  ASSERT_EQ(cache_of(*mux).entries, 2u);
  server.cli({"FLUSHALL"});
  fence(db);
  EXPECT_EQ(cache_of(*mux).entries, 0u);
  EXPECT_EQ(db.get("a").get(), std::nullopt);
  EXPECT_EQ(db.get("b").get(), std::nullopt);
}

// The server's TTL is taken with the read (PTTL in the same write): the entry dies with the
// key although nothing reaches the server (active expiry off, every read a hit), and no
// entry outlives clientCacheMaxTtl.
TEST(CacheTest, AnEntryDiesWithTheKeysTtlAndAtTheMaximum) {
  test::ServerOptions options;
  options.args = {"--enable-debug-command", "yes"};
  RedisServer server(options);
  server.cli({"DEBUG", "SET-ACTIVE-EXPIRE", "0"});
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true,clientCacheMaxTtl=1000ms");
  Database db = mux->database();
  const auto start = std::chrono::steady_clock::now();  // before the key's TTL starts
  server.cli({"SET", "short", "v", "PX", "150"});
  server.cli({"SET", "plain", "v"});
  EXPECT_EQ(db.get("short").get(), "v");
  EXPECT_EQ(db.get("plain").get(), "v");
  ASSERT_TRUE(wait_until([&] { return db.get("short").get() == std::nullopt; }, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 140ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 900ms);  // the key's TTL, not the maximum
  const std::uint64_t expired = cache_of(*mux).expired;
  EXPECT_GE(expired, 1u);
  ASSERT_TRUE(wait_until(
      [&] {
        db.get("plain").get();
        return cache_of(*mux).expired > expired;
      },
      10s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 990ms);
}

TEST(CacheTest, MemoryStaysWithinTheBoundAndIsShownInStatus) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true,clientCacheBytes=8192");
  Database db = mux->database();
  const std::string value(100, 'x');
  for (int i = 0; i < 200; ++i) db.set("key:" + std::to_string(i), value).get();
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(db.get("key:" + std::to_string(i)).get(), value);
    ASSERT_LE(cache_of(*mux).bytes, 8192u);
  }
  const ClientCacheStatus cache = cache_of(*mux);
  EXPECT_GT(cache.evictions, 0u);
  EXPECT_GT(cache.entries, 0u);
  EXPECT_NE(mux->status_text().find("cache-bytes="), std::string::npos);
  EXPECT_EQ(mux->status().per_connection.at(0).cache.bytes, cache.bytes);
}

// OPTIN tracks only the reads sent after CLIENT CACHING YES (the cached ones); BCAST every
// key under the prefixes, so only those keys are cached.
TEST(CacheTest, OptInAndBroadcastModesSeeExternalWrites) {
  RedisServer server;
  for (const std::string mode : {"clientCacheMode=optin", "clientCacheMode=bcast"}) {
    SCOPED_TRACE(mode);
    auto mux = Multiplexer::connect(server.address() + ",clientCache=true," + mode);
    Database db = mux->database();
    server.cli({"SET", "m", "1"});
    fence(db);  // BCAST tells of that SET too: an invalidation read after the read began
                // would keep its reply out of the cache, and the next read would miss
    EXPECT_EQ(db.get("m").get(), "1");
    EXPECT_EQ(db.get("m").get(), "1");
    EXPECT_EQ(cache_of(*mux).hits, 1u);
    server.cli({"SET", "m", "2"});
    fence(db);
    EXPECT_EQ(db.get("m").get(), "2");
  }
  auto mux = Multiplexer::connect(
      server.address() +
      ",clientCache=true,clientCacheMode=bcast,clientCachePrefixes=\"user: book:\"");
  Database db = mux->database();
  server.cli({"SET", "user:1", "u"});
  server.cli({"SET", "other", "o"});
  fence(db);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(db.get("user:1").get(), "u");
    EXPECT_EQ(db.get("other").get(), "o");  // not under a prefix: never cached
  }
  EXPECT_EQ(cache_of(*mux).hits, 2u);
  server.cli({"SET", "user:1", "v"});
  fence(db);
  EXPECT_EQ(db.get("user:1").get(), "v");
}

TEST(CacheTest, UnderClientCacheReadsFlaggedOnlyFlaggedReadsAreCached) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true,clientCacheReads=flagged");
  Database db = mux->database();
  server.cli({"SET", "k", "v"});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(db.get("k").get(), "v");
  EXPECT_EQ(cache_of(*mux).hits, 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(db.get("k", Flags::Cache).get(), "v");
  EXPECT_EQ(cache_of(*mux).hits, 2u);
}

TEST(CacheTest, TrackingCommandsAreRefusedWithAdviceThatNamesTheCache) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  try {
    db.command<std::string>("CLIENT", "TRACKING", "ON").get();
    FAIL() << "CLIENT TRACKING was sent";
  } catch (const RedmuxError& error) {
    EXPECT_NE(std::string(error.what()).find("clientCache=true"), std::string::npos)
        << error.what();
    // Named with its subcommand: CLIENT alone is a family of many.
    EXPECT_EQ(std::string(error.what()).rfind("CLIENT TRACKING changes the state", 0), 0u)
        << error.what();
  }
}

// A server that refuses CLIENT TRACKING (here an ACL) leaves the connection working, uncached;
// why is in status() and status_text(), and in one warning, not one per reconnect.
TEST(CacheTest, ARefusedTrackingIsShownInStatusAndLoggedOnce) {
  RedisServer server;
  server.cli({"ACL", "SETUSER", "app", "on", ">app-pass", "~*", "&*", "+@all", "-client|tracking"});
  auto mux = Multiplexer::connect(server.address() +
                                  ",user=app,password=app-pass,clientCache=true,"
                                  "reconnectBaseDelay=20ms");
  Database db = mux->database();
  db.set("k", "v").get();
  EXPECT_EQ(db.get("k").get(), "v");
  EXPECT_EQ(db.get("k").get(), "v");
  ClientCacheStatus cache = cache_of(*mux);
  EXPECT_FALSE(cache.active);
  EXPECT_EQ(cache.hits, 0u);
  EXPECT_NE(cache.refusal.find("CLIENT TRACKING on " + server.address() + " failed: NOPERM"),
            std::string::npos)
      << cache.refusal;
  EXPECT_NE(mux->status_text().find("cache=off (CLIENT TRACKING on " + server.address()),
            std::string::npos)
      << mux->status_text();

  std::mutex mutex;
  std::vector<std::string> warnings;
  mux->on_log(LogLevel::Warning, [&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    if (record.message.find("client-side cache off") != std::string::npos) {
      warnings.emplace_back(record.message);
    }
  });
  const auto reconnect = [&] {
    const std::uint64_t before = mux->status().reconnects;
    server.cli({"CLIENT", "KILL", "USER", "app"});
    ASSERT_TRUE(wait_until([&] { return mux->status().reconnects > before; }))
        << mux->status_text();
  };
  const auto warned = [&] {
    std::lock_guard lock(mutex);
    return warnings.size();
  };
  // Refused at connect(), before the log was installed: said at the next reconnect, once.
  reconnect();
  EXPECT_EQ(warned(), 1u);
  reconnect();
  EXPECT_EQ(db.get("k").get(), "v");
  EXPECT_EQ(warned(), 1u);
  // Allowed again: the next session tracks, and the refusal is gone.
  server.cli({"ACL", "SETUSER", "app", "+client|tracking"});
  reconnect();
  ASSERT_TRUE(wait_until([&] { return cache_of(*mux).active; })) << mux->status_text();
  EXPECT_EQ(cache_of(*mux).refusal, "");
  EXPECT_EQ(db.get("k").get(), "v");
  EXPECT_EQ(db.get("k").get(), "v");
  EXPECT_GE(cache_of(*mux).hits, 1u);
  EXPECT_NE(mux->status_text().find("cache=on cache-entries="), std::string::npos)
      << mux->status_text();
  // Refused once more: said again, since it was not the last thing said.
  server.cli({"ACL", "SETUSER", "app", "-client|tracking"});
  reconnect();
  EXPECT_EQ(warned(), 2u);
  std::lock_guard lock(mutex);
  EXPECT_NE(warnings.front().find("its reads go to the server: CLIENT TRACKING on " +
                                  server.address() + " failed: NOPERM"),
            std::string::npos)
      << warnings.front();
}

// The command hook sees every read, and marks the ones answered from the cache.
TEST(CacheTest, TheCommandHookMarksRepliesFromTheCache) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",clientCache=true");
  Database db = mux->database();
  std::mutex mutex;
  std::vector<CommandEvent> events;
  mux->on_command([&](const CommandEvent& event) {
    if (event.operation_name != "GET") return;
    std::lock_guard lock(mutex);
    events.push_back(event);
  });
  server.cli({"SET", "book", "v1"});
  EXPECT_EQ(db.get("book").get(), "v1");  // a miss: sent
  EXPECT_EQ(db.get("book").get(), "v1");  // a hit
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(mutex);
    return events.size() >= 2;
  }));
  std::lock_guard lock(mutex);
  ASSERT_EQ(events.size(), 2u);
  const auto sent = std::find_if(events.begin(), events.end(),
                                 [](const CommandEvent& event) { return !event.cached; });
  const auto hit = std::find_if(events.begin(), events.end(),
                                [](const CommandEvent& event) { return event.cached; });
  ASSERT_NE(sent, events.end());
  ASSERT_NE(hit, events.end());
  EXPECT_GT(sent->bytes_read, 0u);
  EXPECT_EQ(hit->bytes_written, 0u);
  EXPECT_EQ(hit->bytes_read, 0u);
  EXPECT_EQ(hit->outcome, CommandOutcome::Value);
  EXPECT_EQ(hit->server_port, server.port());
  EXPECT_NE(hit->phases.created, std::chrono::steady_clock::time_point{});
  EXPECT_GE(hit->phases.delivered, hit->phases.created);
  EXPECT_EQ(hit->phases.written, std::chrono::steady_clock::time_point{});
}

// A primary and a replica: PreferReplica reads are cached on the replica's connection, and
// the replica's invalidation (sent when it applies the primary's write) reaches that cache:
// once a later reply on that connection has come, no read returns the older value.
TEST(CacheTest, ReplicaReadsAreCachedOnTheReplicasConnectionAndSeeThePrimarysWrites) {
  RedisServer primary;
  RedisServer replica;
  replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
  ASSERT_TRUE(wait_until([&] { return replica.info_field("master_link_status") == "up"; }, 20s));
  auto mux =
      Multiplexer::connect(primary.address() + "," + replica.address() + ",clientCache=true");
  Database db = mux->database();
  ASSERT_TRUE(wait_until([&] {
    for (const ConnectionStatus& one : mux->status().per_connection) {
      if (one.role == ConnectionStatus::Role::Replica && one.cache.active) return true;
    }
    return false;
  }));
  auto replica_cache = [&] {
    for (const ConnectionStatus& one : mux->status().per_connection) {
      if (one.endpoint == replica.address()) return one.cache;
    }
    return ClientCacheStatus{};
  };
  for (int version = 1; version <= 20; ++version) {
    const std::string value = "v" + std::to_string(version);
    primary.cli({"SET", "title", value});
    primary.cli({"WAIT", "1", "5000"});  // the replica applied it
    // A fence on the replica's connection: its reply comes after the invalidation.
    EXPECT_EQ(db.get("title", Flags::DemandReplica | Flags::NoCache).get(), value);
    const long long gets = replica.command_calls("get");
    EXPECT_EQ(db.get("title", Flags::DemandReplica).get(), value);  // a miss, stored
    EXPECT_EQ(db.get("title", Flags::DemandReplica).get(), value);  // a hit
    EXPECT_EQ(replica.command_calls("get"), gets + 1);
  }
  EXPECT_GE(replica_cache().hits, 20u);
  EXPECT_GE(replica_cache().invalidations, 19u);
}

}  // namespace
}  // namespace redmux
