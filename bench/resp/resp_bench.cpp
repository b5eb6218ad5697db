// Parsing and encoding throughput: redmux's resp::Parser / encode_command against hiredis's
// reader and redisFormatCommandArgv on the same inputs.
//
// Setup (printed with the results): every input is fed in 16 KiB reads, as from a socket.
// redmux appends each read to one buffer, parses every complete reply in place and compacts
// the buffer when a reply is incomplete (what a connection does); hiredis gets each read
// through redisReaderFeed and builds its redisReply objects, freed at once. "parse" rows
// leave redmux's replies as nodes (the form the I/O thread converts from); "parse+convert"
// rows also convert each reply to the caller's type (long long, std::string,
// std::vector<std::string>, nested maps), the end-to-end counterpart of hiredis's objects.
// Each benchmark checks that it saw the number of replies it expected.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/convert.hpp"
#include "resp/encoder.hpp"
#include "resp/parser.hpp"

namespace {

constexpr std::size_t kReadSize = 16 * 1024;

struct Input {
  std::string bytes;
  std::size_t replies = 0;
};

Input small_integers() {
  Input in;
  for (int i = 0; i < 100000; ++i) in.bytes += ":" + std::to_string(i % 1000) + "\r\n";
  in.replies = 100000;
  return in;
}

Input bulk_strings() {
  Input in;
  const std::string value(100, 'v');
  for (int i = 0; i < 100000; ++i) in.bytes += "$100\r\n" + value + "\r\n";
  in.replies = 100000;
  return in;
}

Input big_array() {
  Input in;
  in.bytes = "*10000\r\n";
  for (int i = 0; i < 10000; ++i) {
    std::string element = "element:" + std::to_string(100000000 + i);  // 16 bytes
    in.bytes += "$16\r\n" + element.substr(0, 16) + "\r\n";
  }
  in.replies = 1;
  return in;
}

/// 1000 records {name, age, score, tags}: RESP3 maps/sets/doubles, or the RESP2 shape
/// (flat arrays, numbers as bulk strings) that a server sends for the same data.
Input map_heavy(bool resp3) {
  Input in;
  const int records = 1000;
  auto bulk = [](const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
  };
  in.bytes = (resp3 ? "%" : "*") + std::to_string(resp3 ? records : 2 * records) + "\r\n";
  for (int i = 0; i < records; ++i) {
    in.bytes += bulk("user:" + std::to_string(i));
    in.bytes += resp3 ? "%4\r\n" : "*8\r\n";
    in.bytes += bulk("name") + bulk("name-" + std::to_string(i));
    in.bytes += bulk("age") + (resp3 ? ":" + std::to_string(20 + i % 50) + "\r\n"
                                     : bulk(std::to_string(20 + i % 50)));
    in.bytes += bulk("score") +
                (resp3 ? "," + std::to_string(i) + ".5\r\n" : bulk(std::to_string(i) + ".5"));
    in.bytes +=
        bulk("tags") + (resp3 ? "~3\r\n" : "*3\r\n") + bulk("red") + bulk("green") + bulk("blue");
  }
  in.replies = 1;
  return in;
}

const Input& input(int which) {
  static const Input inputs[] = {small_integers(), bulk_strings(), big_array(), map_heavy(true),
                                 map_heavy(false)};
  return inputs[which];
}

const char* const kInputNames[] = {"100k_integers", "100k_bulk100", "array10k_bulk16",
                                   "map_heavy_resp3", "map_heavy_resp2"};

void report(benchmark::State& state, const Input& in, std::size_t replies_seen) {
  if (replies_seen != in.replies * state.iterations()) {
    state.SkipWithError("wrong number of replies: the harness is broken");
    return;
  }
  state.SetLabel(kInputNames[state.range(0)]);
  state.counters["replies/s"] =
      benchmark::Counter(static_cast<double>(replies_seen), benchmark::Counter::kIsRate);
  state.counters["MB/s"] = benchmark::Counter(
      static_cast<double>(in.bytes.size()) * static_cast<double>(state.iterations()) / 1e6,
      benchmark::Counter::kIsRate);
}

/// Typed conversion of one reply of input `which`, as a command's caller would ask for it.
void convert_reply(int which, redmux::NodeSpan nodes) {
  switch (which) {
    case 0:
      benchmark::DoNotOptimize(redmux::from_nodes<long long>(nodes));
      break;
    case 1:
      benchmark::DoNotOptimize(redmux::from_nodes<std::string>(nodes));
      break;
    case 2:
      benchmark::DoNotOptimize(redmux::from_nodes<std::vector<std::string>>(nodes));
      break;
    default: {
      using Records = std::map<std::string, std::map<std::string, redmux::Reply>>;
      benchmark::DoNotOptimize(redmux::from_nodes<Records>(nodes));
      break;
    }
  }
}

template <bool kConvert>
void BM_redmux_parse(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const Input& in = input(which);
  redmux::resp::Parser parser;
  std::string buffer;
  buffer.reserve(4 * kReadSize);
  std::size_t replies = 0;
  for (auto _ : state) {
    parser.reset();
    buffer.clear();
    std::size_t start = 0;
    for (std::size_t read = 0; read < in.bytes.size(); read += kReadSize) {
      buffer.append(in.bytes, read, kReadSize);
      for (;;) {
        std::string_view pending(buffer.data() + start, buffer.size() - start);
        redmux::resp::ParseStatus status = parser.parse(pending);
        if (status != redmux::resp::ParseStatus::Complete) {
          if (status == redmux::resp::ParseStatus::Failed) state.SkipWithError("parse failed");
          break;
        }
        if constexpr (kConvert) {
          convert_reply(which, parser.nodes());
        } else {
          benchmark::DoNotOptimize(parser.nodes().data());
        }
        ++replies;
        start += parser.consumed();
      }
      buffer.erase(0, start);  // compaction: the incomplete reply moves to the front
      start = 0;
    }
  }
  report(state, in, replies);
}

void BM_hiredis_parse(benchmark::State& state) {
  const Input& in = input(static_cast<int>(state.range(0)));
  std::size_t replies = 0;
  for (auto _ : state) {
    redisReader* reader = redisReaderCreate();
    for (std::size_t read = 0; read < in.bytes.size(); read += kReadSize) {
      const std::size_t n = std::min(kReadSize, in.bytes.size() - read);
      redisReaderFeed(reader, in.bytes.data() + read, n);
      void* reply = nullptr;
      while (redisReaderGetReply(reader, &reply) == REDIS_OK && reply != nullptr) {
        freeReplyObject(reply);
        ++replies;
      }
    }
    redisReaderFree(reader);
  }
  report(state, in, replies);
}

BENCHMARK_TEMPLATE(BM_redmux_parse, false)->Name("parse/redmux")->DenseRange(0, 4);
BENCHMARK_TEMPLATE(BM_redmux_parse, true)->Name("parse+convert/redmux")->DenseRange(0, 4);
// hiredis 0.14 has no RESP3: the RESP3 map-heavy input (3) is redmux only.
BENCHMARK(BM_hiredis_parse)->Name("parse/hiredis")->Arg(0)->Arg(1)->Arg(2)->Arg(4);

// ---------------------------------------------------------------------------------------
// Encoding.

std::vector<std::string> mset_keys() {
  std::vector<std::string> out;
  for (int i = 0; i < 100; ++i) out.push_back("key:" + std::to_string(i));
  return out;
}

void report_encode(benchmark::State& state, std::size_t bytes_per_command) {
  state.counters["commands/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["MB/s"] = benchmark::Counter(
      static_cast<double>(bytes_per_command) * static_cast<double>(state.iterations()) / 1e6,
      benchmark::Counter::kIsRate);
}

// A SET of `value` into a buffer that keeps its capacity, as the submission queue's does.
void encode_set_redmux(benchmark::State& state, std::string_view value) {
  std::string out;
  for (auto _ : state) {
    out.clear();
    redmux::resp::encode_command(out, {"SET", "key:1", value});
    benchmark::DoNotOptimize(out.data());
  }
  report_encode(state, out.size());
}

void encode_set_hiredis(benchmark::State& state, std::string_view value) {
  const char* argv[] = {"SET", "key:1", value.data()};
  const size_t lens[] = {3, 5, value.size()};
  long long size = 0;
  for (auto _ : state) {
    char* cmd = nullptr;
    size = redisFormatCommandArgv(&cmd, 3, argv, lens);
    benchmark::DoNotOptimize(cmd);
    redisFreeCommand(cmd);
  }
  report_encode(state, static_cast<std::size_t>(size));
}

void BM_redmux_encode_set(benchmark::State& state) {
  encode_set_redmux(state, "value-of-16bytes");
}

void BM_hiredis_encode_set(benchmark::State& state) {
  encode_set_hiredis(state, "value-of-16bytes");
}

// The same with a value of state.range(0) bytes.
void BM_redmux_encode_set_value(benchmark::State& state) {
  encode_set_redmux(state, std::string(static_cast<std::size_t>(state.range(0)), 'v'));
}

void BM_hiredis_encode_set_value(benchmark::State& state) {
  encode_set_hiredis(state, std::string(static_cast<std::size_t>(state.range(0)), 'v'));
}

void BM_redmux_encode_mset(benchmark::State& state) {
  static const std::vector<std::string> keys = mset_keys();
  const std::string value(16, 'v');
  std::vector<redmux::Arg> args;
  args.reserve(201);
  std::string out;
  for (auto _ : state) {
    args.clear();
    args.emplace_back("MSET");
    for (const std::string& key : keys) {
      args.emplace_back(key);
      args.emplace_back(value);
    }
    out.clear();
    redmux::resp::encode_command(out, args);
    benchmark::DoNotOptimize(out.data());
  }
  report_encode(state, out.size());
}

// An MSET of four pairs whose values are state.range(0) bytes: from 4 KiB a value, the
// command takes encode_command()'s path for long arguments with values under 8 KiB each.
void BM_redmux_encode_mset_4(benchmark::State& state) {
  static const std::vector<std::string> keys = mset_keys();
  const std::string value(static_cast<std::size_t>(state.range(0)), 'v');
  std::vector<redmux::Arg> args = {"MSET"};
  for (std::size_t i = 0; i < 4; ++i) {
    args.emplace_back(keys[i]);
    args.emplace_back(value);
  }
  std::string out;
  for (auto _ : state) {
    out.clear();
    redmux::resp::encode_command(out, args);
    benchmark::DoNotOptimize(out.data());
  }
  report_encode(state, out.size());
}

void BM_redmux_encode_mset_range(benchmark::State& state) {
  static const std::vector<std::string> keys = mset_keys();
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& key : keys) pairs.emplace_back(key, std::string(16, 'v'));
  std::string out;
  for (auto _ : state) {
    out.clear();
    redmux::resp::encode_args(out, "MSET", pairs);
    benchmark::DoNotOptimize(out.data());
  }
  report_encode(state, out.size());
}

void BM_hiredis_encode_mset(benchmark::State& state) {
  static const std::vector<std::string> keys = mset_keys();
  const std::string value(16, 'v');
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  long long size = 0;
  for (auto _ : state) {
    argv.clear();
    lens.clear();
    argv.push_back("MSET");
    lens.push_back(4);
    for (const std::string& key : keys) {
      argv.push_back(key.data());
      lens.push_back(key.size());
      argv.push_back(value.data());
      lens.push_back(value.size());
    }
    char* cmd = nullptr;
    size = redisFormatCommandArgv(&cmd, static_cast<int>(argv.size()), argv.data(), lens.data());
    benchmark::DoNotOptimize(cmd);
    redisFreeCommand(cmd);
  }
  report_encode(state, static_cast<std::size_t>(size));
}

BENCHMARK(BM_redmux_encode_set)->Name("encode/redmux/SET");
BENCHMARK(BM_hiredis_encode_set)->Name("encode/hiredis/SET");
BENCHMARK(BM_redmux_encode_set_value)
    ->Name("encode/redmux/SET_value")
    ->Arg(16)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->Arg(8192)
    ->Arg(16384)
    ->Arg(64 << 10)
    ->Arg(1 << 20);
BENCHMARK(BM_hiredis_encode_set_value)
    ->Name("encode/hiredis/SET_value")
    ->Arg(16)
    ->Arg(1024)
    ->Arg(64 << 10)
    ->Arg(1 << 20);
BENCHMARK(BM_redmux_encode_mset)->Name("encode/redmux/MSET_100_pairs");
BENCHMARK(BM_redmux_encode_mset_range)->Name("encode/redmux/MSET_100_pairs_range");
BENCHMARK(BM_redmux_encode_mset_4)->Name("encode/redmux/MSET_4_pairs")->Arg(1024)->Arg(4096);
BENCHMARK(BM_hiredis_encode_mset)->Name("encode/hiredis/MSET_100_pairs");

}  // namespace

BENCHMARK_MAIN();
