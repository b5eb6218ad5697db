// pubsub-limit (seed 000's ★★★ exercise): with sharedSubscriptionConnection=true (RESP3) a
// subscription rides the interactive connection, so the server puts that connection under
// the pubsub class of client-output-buffer-limit. One HGETALL whose reply is larger than the
// limit makes the server close the shared connection (lowered here to 1 MiB hard so that a
// 2 MiB hash is enough; the default is 32 MiB hard, 8 MiB for 60 s). With the default
// separate subscription connection the same HGETALL succeeds. CLIENT LIST's flags and
// connections of the multiplexer before the subscribe, after it, and after the HGETALL; the
// server's limit is restored at the end.
#include <thread>

#include "bench.hpp"

namespace redmux_bench {

namespace {

using namespace std::chrono_literals;

constexpr int kFields = 2048;
constexpr int kFieldBytes = 1024;  // 2 MiB of values in the reply
constexpr const char* kLimit = "pubsub 1048576 262144 60";

// "N", "P", "N+P": the flags of the connections named `name`, in CLIENT LIST order.
std::string flags_of(Bench& bench, std::string_view name) {
  std::string out;
  for (const redmux::ClientInfo& c : bench.observer().client_list().get()) {
    if (c.name != name) continue;
    if (!out.empty()) out += "+";
    out += c.flags;
  }
  return out.empty() ? "(none)" : out;
}

long long connections_named(Bench& bench, std::string_view name) {
  long long n = 0;
  for (const redmux::ClientInfo& c : bench.observer().client_list().get()) n += c.name == name;
  return n;
}

Row run_variant(Bench& bench, const std::string& variant, bool shared, const std::string& hash) {
  const std::string name = "redmux-bench-" + variant;
  redmux::Config config = bench.config_named(name);
  config.shared_subscription_connection = shared;
  config.protocol = redmux::Protocol::Resp3;
  auto mux = redmux::Multiplexer::connect(config);
  (void)mux->database().ping().get();
  Row row;
  row.scenario = "pubsub-limit";
  row.variant = variant;
  row.client = "redmux";
  row.threads = 0;
  row.add_text("flags_before", flags_of(bench, name));
  auto subscription = mux->subscriber().subscribe(Bench::key("pubsub-limit", "events"),
                                                  [](const redmux::Message&) {});
  subscription.confirmed().get();
  row.add_text("flags_subscribed", flags_of(bench, name));
  const long long closed_before =
      bench.info_integer("stats", "client_output_buffer_limit_disconnections");
  std::string outcome;
  bool hgetall_ok = false;
  std::size_t fields = 0;
  try {
    fields = mux->database().hgetall(hash).get().size();
    hgetall_ok = true;
    outcome = "ok, " + std::to_string(fields) + " fields";
  } catch (const redmux::RedmuxError& e) {
    outcome = e.what();
    if (outcome.size() > 110) outcome = outcome.substr(0, 107) + "...";
  }
  // After a close the multiplexer reconnects (and resubscribes) in the background: wait for
  // it, so the flags after are those of the connections it uses again.
  for (int i = 0; i < 200 && !mux->is_connected(); ++i) std::this_thread::sleep_for(10ms);
  if (!hgetall_ok) (void)mux->database().ping().get();
  row.add_text("hgetall", hgetall_ok ? "ok" : "closed");
  row.add("fields", static_cast<long long>(fields));
  row.add_text("flags_after", flags_of(bench, name));
  const long long closed_after =
      bench.info_integer("stats", "client_output_buffer_limit_disconnections");
  if (closed_before >= 0 && closed_after >= 0)
    row.add("limit_disconnections", closed_after - closed_before);
  row.add("server_connections", connections_named(bench, name));
  // The rule the experiment shows: closed when shared, whole when separate.
  row.ok = shared ? !hgetall_ok : (hgetall_ok && fields == static_cast<std::size_t>(kFields));
  row.check = outcome;
  return row;
}

}  // namespace

void run_pubsub_limit(Bench& bench) {
  Table table;
  table.title = "pubsub-limit: one subscription on the shared connection vs a 2 MiB HGETALL";
  table.shows =
      "a subscribed connection falls under the pubsub output limit: shared with commands, a "
      "large reply gets it closed; the default separate subscription connection is safe.";
  table.setup = bench.setup_line("1",
                                 "SUBSCRIBE, then HGETALL of " + std::to_string(kFields) +
                                     " fields × " + std::to_string(kFieldBytes) +
                                     " B; client-output-buffer-limit " + kLimit + " for the run",
                                 "1 KiB fields");
  if (bench.is_cluster()) {
    table.notes.push_back("skipped against a cluster (run it against one server).");
    bench.report().print(table);
    return;
  }
  const redmux::Reply saved =
      bench.admin().execute({"CONFIG", "GET", "client-output-buffer-limit"}).get();
  const std::string hash = Bench::key("pubsub-limit", "book:42");
  {
    std::vector<std::pair<std::string, std::string>> values;
    for (int i = 0; i < kFields; ++i) {
      values.emplace_back("field:" + std::to_string(i), std::string(kFieldBytes, 'v'));
    }
    (void)bench.observer().hset(hash, values).get();
  }
  (void)bench.admin().execute({"CONFIG", "SET", "client-output-buffer-limit", kLimit}).get();
  try {
    table.rows.push_back(run_variant(bench, "shared-connection", true, hash));
    table.rows.push_back(run_variant(bench, "separate-connection", false, hash));
  } catch (...) {
    if (saved.size() == 2) {
      (void)bench.admin()
          .execute({"CONFIG", "SET", "client-output-buffer-limit", saved.elements()[1].text()})
          .get();
    }
    throw;
  }
  if (saved.size() == 2) {
    (void)bench.admin()
        .execute({"CONFIG", "SET", "client-output-buffer-limit", saved.elements()[1].text()})
        .get();
  }
  bench.del(hash);
  table.rows[1].extra[1].with_seed_text("P+N");
  table.notes.push_back(
      "seed 000 (StackExchange.Redis): two connections by default, flags=P (subscriptions) "
      "and flags=N (commands); the exercise asks why sharedSubscriptionConnection=true is "
      "risky with a large HGETALL — this table is the answer, measured.");
  table.notes.push_back(
      "flags: CLIENT LIST's flags of the multiplexer's connections (N normal, P pub/sub), "
      "before the SUBSCRIBE, after it, and after the HGETALL (once reconnected).");
  bench.report().print(table);
}

}  // namespace redmux_bench
