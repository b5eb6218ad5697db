// RedirectPolicy: what a cluster command does with each error reply to one of its sends,
// sans-IO — the redirect state of one command. MOVED and ASK are followed (at once the first
// time, then after a growing pause: the nodes disagree for a moment while a slot changes
// owner), at most kMaxHops times; CLUSTERDOWN and TRYAGAIN are waited out and the command sent
// again (retryClusterDown), with a doubling pause, while its deadline leaves time for the
// pause; a CLUSTERDOWN also asks for a new map. Anything else goes to the caller.
//
// The state that sends (mux/cluster_redirect.hpp) holds one, feeds it each error reply with
// the time, and performs the step it returns. That state also owns the rule that a command
// whose future has completed is never written afterwards: it asks this policy nothing then.
//
// Threads: none; one command's sends are one after another.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "topology/cluster_map.hpp"

namespace redmux::detail {

class RedirectPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  /// Redirections (MOVED, ASK) followed per command before its last error is the reply.
  static constexpr int kMaxHops = 5;
  /// Before the second redirection and each after it: this, times the hops before it.
  static constexpr std::chrono::milliseconds kHopPause{25};
  /// CLUSTERDOWN / TRYAGAIN: the first pause before the command is sent again, doubled each
  /// time up to kRetryPauseMax (a failover ends within seconds, a migration batch sooner).
  static constexpr std::chrono::milliseconds kRetryPause{25};
  static constexpr std::chrono::milliseconds kRetryPauseMax{200};

  /// What the command knows of itself: for the decisions and the final message.
  struct Command {
    std::string_view name;
    Clock::time_point deadline;
    std::uint32_t timeout_ms = 0;
    bool retry_cluster_down = true;  ///< the retryClusterDown option
    /// EVAL, FCALL …: CLUSTERDOWN / TRYAGAIN are waited out only in the server's own words
    /// (is_server_refusal_text()); the script may have returned the word itself.
    bool script = false;
  };

  struct Step {
    enum class Kind {
      Reply,   ///< give the reply to the caller as it is
      Follow,  ///< send again to `redirect.endpoint` (behind ASKING when `redirect.ask`)
      Wait,    ///< send again after `pause`: to the same node (`same_node`), else the slot's owner
      GiveUp,  ///< fail the caller with `message` (server_error): waited out in vain
    };
    Kind kind = Kind::Reply;
    ClusterRedirect redirect;            ///< Follow
    std::chrono::milliseconds pause{0};  ///< Follow (0: at once) and Wait
    bool same_node = false;              ///< Wait: TRYAGAIN (a migration on that node)
    bool refresh = false;                ///< CLUSTERDOWN: ask for the slot map now
    std::string message;                 ///< GiveUp
  };

  explicit RedirectPolicy(Command command) : command_(command) {}

  /// The reply to the last send was the error `text`, from a node at `host` (for a MOVED that
  /// gives no host), at `now`.
  Step on_error(std::string_view text, std::string_view host, Clock::time_point now);

  /// True until a redirection or a wait sent the command again: the first send is routed
  /// by the slot map, later ones go where the server said.
  bool first_send() const noexcept { return hops_ == 0 && retries_ == 0; }
  int hops() const noexcept { return hops_; }
  int retries() const noexcept { return retries_; }

 private:
  Command command_;
  int hops_ = 0;     ///< MOVED / ASK followed
  int retries_ = 0;  ///< CLUSTERDOWN / TRYAGAIN waited out
  Clock::time_point first_refusal_{};
};

}  // namespace redmux::detail
