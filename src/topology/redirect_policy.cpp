#include "topology/redirect_policy.hpp"

#include <algorithm>

#include "core/script_commands.hpp"
#include "resp/classify.hpp"

namespace redmux::detail {
namespace {

long long ms_between(RedirectPolicy::Clock::time_point from, RedirectPolicy::Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

RedirectPolicy::Step RedirectPolicy::on_error(std::string_view text, std::string_view host,
                                              Clock::time_point now) {
  Step step;
  if (hops_ < kMaxHops) {
    if (std::optional<ClusterRedirect> redirect = parse_redirect(text, host)) {
      ++hops_;
      step.kind = Step::Kind::Follow;
      step.redirect = std::move(*redirect);
      step.pause = kHopPause * (hops_ - 1);
      return step;
    }
  }
  const bool cluster_down = resp::says_cluster_down(text);
  if (!cluster_down && !resp::says_try_again(text)) return step;
  if (command_.script && !is_server_refusal_text(text)) return step;  // the script's
  step.refresh = cluster_down;  // a failover: the map is about to change
  if (command_.retry_cluster_down) {
    // Both replies say the command did not run, so sending it again cannot apply it twice.
    if (retries_ == 0) first_refusal_ = now;
    const auto pause = std::min<std::chrono::milliseconds>(
        kRetryPauseMax, kRetryPause * (1 << std::min(retries_, 3)));
    if (now + pause < command_.deadline) {
      ++retries_;
      step.kind = Step::Kind::Wait;
      step.pause = pause;
      // TRYAGAIN: the same node (a migration in progress there). CLUSTERDOWN: the slot's
      // owner by then (a failover may have given it a new one).
      step.same_node = resp::says_try_again(text);
      return step;
    }
  }
  if (retries_ == 0) return step;  // refused at the first send: the reply as it is
  step.kind = Step::Kind::GiveUp;
  step.message = std::string(text) + " (reply to " + std::string(command_.name) + "; sent " +
                 std::to_string(retries_ + 1) + " times over " +
                 std::to_string(ms_between(first_refusal_, now)) +
                 " ms, retryClusterDown=true, until its " + std::to_string(command_.timeout_ms) +
                 " ms timeout left no time for another try; it did not run)";
  return step;
}

}  // namespace redmux::detail
