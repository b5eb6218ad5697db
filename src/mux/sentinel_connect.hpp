// connect_through_sentinels: Multiplexer::connect_async() for serviceName= (Sentinel). Asks
// the Sentinels for the service's primary and replicas without blocking (mux/sentinel_monitor.hpp),
// builds the MuxCore for those servers — the primary first, so it is group 0 — and hands the
// SentinelMonitor to it, which keeps the groups following failovers until the core closes.
//
// Threads: safe from any thread, and it never blocks; the future completes on an I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "redmux/config.hpp"
#include "redmux/future.hpp"
#include "redmux/io_pool.hpp"

namespace redmux {
class Multiplexer;
}

namespace redmux::detail {

class MuxCore;
class TlsContext;
struct ConnectWatch;

/// Builds the public Multiplexer around a core (its constructor is private to Multiplexer).
using MultiplexerFactory = std::function<std::shared_ptr<Multiplexer>(std::shared_ptr<MuxCore>)>;

/// REQUIRES: config.validate() passed and config.service_name is set. `tls`: when ssl=true,
/// used for the Sentinels and the data servers alike. `watch`, when not null, is filled for
/// connect(): how far the Sentinels' round has got (SentinelMonitor::progress()), and how to
/// stop the round and the data servers' attempts if connect() gives up.
Future<std::shared_ptr<Multiplexer>> connect_through_sentinels(const Config& config,
                                                               std::shared_ptr<IoPool> pool,
                                                               std::shared_ptr<TlsContext> tls,
                                                               MultiplexerFactory make,
                                                               ConnectWatch* watch);

}  // namespace redmux::detail
