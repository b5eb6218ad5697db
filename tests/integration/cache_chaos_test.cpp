// The client-side cache under faults: threads read one key through the cache while a plain
// client writes it with increasing versions, the cache's connection is cut and restored
// (FaultProxy) and the server is killed and restarted (its AOF keeps every acknowledged
// write). Every value a read returns must be one the key held at some moment during that
// read — never below the last version whose write was acknowledged and whose invalidation
// was delivered before the read began, never above the last version written by its end.
#include <gtest/gtest.h>

#include <atomic>
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

TEST(CacheChaosTest, ReadsThroughTheCacheNeverReturnAValueOutsideTheirTimeAcrossCutsAndRestarts) {
  test::ServerOptions options;
  options.args = {"--appendonly", "yes", "--appendfsync", "always"};
  RedisServer server(options);
  FaultProxy proxy(server.port());
  const std::string common =
      ",abortConnect=false,reconnectBaseDelay=20ms,reconnectMaxDelay=200ms,"
      "asyncTimeout=2000ms,heartbeatInterval=200ms";
  auto cached = Multiplexer::connect(proxy.address() + ",clientCache=true" + common);
  auto plain = Multiplexer::connect(server.address() + common);
  Database reads = cached->database();
  Database writes = plain->database();
  writes.set("chaos", "0").get();

  // written: the highest version whose SET was sent (it may have run); delivered: the highest
  // whose SET was acknowledged and whose invalidation has reached the cache's connection (a
  // PING on that connection answered after the acknowledgement).
  std::atomic<long long> written{0};
  std::atomic<long long> delivered{0};
  std::atomic<bool> stop{false};
  std::atomic<long long> violations{0};
  std::atomic<long long> good_reads{0};
  std::atomic<long long> failed_reads{0};
  std::string first_violation;
  std::mutex violation_mutex;

  std::thread writer([&] {
    for (long long version = 1; !stop.load(); ++version) {
      written.store(version);
      for (;;) {
        try {
          writes.set("chaos", std::to_string(version)).get();
          break;
        } catch (const RedmuxError&) {  // down: retry the same version (it may have run)
          if (stop.load()) return;
        }
      }
      for (;;) {
        try {
          reads.command<std::string>("PING").get();
          break;
        } catch (const RedmuxError&) {  // the cache's connection is down: its cache is gone
          if (stop.load()) return;
        }
      }
      delivered.store(version);
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const long long floor = delivered.load();
        std::optional<std::string> value;
        try {
          value = reads.get("chaos").get();
        } catch (const RedmuxError&) {
          failed_reads.fetch_add(1);
          continue;
        }
        const long long ceiling = written.load();
        const long long seen = value ? std::stoll(*value) : -1;
        if (seen < floor || seen > ceiling) {
          if (violations.fetch_add(1) == 0) {
            std::lock_guard lock(violation_mutex);
            first_violation = "read " + (value ? *value : std::string("nil")) +
                              " while the key held versions " + std::to_string(floor) + " … " +
                              std::to_string(ceiling);
          }
        } else {
          good_reads.fetch_add(1);
        }
      }
    });
  }

  // Each break below must find the cache's connection back (its reconnect may still be in
  // its backoff after the last one), so that every break drops a cache.
  auto run_for = [&](std::chrono::milliseconds span) {
    const long long start = delivered.load();
    std::this_thread::sleep_for(span);  // traffic runs meanwhile: this is the test's duration
    ASSERT_TRUE(test::wait_until([&] { return delivered.load() > start; }, 20s))
        << "the writer made no progress";
    ASSERT_TRUE(test::wait_until([&] { return cached->is_connected(); }, 20s))
        << "the cache's connection did not come back";
  };
  run_for(800ms);
  proxy.cut_all();  // the cache's connection breaks; writes go on meanwhile
  run_for(800ms);
  proxy.set_admission(test::Admission::Refuse);
  proxy.cut_all();
  std::this_thread::sleep_for(300ms);  // down for a while: writes it never hears of
  proxy.set_admission(test::Admission::Forward);
  run_for(800ms);
  server.kill();
  server.restart();  // the AOF brings back every acknowledged version
  run_for(800ms);
  proxy.cut_all();
  run_for(800ms);
  stop.store(true);
  writer.join();
  for (std::thread& reader : readers) reader.join();

  const ClientCacheStatus cache = cached->status().cache;
  EXPECT_EQ(violations.load(), 0) << first_violation;
  EXPECT_GT(good_reads.load(), 100);
  EXPECT_GT(cache.hits, 0u) << "the cache served nothing: the test tested nothing";
  EXPECT_GT(cache.invalidations, 0u);
  EXPECT_GE(cache.flushes, 3u);  // the breaks dropped the cache
  std::printf(
      "chaos: %lld good reads, %lld failed while down, versions 1 … %lld; cache hits=%llu "
      "misses=%llu refused=%llu invalidations=%llu flushes=%llu\n",
      good_reads.load(), failed_reads.load(), written.load(),
      static_cast<unsigned long long>(cache.hits), static_cast<unsigned long long>(cache.misses),
      static_cast<unsigned long long>(cache.refused),
      static_cast<unsigned long long>(cache.invalidations),
      static_cast<unsigned long long>(cache.flushes));
}

}  // namespace
}  // namespace redmux
