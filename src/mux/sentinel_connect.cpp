#include "mux/sentinel_connect.hpp"

#include <mutex>

#include "core/countdown.hpp"
#include "mux/connect_watch.hpp"
#include "mux/core.hpp"
#include "mux/sentinel_monitor.hpp"
#include "pubsub/hub.hpp"
#include "redmux/multiplexer.hpp"

namespace redmux::detail {
namespace {

using Ptr = std::shared_ptr<Multiplexer>;

/// The data servers' configuration: the user's, with the servers the Sentinels named as
/// endpoints (the primary first) and the Sentinel options cleared.
Config data_config(const Config& config, std::vector<Endpoint> endpoints) {
  Config data = config;
  data.endpoints = std::move(endpoints);
  data.service_name.clear();
  data.sentinel_user.clear();
  data.sentinel_password.clear();
  data.sentinel_credentials = {};
  return data;
}

}  // namespace

Future<Ptr> connect_through_sentinels(const Config& config, std::shared_ptr<IoPool> pool,
                                      std::shared_ptr<TlsContext> tls, MultiplexerFactory make,
                                      ConnectWatch* watch) {
  // The pool is made here, not by MuxCore: the Sentinels are asked on it before the core
  // exists.
  if (!pool) pool = IoPool::create(config.io_threads);
  auto monitor = std::make_shared<SentinelMonitor>(config, pool, tls);
  // What connect() stops if it gives up: the round, or the data servers' core once the
  // round has made it. The handler below holds the mutex while it runs, so it either sees
  // `abandoned` or has published its core before abandon() looks.
  struct Abandon {
    std::mutex mutex;
    bool abandoned = false;
    std::weak_ptr<MuxCore> core;
  };
  auto abandon = std::make_shared<Abandon>();
  if (watch) {
    watch->progress = [weak = std::weak_ptr<SentinelMonitor>(monitor)] {
      auto alive = weak.lock();
      return alive ? alive->progress() : std::string();
    };
    watch->abandon = [abandon, weak = std::weak_ptr<SentinelMonitor>(monitor),
                      sync_timeout = config.sync_timeout] {
      std::shared_ptr<MuxCore> core;
      {
        std::lock_guard lock(abandon->mutex);
        abandon->abandoned = true;
        core = abandon->core.lock();
      }
      if (core) {
        core->close();  // closes the monitor too (follow_sentinels), and waits
        return;
      }
      auto held = weak.lock();
      if (!held) return;
      const auto closing = Countdown::make();
      closing->add(held->close(closing->done()));
      closing->started();
      closing->wait_for(sync_timeout);
    };
  }
  auto* state = new FutureState<Ptr>();
  Future<Ptr> future(state);
  state->add_ref();  // the resolve handler's reference
  // Runs once, on an I/O thread: it must not block (MuxCore::close() knows not to wait there).
  monitor->resolve([state, monitor, config, pool, tls, abandon,
                    make = std::move(make)](Result<SentinelMonitor::Answer> answer) {
    struct Release {  // the handler's reference, on every path out
      FutureState<Ptr>* state;
      ~Release() { state->release(); }
    } release{state};
    std::lock_guard abandon_lock(abandon->mutex);
    if (abandon->abandoned) {
      answer = Error(errc::shut_down, "asking the Sentinels for service \"" + config.service_name +
                                          "\": connect() gave up");
    }
    if (!answer && (config.abort_connect || answer.error().code() == errc::shut_down)) {
      monitor->close(nullptr);
      state->set(Error(answer.error().code(),
                       answer.error().message() +
                           " (abortConnect=true: use abortConnect=false to start without a "
                           "primary and keep asking the Sentinels in the background)"));
      return;
    }
    // No Sentinel answered under abortConnect=false: one group stands in for the primary and
    // starts once a Sentinel names it; until then commands queue (or fail fast) as for a
    // server that is down.
    std::vector<Endpoint> endpoints;
    if (answer) {
      endpoints.push_back(answer->primary);
      endpoints.insert(endpoints.end(), answer->replicas.begin(), answer->replicas.end());
    } else {
      endpoints.push_back(SentinelMonitor::unresolved(config.service_name));
    }
    auto core = std::make_shared<MuxCore>(data_config(config, std::move(endpoints)), pool, tls);
    abandon->core = core;
    core->follow_sentinels(monitor, config);
    // A round that finds no Sentinel answering (wrong sentinelPassword=, a service they do not
    // know, all of them down) is said where the application looks: the log and on_error.
    monitor->set_failure_hook([weak = std::weak_ptr<MuxCore>(core)](const Error& error) {
      auto held = weak.lock();
      if (!held) return;
      if (held->shared().observer().logs(LogLevel::Warning)) {
        held->shared().observer().log(LogLevel::Warning, "", error.message());
      }
      held->shared().report_error(error);
    });
    std::weak_ptr<SubscriptionHub> hub = core->subscription_hub();
    std::function<void()> start;
    if (!answer) {
      start = [weak = std::weak_ptr<MuxCore>(core)] {
        if (auto started = weak.lock()) started->start([](std::vector<Error>) {});
      };
    }
    monitor->follow(
        core->groups(),
        [hub, weak = std::weak_ptr<MuxCore>(core),
         service = config.service_name](const Endpoint& primary) {
          if (auto moved = hub.lock()) moved->move_to(primary);
          // A failover (or the first answer after none): said once, where it happens.
          auto held = weak.lock();
          if (held && held->shared().observer().logs(LogLevel::Info)) {
            held->shared().observer().log(LogLevel::Info, "",
                                          "the Sentinels name " + primary.to_string() +
                                              " the primary of service \"" + service +
                                              "\": writes go there from now on");
          }
        },
        std::move(start));
    Ptr mux = make(core);
    if (!answer) {
      state->set(std::move(mux));
      return;
    }
    if (!config.abort_connect) {
      core->start([](std::vector<Error>) {});
      state->set(std::move(mux));
      return;
    }
    state->add_ref();
    core->start([state, mux, named = SentinelMonitor::describe(*answer),
                 service = config.service_name](std::vector<Error> errors) mutable {
      if (errors.empty()) {
        state->set(std::move(mux));
      } else {
        std::string message = "the Sentinels name " + named + " for service \"" + service +
                              "\", but none of them could be connected to";
        for (const Error& error : errors) message += "; " + error.message();
        message +=
            " (abortConnect=true: use abortConnect=false to start disconnected and connect in "
            "the background)";
        const errc code = errors.front().code() == errc::authentication_failed
                              ? errc::authentication_failed
                              : errc::connection_failed;
        mux->close();  // on an I/O thread: does not wait
        mux.reset();   // before connect() is woken (as in Multiplexer::start_connect)
        state->set(Error(code, std::move(message)));
      }
      mux.reset();
      state->release();
    });
  });
  return future;
}

}  // namespace redmux::detail
