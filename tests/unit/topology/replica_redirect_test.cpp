#include "topology/replica_redirect.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace redmux::detail {
namespace {

Endpoint at(std::string host, std::uint16_t port) {
  return Endpoint{std::move(host), port, {}};
}

// The shape Valkey writes (server.c: "-REDIRECT %s:%d" with its primary_host and port).
TEST(ReplicaRedirectTest, ParsesTheRedirectReply) {
  EXPECT_EQ(parse_replica_redirect("REDIRECT 127.0.0.1:6380"), at("127.0.0.1", 6380));
  EXPECT_EQ(parse_replica_redirect("REDIRECT primary.internal:6379"), at("primary.internal", 6379));
  EXPECT_EQ(parse_replica_redirect("REDIRECT ::1:6379"), at("::1", 6379));  // as Valkey prints it
  EXPECT_EQ(parse_replica_redirect("REDIRECT [::1]:6379"), at("::1", 6379));
}

TEST(ReplicaRedirectTest, RejectsWhatIsNotAWellFormedRedirect) {
  for (const std::string_view text :
       {"READONLY You can't write against a read only replica.", "MOVED 3999 127.0.0.1:6381",
        "REDIRECT", "REDIRECT ", "REDIRECT 127.0.0.1", "REDIRECT :6379", "REDIRECT h:0",
        "REDIRECT h:65536", "REDIRECT h:63x9", "redirect h:6379"}) {
    EXPECT_FALSE(parse_replica_redirect(text)) << text;
  }
}

TEST(ReplicaRedirectTest, TargetIsTheServerWithTheNamedHostAndPort) {
  const std::vector<Endpoint> servers = {at("127.0.0.1", 7000), at("127.0.0.1", 7001),
                                         at("127.0.0.1", 7002)};
  EXPECT_EQ(redirect_target(servers, at("127.0.0.1", 7000), 1), 0u);
  EXPECT_EQ(redirect_target(servers, at("127.0.0.1", 7002), 1), 2u);
  // No such server among them: nowhere to go (the caller gets the reply as its error).
  EXPECT_EQ(redirect_target(servers, at("127.0.0.1", 7999), 1), servers.size());
  EXPECT_EQ(redirect_target(servers, at("10.0.0.1", 7000), 1), servers.size());
  // The server that answered names itself: sending it there again would loop.
  EXPECT_EQ(redirect_target(servers, at("127.0.0.1", 7001), 1), servers.size());
}

}  // namespace
}  // namespace redmux::detail
