// The Bookstore API's view counter: an HTTP service (cpp-httplib) that opens one
// multiplexer at start-up and shares it across every request handler.
//
//   bookstore --port 5080 --redis "localhost:6379,name=bookstore-api,abortConnect=false"
//   curl -X POST http://127.0.0.1:5080/books/42/views   → {"bookId":42,"views":1}
//   curl http://127.0.0.1:5080/books/7/views             → {"bookId":7,"views":0}
//
// With abortConnect=false it starts while Redis is down and answers 503 until it is back.
// --port 0 picks a free port; the "listening on" line names it. docs/bookstore.md.
// Built with redmux::prometheus (prometheus-cpp-dev), it serves the multiplexer's metrics:
//   curl http://127.0.0.1:5080/metrics                   → Prometheus's text format
#include <httplib.h>
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string>
#include <thread>

#include "bookstore.hpp"
#ifdef BOOKSTORE_METRICS
#include <redmux/prometheus.hpp>
#endif

namespace {

struct Arguments {
  std::string host = "127.0.0.1";
  int port = 5080;
  std::string redis = "localhost:6379,name=bookstore-api,abortConnect=false,latencyHistograms=true";
};

constexpr const char* kUsage =
    "usage: bookstore [--host ADDR] [--port N (0: any free port)] [--redis CONFIGURATION]\n";

int usage(const char* problem) {
  std::fprintf(stderr, "bookstore: %s\n%s", problem, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--help" || option == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (option != "--host" && option != "--port" && option != "--redis") {
      return usage(("unknown option " + option).c_str());
    }
    if (i + 1 >= argc) return usage(("option " + option + " needs a value").c_str());
    const std::string value = argv[++i];
    if (option == "--host") {
      args.host = value;
    } else if (option == "--port") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), args.port);
      if (ec != std::errc() || end != value.data() + value.size() || args.port < 0 ||
          args.port > 65535) {
        return usage(("invalid port " + value).c_str());
      }
    } else {  // --redis
      args.redis = value;
    }
  }

  // Handle SIGINT/SIGTERM on a thread of our own (sigwait), so stopping the server does not
  // happen inside a signal handler. Blocked before any other thread starts, so all inherit.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // One multiplexer for the whole application, opened once, shared by every handler.
  std::shared_ptr<redmux::Multiplexer> mux;
  try {
    mux = redmux::Multiplexer::connect(args.redis);
  } catch (const redmux::RedmuxError& e) {
    std::fprintf(stderr, "bookstore: %s\n", e.what());
    return 1;
  }
  const bookstore::BookViews views(mux);

  httplib::Server server;
  auto answer = [](httplib::Response& res, const bookstore::HttpAnswer& a) {
    res.status = a.status;
    res.set_content(a.body, "application/json");
  };
  auto with_id = [&](const httplib::Request& req, httplib::Response& res, auto&& handler) {
    const auto id = bookstore::parse_book_id(req.matches[1].str());
    if (!id) {
      answer(res, {400, bookstore::error_body("bad book id", "a book id is a whole number")});
      return;
    }
    answer(res, handler(*id));
  };
  // cpp-httplib 0.11 answers 400 to a POST without Content-Length before routing it, and
  // `curl -X POST …` sends none: such a body-less POST is handled before routing instead.
  static const std::regex views_path(R"(/books/([^/]+)/views)");
  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    std::smatch match;
    if (req.method != "POST" || req.has_header("Content-Length") ||
        req.has_header("Transfer-Encoding") || !std::regex_match(req.path, match, views_path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const auto id = bookstore::parse_book_id(match[1].str());
    answer(res, id ? views.record_view(*id)
                   : bookstore::HttpAnswer{
                         400, bookstore::error_body("bad book id", "a book id is a whole number")});
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Post(R"(/books/([^/]+)/views)", [&](const httplib::Request& req, httplib::Response& res) {
    with_id(req, res, [&](long long id) { return views.record_view(id); });
  });
  server.Get(R"(/books/([^/]+)/views)", [&](const httplib::Request& req, httplib::Response& res) {
    with_id(req, res, [&](long long id) { return views.views(id); });
  });
#ifdef BOOKSTORE_METRICS
  // Prometheus scrapes this: the multiplexer's counters, gauges and (latencyHistograms=true)
  // latency histograms, read at each scrape.
  const std::vector<std::shared_ptr<prometheus::Collectable>> metrics = {
      std::make_shared<redmux::PrometheusCollector>(mux)};
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(redmux::text_exposition(metrics), "text/plain; version=0.0.4");
  });
#endif

  int port = args.port;
  if (port == 0) {
    port = server.bind_to_any_port(args.host);
    if (port < 0) return usage(("cannot listen on " + args.host).c_str());
  } else if (!server.bind_to_port(args.host, port)) {
    std::fprintf(stderr, "bookstore: cannot listen on %s:%d\n", args.host.c_str(), port);
    return 1;
  }
  std::printf("bookstore listening on http://%s:%d (redis: %s, connected: %s)\n", args.host.c_str(),
              port, mux->config().to_string().c_str(), mux->is_connected() ? "yes" : "not yet");
  std::fflush(stdout);

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    server.stop();
  });
  server.listen_after_bind();
  // listen_after_bind() also returns on failure: wake the stopper so it can be joined.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  mux->close();
  return 0;
}
