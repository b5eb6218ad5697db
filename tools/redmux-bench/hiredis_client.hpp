// A blocking hiredis connection (Debian's libhiredis-dev, 0.14): the "plain client" the
// baselines compare redmux with. One object is one TCP or Unix connection; not thread-safe,
// one per thread. Errors throw std::runtime_error with hiredis's text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <redmux/config.hpp>

struct redisContext;

namespace redmux_bench {

class HiredisConnection {
 public:
  /// Connects to the first endpoint of `config`, with its user/password and database.
  explicit HiredisConnection(const redmux::Config& config);
  /// Connects to `endpoint` with `config`'s user/password and database.
  HiredisConnection(const redmux::Config& config, const redmux::Endpoint& endpoint);
  /// Redis Cluster: the node that serves `key` when it is not this one (EXISTS answered
  /// MOVED), else nullopt.
  std::optional<redmux::Endpoint> moved_for(std::string_view key);
  ~HiredisConnection();
  HiredisConnection(const HiredisConnection&) = delete;
  HiredisConnection& operator=(const HiredisConnection&) = delete;

  /// INCR key with redisCommand: write, then wait for the reply.
  long long incr(std::string_view key);
  /// Queues INCR key in hiredis's output buffer (redisAppendCommand); nothing is sent yet.
  void append_incr(std::string_view key);
  /// Reads the next reply (redisGetReply; the first call flushes the output buffer).
  long long read_integer();
  /// Queues SET key value / GET key (redisAppendCommand, binary-safe); nothing is sent yet.
  void append_set(std::string_view key, std::string_view value);
  void append_get(std::string_view key);
  /// Reads the next reply: an OK status (SET) is 0, a bulk string its length (GET), a nil
  /// -1; an error reply throws. The reply is freed without copying its bytes out again.
  long long read_string_length();
  /// DEL key.
  void del(std::string_view key);
  /// GET key: the value's length, -1 when the key is missing (the bytes are not copied out).
  long long get_length(std::string_view key);
  /// GET key as an integer; 0 when the key is missing.
  long long get_counter(std::string_view key);

  /// Any command (redisCommandArgv): a string, status or integer reply as text, an array as
  /// its elements' texts joined by "\n". An error reply throws. For what the public API has
  /// no handle for: one named server of a topology (INFO, CONFIG RESETSTAT), MONITOR.
  std::string command(const std::vector<std::string>& args);
  /// Reads the next reply and drops it; false when the connection failed or closed.
  bool skip_reply();
  /// Shrinks the socket's receive buffer (SO_RCVBUF), so that a client that stops reading
  /// stalls the server's writes sooner.
  void set_receive_buffer(int bytes);

 private:
  [[noreturn]] void fail(const char* what) const;
  redisContext* context_ = nullptr;
};

}  // namespace redmux_bench
