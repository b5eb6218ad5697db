// --stat: redis-cli --stat's rolling one-line statistics, through the multiplexer. Each
// interval one line: the server's side from INFO (keys, memory, clients, requests and
// their rate) and this client's from the multiplexer itself — p50 / p99 of its commands in
// that interval from the built-in latency histograms (latencyHistograms=true), commands in
// flight and commands per write from status():
//
//   ------- data ------ ------------ load ------------ ------ redmux (this client) ------
//   keys       mem      clients requests        ops/s  p50      p99      in-flight cmd/wr
//   1003       1.07M    3       53211 (+9920)   9920   0.061ms  0.180ms  0         1.00
//
// Plain values and pure functions (no server): one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redmux/histogram.hpp"

namespace redmux::cli {

/// What one --stat line shows.
struct StatSample {
  // the server's, from INFO
  long long keys = 0;           ///< keys=N summed over db0 … of the keyspace section
  std::string memory;           ///< used_memory_human ("1.07M")
  long long clients = 0;        ///< connected_clients
  long long requests = 0;       ///< total_commands_processed
  long long new_requests = -1;  ///< since the previous line (-1: the first line, or restarted)
  double ops_per_second = 0;    ///< new_requests over the interval (with new_requests < 0: none)
  /// The connection was re-established during the interval (status().reconnects grew), or the
  /// server's request count went back (it restarted): the line has no rate.
  bool reconnected = false;
  // this client's, from the multiplexer
  std::uint64_t commands = 0;  ///< its commands with a reply in the interval
  std::chrono::nanoseconds p50{0}, p99{0};
  std::size_t in_flight = 0;
  double commands_per_write = 0;
};

/// Reads the server's fields of a StatSample from INFO's text (absent fields stay 0/empty).
void parse_info(std::string_view info, StatSample& sample);

/// The two header lines, and one sample's line (no newline at the end of either).
std::string stat_header();
std::string stat_line(const StatSample& sample);
/// One sample as a JSON object (--json), one per line.
std::string stat_json(const StatSample& sample);

}  // namespace redmux::cli
