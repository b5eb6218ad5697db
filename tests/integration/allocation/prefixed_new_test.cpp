// An application that replaces the global operator new/delete with an allocator that puts a
// header before each block (accounting allocators do): every block redmux allocates with
// `new` must come back through `delete`, and every block it takes from malloc-family
// functions must go back to `free`. A mismatch — Asio's handler memory allocated with
// ::operator new in one translation unit and freed with std::free in another, which happens
// when the files disagree about Asio's aligned-allocation configuration — crashes such an
// application. Its own binary, because it replaces operator new.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace {

// 16 bytes before each block: a magic word and the size; keeps the default alignment.
constexpr std::uint64_t kMagic = 0x7265646d75784e57;  // "redmuxNW"
constexpr std::size_t kHeader = 16;

void* prefixed_alloc(std::size_t size) {
  auto* block = static_cast<unsigned char*>(std::malloc(size + kHeader));
  if (!block) throw std::bad_alloc();
  std::memcpy(block, &kMagic, sizeof kMagic);
  std::memcpy(block + 8, &size, sizeof size);
  return block + kHeader;
}

void prefixed_free(void* p) noexcept {
  if (!p) return;
  auto* block = static_cast<unsigned char*>(p) - kHeader;
  std::uint64_t magic = 0;
  std::memcpy(&magic, block, sizeof magic);
  if (magic != kMagic) {
    // A block operator new did not allocate: std::free()'s memory given to delete.
    std::fprintf(stderr, "prefixed_new_test: operator delete got a block it did not allocate\n");
    std::abort();
  }
  const std::uint64_t freed = ~kMagic;
  std::memcpy(block, &freed, sizeof freed);  // a second delete of the block is caught too
  std::free(block);
}

}  // namespace

// GCC 12 takes free() in a replaced operator delete for a mismatch when it sees a new[]
// expression in the same file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  return prefixed_alloc(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return prefixed_alloc(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  prefixed_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  prefixed_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  prefixed_free(p);
}
#pragma GCC diagnostic pop

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

TEST(PrefixedNewTest, ConnectCommandsReconnectAndCloseWithAHeaderPrefixingAllocator) {
  RedisServer server;
  {
    auto mux = Multiplexer::connect(server.address() + ",name=prefixed-new");
    Database db = mux->database();
    EXPECT_EQ(db.incr("n").get(), 1);
    std::vector<Future<long long>> burst;
    for (int i = 0; i < 2000; ++i) burst.push_back(db.incr("n"));
    for (auto& f : burst) f.get();
    Batch batch = db.batch();
    auto in_batch = batch.incr("n");
    batch.execute();
    EXPECT_EQ(in_batch.get(), 2002);
    db.set("big", std::string(256 * 1024, 'x')).get();
    EXPECT_EQ(db.get("big").get()->size(), 256u * 1024);

    // A reconnect: the server drops the connection; redmux connects again.
    const long long before = server.info_int("total_connections_received");
    server.cli({"CLIENT", "KILL", "TYPE", "normal"});
    ASSERT_TRUE(test::wait_until([&] {
      auto r = db.incr("n").result();
      return r.has_value() && server.info_int("total_connections_received") > before;
    }));
    EXPECT_GT(db.incr("n").get(), 2002);
    mux->close();
  }
  // A second multiplexer over a pool of two threads, destroyed in the other order.
  auto pool = IoPool::create(2);
  auto mux = Multiplexer::connect(Config::from_string(server.address()), pool);
  EXPECT_GT(mux->database().incr("n").get(), 2003);
  pool.reset();
  mux.reset();
}

}  // namespace
}  // namespace redmux
