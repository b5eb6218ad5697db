// ReplyHint: a few words that server_error_from() adds to the error replies it turns into
// errors on this thread while the hint is alive: what the connection that read the reply
// knows and the server's words do not say (a lone endpoint that is a replica, and the
// primary it follows). The reply itself, as the server sent it, is unchanged.
#pragma once

#include <string_view>

namespace redmux::detail {

class ReplyHint {
 public:
  /// REQUIRES: `hint` outlives this object.
  explicit ReplyHint(std::string_view hint) noexcept;
  ~ReplyHint();
  ReplyHint(const ReplyHint&) = delete;
  ReplyHint& operator=(const ReplyHint&) = delete;

 private:
  std::string_view previous_;
};

}  // namespace redmux::detail
