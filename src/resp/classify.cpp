#include "resp/classify.hpp"

#include <string_view>

namespace redmux::resp {
namespace {

struct NamedKind {
  std::string_view name;
  PushKind kind;
};

constexpr NamedKind kPushKinds[] = {
    {"message", PushKind::Message},
    {"pmessage", PushKind::PatternMessage},
    {"smessage", PushKind::ShardMessage},
    {"subscribe", PushKind::Subscribe},
    {"psubscribe", PushKind::PatternSubscribe},
    {"ssubscribe", PushKind::ShardSubscribe},
    {"unsubscribe", PushKind::Unsubscribe},
    {"punsubscribe", PushKind::PatternUnsubscribe},
    {"sunsubscribe", PushKind::ShardUnsubscribe},
};

bool is_error(const Node& root) noexcept {
  return root.type == ReplyType::SimpleError || root.type == ReplyType::BulkError;
}

}  // namespace

PushKind push_kind(NodeSpan frame) noexcept {
  if (frame.size() < 2) return PushKind::Other;
  const ReplyType root = frame[0].type;
  if (root != ReplyType::Push && root != ReplyType::Array) return PushKind::Other;
  const Node& lead = frame[1];
  if (lead.type != ReplyType::BulkString) return PushKind::Other;
  for (const NamedKind& known : kPushKinds) {
    if (lead.value == known.name) return known.kind;
  }
  return PushKind::Other;
}

bool is_resp2_pubsub(NodeSpan frame) noexcept {
  return !frame.empty() && frame[0].type == ReplyType::Array && frame[0].size >= 3 &&
         push_kind(frame) != PushKind::Other;
}

bool is_invalidation(NodeSpan push) noexcept {
  return push.size() >= 3 && push[0].type == ReplyType::Push && push[0].size == 2 &&
         push[1].type == ReplyType::BulkString && push[1].value == "invalidate" &&
         (push[2].type == ReplyType::Null || push[2].type == ReplyType::Array);
}

bool says_role_changed(NodeSpan reply) noexcept {
  if (reply.empty() || !is_error(reply[0])) return false;
  const std::string_view text = reply[0].value;
  return text.starts_with("READONLY") || says_master_down(text) || text.starts_with("REDIRECT ");
}

}  // namespace redmux::resp
