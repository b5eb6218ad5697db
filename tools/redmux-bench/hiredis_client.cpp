#include "hiredis_client.hpp"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <stdexcept>
#include <string>

namespace redmux_bench {

namespace {

long long integer_of(redisReply* reply, const char* what) {
  if (!reply) throw std::runtime_error(std::string("hiredis: no reply to ") + what);
  if (reply->type != REDIS_REPLY_INTEGER) {
    std::string message = std::string("hiredis: ") + what + " replied ";
    message += reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len)
                                                : "type " + std::to_string(reply->type);
    freeReplyObject(reply);
    throw std::runtime_error(message);
  }
  const long long value = reply->integer;
  freeReplyObject(reply);
  return value;
}

void expect_ok(redisReply* reply, const char* what) {
  const bool ok = reply && reply->type != REDIS_REPLY_ERROR;
  const std::string text = reply && reply->str ? std::string(reply->str, reply->len) : "";
  if (reply) freeReplyObject(reply);
  if (!ok) throw std::runtime_error(std::string("hiredis: ") + what + " failed: " + text);
}

}  // namespace

HiredisConnection::HiredisConnection(const redmux::Config& config)
    : HiredisConnection(config,
                        config.endpoints.empty() ? redmux::Endpoint{} : config.endpoints.front()) {
  if (config.endpoints.empty()) throw std::runtime_error("hiredis: no endpoint");
}

std::optional<redmux::Endpoint> HiredisConnection::moved_for(std::string_view key) {
  auto* reply =
      static_cast<redisReply*>(redisCommand(context_, "EXISTS %b", key.data(), key.size()));
  if (!reply) fail("EXISTS");
  std::optional<redmux::Endpoint> moved;
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string text(reply->str, reply->len);
    // "MOVED <slot> <host>:<port>"
    const auto space = text.rfind(' ');
    const auto colon = text.rfind(':');
    if (text.rfind("MOVED ", 0) == 0 && space != std::string::npos && colon != std::string::npos &&
        colon > space) {
      redmux::Endpoint endpoint;
      endpoint.host = text.substr(space + 1, colon - space - 1);
      endpoint.port = static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1)));
      moved = endpoint;
    }
  }
  freeReplyObject(reply);
  return moved;
}

HiredisConnection::HiredisConnection(const redmux::Config& config, const redmux::Endpoint& ep) {
  if (config.ssl) throw std::runtime_error("hiredis baseline: TLS endpoints are not supported");
  context_ = ep.is_unix() ? redisConnectUnix(ep.unix_path.c_str())
                          : redisConnect(ep.host.c_str(), ep.port);
  if (!context_ || context_->err) {
    const std::string why = context_ ? context_->errstr : "out of memory";
    if (context_) redisFree(context_);
    throw std::runtime_error("hiredis: cannot connect to " + ep.to_string() + ": " + why);
  }
  if (!config.password.empty()) {
    auto* reply = config.user.empty() ? redisCommand(context_, "AUTH %s", config.password.c_str())
                                      : redisCommand(context_, "AUTH %s %s", config.user.c_str(),
                                                     config.password.c_str());
    expect_ok(static_cast<redisReply*>(reply), "AUTH");
  }
  if (config.default_database != 0) {
    auto* reply = redisCommand(context_, "SELECT %d", config.default_database);
    expect_ok(static_cast<redisReply*>(reply), "SELECT");
  }
}

HiredisConnection::~HiredisConnection() {
  if (context_) redisFree(context_);
}

void HiredisConnection::fail(const char* what) const {
  throw std::runtime_error(std::string("hiredis: ") + what + ": " + context_->errstr);
}

long long HiredisConnection::incr(std::string_view key) {
  auto* reply = static_cast<redisReply*>(redisCommand(context_, "INCR %b", key.data(), key.size()));
  if (!reply) fail("INCR");
  return integer_of(reply, "INCR");
}

void HiredisConnection::append_incr(std::string_view key) {
  if (redisAppendCommand(context_, "INCR %b", key.data(), key.size()) != REDIS_OK) {
    fail("redisAppendCommand");
  }
}

long long HiredisConnection::read_integer() {
  void* reply = nullptr;
  if (redisGetReply(context_, &reply) != REDIS_OK) fail("redisGetReply");
  return integer_of(static_cast<redisReply*>(reply), "INCR");
}

void HiredisConnection::append_set(std::string_view key, std::string_view value) {
  if (redisAppendCommand(context_, "SET %b %b", key.data(), key.size(), value.data(),
                         value.size()) != REDIS_OK) {
    fail("redisAppendCommand");
  }
}

void HiredisConnection::append_get(std::string_view key) {
  if (redisAppendCommand(context_, "GET %b", key.data(), key.size()) != REDIS_OK) {
    fail("redisAppendCommand");
  }
}

long long HiredisConnection::read_string_length() {
  void* raw = nullptr;
  if (redisGetReply(context_, &raw) != REDIS_OK) fail("redisGetReply");
  auto* reply = static_cast<redisReply*>(raw);
  long long length = -1;
  switch (reply->type) {
    case REDIS_REPLY_STRING:
      length = static_cast<long long>(reply->len);
      break;
    case REDIS_REPLY_STATUS:
      length = 0;
      break;
    case REDIS_REPLY_NIL:
      break;
    default: {
      const std::string text = reply->str ? std::string(reply->str, reply->len) : "";
      freeReplyObject(reply);
      throw std::runtime_error("hiredis: unexpected reply: " + text);
    }
  }
  freeReplyObject(reply);
  return length;
}

void HiredisConnection::del(std::string_view key) {
  auto* reply = static_cast<redisReply*>(redisCommand(context_, "DEL %b", key.data(), key.size()));
  if (!reply) fail("DEL");
  (void)integer_of(reply, "DEL");
}

long long HiredisConnection::get_length(std::string_view key) {
  append_get(key);
  return read_string_length();
}

long long HiredisConnection::get_counter(std::string_view key) {
  auto* reply = static_cast<redisReply*>(redisCommand(context_, "GET %b", key.data(), key.size()));
  if (!reply) fail("GET");
  long long value = 0;
  if (reply->type == REDIS_REPLY_STRING) value = std::stoll(std::string(reply->str, reply->len));
  freeReplyObject(reply);
  return value;
}

namespace {

std::string text_of(const redisReply* reply) {
  switch (reply->type) {
    case REDIS_REPLY_INTEGER:
      return std::to_string(reply->integer);
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (std::size_t i = 0; i < reply->elements; ++i) {
        if (i) out += '\n';
        out += text_of(reply->element[i]);
      }
      return out;
    }
    case REDIS_REPLY_NIL:
      return {};
    default:
      return reply->str ? std::string(reply->str, reply->len) : std::string();
  }
}

}  // namespace

std::string HiredisConnection::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context_, static_cast<int>(args.size()), argv.data(), lengths.data()));
  const std::string name = args.empty() ? "command" : args.front();
  if (!reply) fail(name.c_str());
  const bool error = reply->type == REDIS_REPLY_ERROR;
  std::string text = text_of(reply);
  freeReplyObject(reply);
  if (error) throw std::runtime_error("hiredis: " + name + " failed: " + text);
  return text;
}

bool HiredisConnection::skip_reply() {
  void* reply = nullptr;
  if (redisGetReply(context_, &reply) != REDIS_OK || reply == nullptr) return false;
  freeReplyObject(reply);
  return true;
}

void HiredisConnection::set_receive_buffer(int bytes) {
  setsockopt(context_->fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace redmux_bench
