// Multiplexer options and faces beyond the basics: several connections per endpoint, Unix
// sockets, a user's io_context, asynchronous connect, coroutines and when_all.
#include <gtest/gtest.h>

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "commands/command_table.hpp"
#include "redmux/redmux.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::threads_named;

int clients_named(const RedisServer& server, const std::string& name) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  int count = 0;
  for (std::size_t pos = 0; (pos = list.find("name=" + name + " ", pos)) != std::string::npos;
       ++pos) {
    ++count;
  }
  return count;
}

TEST(MultiplexerOptionsTest, ConnectionsPerEndpointSpreadKeysAndKeepPerKeyOrder) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",name=spread,connectionsPerEndpoint=3");
  EXPECT_EQ(clients_named(server, "spread"), 3);
  Database db = mux->database();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const std::string key = "key:" + std::to_string(t) + ":" + std::to_string(k);
        std::vector<Future<long long>> pushes;
        for (int i = 0; i < 50; ++i) pushes.push_back(db.rpush(key, std::to_string(i)));
        for (int i = 0; i < 50; ++i) {
          if (pushes[i].get() != i + 1) ++wrong;
        }
        auto values = db.lrange(key, 0, -1).get();
        for (int i = 0; i < 50; ++i) {
          if (values.at(i) != std::to_string(i)) ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  // Work reached more than one of the three connections: each served commands.
  const std::string list = server.cli({"CLIENT", "LIST"});
  int busy = 0;
  for (std::size_t pos = 0; (pos = list.find("name=spread ", pos)) != std::string::npos; ++pos) {
    const std::size_t line_end = list.find('\n', pos);
    const std::string line = list.substr(pos, line_end - pos);
    if (line.find("cmd=rpush") != std::string::npos ||
        line.find("cmd=lrange") != std::string::npos) {
      ++busy;
    }
  }
  EXPECT_GE(busy, 2) << list;
}

TEST(MultiplexerOptionsTest, UnixSocket) {
  test::ServerOptions options;
  RedisServer probe;  // to learn a private directory
  const std::string path = (probe.data_dir() / "redis.sock").string();
  options.args = {"--unixsocket", path, "--unixsocketperm", "700"};
  RedisServer server(options);
  auto mux = Multiplexer::connect("unix://" + path);
  EXPECT_EQ(mux->database().incr("via-unix").get(), 1);
  EXPECT_EQ(server.cli({"GET", "via-unix"}), "1");
}

TEST(MultiplexerOptionsTest, UsersOwnIoContext) {
  RedisServer server;
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  {
    auto mux = Multiplexer::connect(Config::from_string(server.address()), IoPool::wrap(io));
    EXPECT_EQ(mux->database().incr("n").get(), 1);
    // A blocking wait inside a callback on the user's thread is refused too. The server is
    // stopped until the callback is installed, so that the callback runs on `runner` when
    // the reply arrives (a future already complete would run it here, on the test's
    // thread, where the inner get() might find its reply already read by `runner`).
    std::atomic<int> deadlock{0};
    std::atomic<bool> on_runner{false};
    const auto runner_id = runner.get_id();
    server.pause();
    mux->database().incr("n").then([&](Result<long long>) {
      on_runner = std::this_thread::get_id() == runner_id;
      try {
        mux->database().incr("n").get();
      } catch (const DeadlockError&) {
        deadlock = 1;
      }
    });
    server.resume();
    EXPECT_TRUE(test::wait_until([&] { return deadlock.load() == 1; }));
    EXPECT_TRUE(on_runner.load());
  }
  guard.reset();
  io.stop();
  runner.join();
}

TEST(MultiplexerOptionsTest, BlockingWaitInTheUsersOwnHandlerOnAWrappedContextIsRefused) {
  // The user's own handler (not a redmux callback) running on the wrapped io_context blocks
  // in get(): the reply could only be read by this very thread, so it would wait forever
  // (and asyncTimeout's timer, on the same thread, would never fire). It must throw.
  RedisServer server;
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  {
    auto mux = Multiplexer::connect(Config::from_string(server.address() + ",asyncTimeout=2000"),
                                    IoPool::wrap(io));
    std::promise<std::string> outcome;
    asio::post(io, [&] {
      try {
        outcome.set_value("returned " + std::to_string(mux->database().incr("n").get()));
      } catch (const DeadlockError&) {
        outcome.set_value("DeadlockError");
      } catch (const std::exception& e) {
        outcome.set_value(std::string("other error: ") + e.what());
      }
    });
    std::future<std::string> result = outcome.get_future();
    if (result.wait_for(10s) != std::future_status::ready) {
      // The runner is stuck in get() for good: nothing could join it. Fail loudly, now.
      std::fprintf(stderr, "FAILED: get() hung on the wrapped io_context's own thread\n");
      std::_Exit(1);
    }
    EXPECT_EQ(result.get(), "DeadlockError");
    // The refused wait did not unsend the INCR (it ran: n = 1); from a thread not running
    // the context, the same call works.
    EXPECT_EQ(mux->database().incr("n").get(), 2);
  }
  guard.reset();
  io.stop();
  runner.join();
  // Once the wrapped pool is gone, a thread running that context may block again (for a
  // multiplexer on redmux's own threads).
  auto mux = Multiplexer::connect(Config::from_string(server.address()));
  asio::io_context other;
  std::string seen;
  asio::post(other, [&] { seen = std::to_string(mux->database().incr("n").get()); });
  other.run();
  EXPECT_EQ(seen, "3");
}

TEST(MultiplexerOptionsTest, IoThreadsStartsThatManyIoThreadsAndNamesTheResolvers) {
  RedisServer server;
  {
    // Four connections over two I/O threads, by IP address: no resolver thread at all.
    auto mux = Multiplexer::connect(server.address() + ",ioThreads=2,connectionsPerEndpoint=4");
    EXPECT_EQ(mux->database().incr("n").get(), 1);
    EXPECT_EQ(threads_named("redmux-io-").size(), 2u);
    EXPECT_EQ(threads_named("redmux-dns-").size(), 0u);
  }
  // By host name: each I/O thread that resolved one has its lookup thread, named after it.
  auto mux = Multiplexer::connect("localhost:" + std::to_string(server.port()) +
                                  ",ioThreads=2,connectionsPerEndpoint=4");
  EXPECT_EQ(mux->database().incr("n").get(), 2);
  std::vector<std::string> io = threads_named("redmux-io-");
  std::vector<std::string> dns = threads_named("redmux-dns-");
  std::sort(io.begin(), io.end());
  std::sort(dns.begin(), dns.end());
  EXPECT_EQ(io, (std::vector<std::string>{"redmux-io-0", "redmux-io-1"}));
  EXPECT_EQ(dns, (std::vector<std::string>{"redmux-dns-0", "redmux-dns-1"}));
}

TEST(MultiplexerOptionsTest, ConnectAsyncCompletesWithMultiplexer) {
  RedisServer server;
  auto future = Multiplexer::connect_async(Config::from_string(server.address()));
  std::shared_ptr<Multiplexer> mux = future.get();
  ASSERT_TRUE(mux);
  EXPECT_TRUE(mux->is_connected());
  auto failing = Multiplexer::connect_async(
      Config::from_string("127.0.0.1:1,connectRetry=0,connectTimeout=500"));
  auto result = failing.result();
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), errc::connection_failed);
  // From a configuration string, as connect() takes one; a bad one throws at once.
  EXPECT_TRUE(Multiplexer::connect_async(server.address() + ",name=async").get()->is_connected());
  EXPECT_THROW((void)Multiplexer::connect_async("localhost:6379,nosuchoption=1"), ConfigError);
}

// A minimal fire-and-forget coroutine type for the test.
struct Task {
  struct promise_type {
    Task get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

Task count_up(Database db, std::promise<long long>& done, std::thread::id caller) {
  long long last = 0;
  for (int i = 0; i < 100; ++i) last = co_await db.incr("co");
  // A reply that arrives before co_await looks at it resumes the coroutine where it is: on a
  // loaded machine every one of them may, and it is still on the caller's thread. One that
  // suspends resumes on an I/O thread, where it stays.
  while (std::this_thread::get_id() == caller) co_await db.incr("co-until-suspended");
  bool refused = false;
  try {
    db.set("text", "x").get();  // the coroutine runs on an I/O thread now
  } catch (const DeadlockError&) {
    refused = true;  // blocking there is refused, as documented
  }
  done.set_value(refused ? last : -1);
}

TEST(MultiplexerOptionsTest, CoAwaitYieldsValuesAndResumesOnIoThread) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  std::promise<long long> done;
  count_up(mux->database(), done, std::this_thread::get_id());
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), 100);
}

TEST(MultiplexerOptionsTest, CoAwaitThrowsServerError) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  mux->database().set("text", "abc").get();
  std::promise<std::string> done;
  [](Database db, std::promise<std::string>& out) -> Task {
    try {
      co_await db.incr("text");
      out.set_value("no error");
    } catch (const ServerError& e) {
      out.set_value(e.prefix());
    }
  }(mux->database(), done);
  EXPECT_EQ(done.get_future().get(), "ERR");
}

TEST(MultiplexerOptionsTest, WhenAllGathersResults) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  std::vector<Future<long long>> futures;
  for (int i = 0; i < 1000; ++i) futures.push_back(db.incr("n"));
  auto all = when_all(std::move(futures)).get();
  ASSERT_EQ(all.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(*all[i], i + 1);
}

}  // namespace
}  // namespace redmux

namespace redmux {
namespace {

TEST(MultiplexerOptionsTest, UnknownCommandIsLearnedOnceWithCommandInfo) {
  // A renamed GET is unknown to the built-in table: the first use asks COMMAND INFO, and
  // later commands route by the learned key position and flags.
  test::ServerOptions options;
  options.args = {"--rename-command", "GET", "FETCHKEY"};
  test::RedisServer server(options);
  auto mux = Multiplexer::connect(server.address() + ",connectionsPerEndpoint=2");
  Database db = mux->database();
  db.set("k", "v").get();
  EXPECT_EQ(db.execute({"FETCHKEY", "k"}).get().text(), "v");
  const Arg probe[] = {"FETCHKEY", "k"};
  ASSERT_TRUE(test::wait_until([&] {
    // Learned entries keep the Unknown mark (not built in) but gain the server's flags.
    return detail::command_info(probe).is(detail::CommandFlag::ReadOnly);
  }));
  const detail::CommandInfo& learned = detail::command_info(probe);
  EXPECT_FALSE(learned.is(detail::CommandFlag::Write));
  EXPECT_EQ(detail::first_key_index(learned, probe), std::optional<std::size_t>(1));
  EXPECT_EQ(db.execute({"FETCHKEY", "k"}).get().text(), "v");
  // Asked once: one COMMAND INFO in the server's command statistics.
  EXPECT_NE(server.cli({"INFO", "commandstats"}).find("cmdstat_command|info:calls=1,"),
            std::string::npos)
      << server.cli({"INFO", "commandstats"});
}

}  // namespace
}  // namespace redmux
