// The FaultProxy itself, checked with a bare TCP client (no redmux in the way): a fault test
// is only as good as the fault it injects.
#include <gtest/gtest.h>

#include <string>

#include "support/fault_proxy.hpp"
#include "support/ports.hpp"
#include "support/raw_connection.hpp"
#include "support/redis_server.hpp"
#include "support/resp_text.hpp"
#include "support/wait.hpp"

namespace redmux::test {
namespace {

using namespace std::chrono_literals;

TEST(FaultProxyTest, PassesThroughAndCounts) {
  RedisServer server;
  FaultProxy proxy(server.port());
  RawConnection client(proxy.port());
  client.send("PING\r\n");
  EXPECT_EQ(client.read_until("\r\n", 5s), "+PONG\r\n");
  EXPECT_EQ(proxy.connections_accepted(), 1u);
  EXPECT_EQ(proxy.bytes_to_server(), 6u);
  // Counted once the proxy's write completed, which may be just after the client read it.
  EXPECT_TRUE(wait_until([&] { return proxy.bytes_to_client() == 7; }));
  EXPECT_EQ(proxy.open_pairs(), 1u);
}

TEST(FaultProxyTest, CutAllClosesEveryPair) {
  RedisServer server;
  FaultProxy proxy(server.port());
  RawConnection a(proxy.port());
  RawConnection b(proxy.port());
  ASSERT_TRUE(wait_until([&] { return proxy.pairs_started() == 2; }));
  proxy.cut_all();
  EXPECT_EQ(proxy.open_pairs(), 0u);
  EXPECT_EQ(proxy.pairs_cut(), 2u);
  a.read_until("never", 5s);
  b.read_until("never", 5s);
  EXPECT_TRUE(a.closed());
  EXPECT_TRUE(b.closed());
  RawConnection c(proxy.port());  // new connections still work
  c.send("PING\r\n");
  EXPECT_EQ(c.read_until("\r\n", 5s), "+PONG\r\n");
}

TEST(FaultProxyTest, StallHoldsBytesUntilReleased) {
  RedisServer server;
  FaultProxy proxy(server.port());
  RawConnection client(proxy.port());
  client.send("PING\r\n");
  ASSERT_EQ(client.read_until("\r\n", 5s), "+PONG\r\n");
  proxy.stall(true);
  client.send("ECHO held\r\n");
  EXPECT_EQ(client.read_some(300ms), "");
  EXPECT_FALSE(client.closed());
  proxy.stall(false);
  EXPECT_EQ(client.read_until("held\r\n", 5s), bulk("held"));
}

TEST(FaultProxyTest, StallExistingLeavesNewConnectionsAlone) {
  RedisServer server;
  FaultProxy proxy(server.port());
  RawConnection old_client(proxy.port());
  ASSERT_TRUE(wait_until([&] { return proxy.pairs_started() == 1; }));
  proxy.stall_existing();
  old_client.send("PING\r\n");
  RawConnection new_client(proxy.port());
  new_client.send("PING\r\n");
  EXPECT_EQ(new_client.read_until("\r\n", 5s), "+PONG\r\n");
  EXPECT_EQ(old_client.read_some(300ms), "");
  EXPECT_FALSE(old_client.closed());
  proxy.stall(false);
  EXPECT_EQ(old_client.read_until("\r\n", 5s), "+PONG\r\n");
}

TEST(FaultProxyTest, DripDeliversEveryByteInOrder) {
  RedisServer server;
  FaultProxy proxy(server.port());
  proxy.set_drip(true);
  RawConnection client(proxy.port());
  const std::string value(5000, 'd');
  client.send("ECHO " + value + "\r\n");
  EXPECT_EQ(client.read_until(value + "\r\n", 10s), bulk(value));
  EXPECT_TRUE(wait_until([&] { return proxy.bytes_to_client() == bulk(value).size(); }));
}

TEST(FaultProxyTest, DelayHoldsEachChunk) {
  RedisServer server;
  FaultProxy proxy(server.port());
  proxy.set_delay(200ms);
  RawConnection client(proxy.port());
  const auto start = std::chrono::steady_clock::now();
  client.send("PING\r\n");
  EXPECT_EQ(client.read_until("\r\n", 5s), "+PONG\r\n");
  // One delay each way.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 390ms);
}

TEST(FaultProxyTest, CutAfterBytesCutsMidReply) {
  RedisServer server;
  FaultProxy proxy(server.port());
  RawConnection client(proxy.port());
  const std::string value(1000, 'v');
  proxy.cut_after_bytes(100);
  client.send("ECHO " + value + "\r\n");
  const std::string received = client.read_until("never", 5s);
  EXPECT_TRUE(client.closed());
  EXPECT_LE(received.size(), 100u);
  EXPECT_EQ(received, bulk(value).substr(0, received.size()));
  EXPECT_EQ(proxy.bytes_to_client(), 100u);
  EXPECT_EQ(proxy.pairs_cut(), 1u);
  RawConnection next(proxy.port());  // one-shot: the next pair is not cut
  next.send("ECHO " + value + "\r\n");
  EXPECT_EQ(next.read_until(value + "\r\n", 5s), bulk(value));
}

TEST(FaultProxyTest, AdmissionModes) {
  RedisServer server;
  FaultProxy proxy(server.port());
  proxy.refuse_new(true);
  {
    RawConnection client(proxy.port());  // accepted by the kernel, closed by the proxy
    client.read_until("never", 5s);
    EXPECT_TRUE(client.closed());
  }
  EXPECT_EQ(proxy.pairs_started(), 0u);
  proxy.set_admission(Admission::Refuse);
  EXPECT_FALSE(loopback_port_accepts(proxy.port()));
  EXPECT_THROW(RawConnection(proxy.port(), 1s), std::system_error);
  proxy.set_admission(Admission::Forward);
  RawConnection client(proxy.port());
  client.send("PING\r\n");
  EXPECT_EQ(client.read_until("\r\n", 5s), "+PONG\r\n");
}

TEST(FaultProxyTest, ServerDownClosesTheClient) {
  RedisServer server;
  FaultProxy proxy(server.port());
  server.kill();
  RawConnection client(proxy.port());
  client.read_until("never", 5s);
  EXPECT_TRUE(client.closed());
  server.restart();
  RawConnection again(proxy.port());
  again.send("PING\r\n");
  EXPECT_EQ(again.read_until("\r\n", 5s), "+PONG\r\n");
}

}  // namespace
}  // namespace redmux::test
