// TLS against a real redis-server on its tls-port (plain port off), with certificates made
// here by the openssl CLI: a CA, a server certificate for localhost and 127.0.0.1, a client
// certificate, a server certificate for another name, and an unrelated second CA.
#include <gtest/gtest.h>

#if REDMUX_WITH_TLS

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "redmux/redmux.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

void run_openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  const test::ProcessResult result = test::run_process(argv, 30s);
  if (!result.ok()) {
    throw std::runtime_error("openssl " + args.front() + " failed (" + result.describe() +
                             "): " + result.err);
  }
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

/// Certificates for the whole suite, made once in a temporary directory.
struct Certificates {
  fs::path dir;
  std::string ca, other_ca;                   // trusted CA; an unrelated CA
  std::string server_cert, server_key;        // SAN: DNS:localhost, IP:127.0.0.1
  std::string client_cert, client_key;        // signed by `ca`
  std::string elsewhere_cert, elsewhere_key;  // SAN: DNS:elsewhere.example only
  std::string stranger_cert, stranger_key;    // a client certificate signed by `other_ca`

  Certificates() {
    dir = fs::temp_directory_path() / ("redmux-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto file = [&](const std::string& name) { return (dir / name).string(); };
    // A minimal config so the CLI's system openssl.cnf adds no extensions of its own.
    write_text(dir / "req.cnf",
               "[req]\ndistinguished_name=dn\nprompt=no\n[dn]\nCN=unused\n"
               "[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
               "subjectKeyIdentifier=hash\n");
    const auto make_ca = [&](const std::string& name) {
      run_openssl({"req",         "-x509",
                   "-new",        "-noenc",
                   "-config",     file("req.cnf"),
                   "-extensions", "ca",
                   "-newkey",     "ec",
                   "-pkeyopt",    "ec_paramgen_curve:prime256v1",
                   "-keyout",     file(name + ".key"),
                   "-out",        file(name + ".crt"),
                   "-days",       "2",
                   "-subj",       "/CN=redmux test " + name});
      return file(name + ".crt");
    };
    int serial = 1;
    const auto make_leaf = [&](const std::string& name, const std::string& extensions,
                               const std::string& signer = "ca") {
      write_text(dir / (name + ".ext"), "basicConstraints=CA:FALSE\n" + extensions);
      run_openssl({"req", "-new", "-noenc", "-config", file("req.cnf"), "-newkey", "ec", "-pkeyopt",
                   "ec_paramgen_curve:prime256v1", "-keyout", file(name + ".key"), "-out",
                   file(name + ".csr"), "-subj", "/CN=redmux test " + name});
      run_openssl({"x509", "-req", "-in", file(name + ".csr"), "-CA", file(signer + ".crt"),
                   "-CAkey", file(signer + ".key"), "-set_serial", std::to_string(++serial),
                   "-days", "2", "-extfile", file(name + ".ext"), "-out", file(name + ".crt")});
    };
    ca = make_ca("ca");
    other_ca = make_ca("other-ca");
    make_leaf("server", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    make_leaf("client", "extendedKeyUsage=clientAuth\n");
    make_leaf("elsewhere", "subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth\n");
    make_leaf("stranger", "extendedKeyUsage=clientAuth\n", "other-ca");
    server_cert = file("server.crt");
    server_key = file("server.key");
    client_cert = file("client.crt");
    client_key = file("client.key");
    elsewhere_cert = file("elsewhere.crt");
    elsewhere_key = file("elsewhere.key");
    stranger_cert = file("stranger.crt");
    stranger_key = file("stranger.key");
  }
  ~Certificates() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::tls_unsupported().empty()) certs_ = new Certificates();
  }
  void SetUp() override {
    if (const std::string reason = test::tls_unsupported(); !reason.empty()) GTEST_SKIP() << reason;
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }

  /// A TLS-only server. `client_auth`: tls-auth-clients yes (mutual TLS).
  static test::ServerOptions server_options(bool client_auth = false, bool elsewhere_cert = false) {
    test::ServerOptions options;
    options.tls = true;
    options.tls_files.cert_file = elsewhere_cert ? certs_->elsewhere_cert : certs_->server_cert;
    options.tls_files.key_file = elsewhere_cert ? certs_->elsewhere_key : certs_->server_key;
    options.tls_files.ca_file = certs_->ca;
    options.tls_files.client_cert_file = certs_->client_cert;
    options.tls_files.client_key_file = certs_->client_key;
    options.args = {"--tls-auth-clients", client_auth ? "yes" : "no"};
    return options;
  }

  /// "127.0.0.1:<port>,ssl=true,sslCaFile=<ca>,connectRetry=0" plus `extra`.
  static std::string tls_config(const test::RedisServer& server, const std::string& extra = "",
                                const std::string& ca = "") {
    return server.address() + ",ssl=true,sslCaFile=" + (ca.empty() ? certs_->ca : ca) +
           ",connectRetry=0,connectTimeout=3000" + extra;
  }

  /// The message of the ConnectionError that connecting with `configuration` throws.
  static std::string connect_error(const std::string& configuration) {
    try {
      Multiplexer::connect(configuration);
    } catch (const ConnectionError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("unexpected exception: ") + e.what();
    }
    return "connected";
  }

  static bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
  }

  static Certificates* certs_;
};

Certificates* TlsTest::certs_ = nullptr;

std::string percent_encode(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_') {
      out += c;
    } else {
      char buffer[4];
      std::snprintf(buffer, sizeof buffer, "%%%02X", static_cast<unsigned char>(c));
      out += buffer;
    }
  }
  return out;
}

TEST_F(TlsTest, RedissUrlAndSslTrueConnectAndCommandsWork) {
  test::RedisServer server(server_options());
  {
    auto mux = Multiplexer::connect("rediss://" + server.address() +
                                    "?sslCaFile=" + percent_encode(certs_->ca));
    Database db = mux->database();
    EXPECT_TRUE(db.set("tls:k", "over rediss").get());
    EXPECT_EQ(db.get("tls:k").get(), std::optional<std::string>("over rediss"));
  }
  auto mux = Multiplexer::connect(tls_config(server, ",name=redmux-tls"));
  EXPECT_EQ(mux->database().get("tls:k").get(), std::optional<std::string>("over rediss"));
  // The server has no plain port: the value went both ways over TLS.
  EXPECT_EQ(server.cli({"GET", "tls:k"}), "over rediss");
  EXPECT_TRUE(contains(server.cli({"CLIENT", "LIST"}), "name=redmux-tls"));
}

TEST_F(TlsTest, ManyThreadsArePipelinedOverOneTlsConnection) {
  test::RedisServer server(server_options());
  auto mux = Multiplexer::connect(tls_config(server));
  constexpr int kThreads = 16, kPerThread = 400;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Database db = mux->database();
      const std::string counter = "tls:thread:" + std::to_string(t);
      std::vector<Future<long long>> pending;
      for (int i = 1; i <= kPerThread; ++i) pending.push_back(db.incr(counter));
      for (int i = 1; i <= kPerThread; ++i) {
        if (pending[static_cast<std::size_t>(i - 1)].get() != i) ++wrong;
      }
      const std::string value(3000 + t, static_cast<char>('a' + t));  // records > one packet
      db.set(counter + ":v", value).get();
      if (db.get(counter + ":v").get() != value) ++wrong;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  const MultiplexerStatus status = mux->status();
  EXPECT_EQ(status.connections, 1u);
  EXPECT_GT(status.commands_per_write(), 1.0) << "commands were not joined into writes";
  EXPECT_EQ(server.cli({"GET", "tls:thread:15"}), std::to_string(kPerThread));

  // A value of many TLS records each way (written 16 KiB of plain text per step).
  std::string big(3 * 1024 * 1024 + 7, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  Database db = mux->database();
  EXPECT_TRUE(db.set("tls:big", big).get());
  EXPECT_EQ(db.get("tls:big").get(), std::optional<std::string>(big));
  EXPECT_EQ(server.cli({"STRLEN", "tls:big"}), std::to_string(big.size()));
}

TEST_F(TlsTest, WrongCaFailsWithAClearError) {
  test::RedisServer server(server_options());
  const std::string message = connect_error(tls_config(server, "", certs_->other_ca));
  EXPECT_TRUE(contains(message, "TLS handshake with " + server.address() + " failed")) << message;
  EXPECT_TRUE(contains(message, "certificate verify failed")) << message;
  EXPECT_TRUE(contains(message, "not signed by a CA redmux trusts")) << message;
  EXPECT_TRUE(contains(message, "sslCaFile")) << message;
  EXPECT_TRUE(contains(message, "sslVerify=false")) << message;
}

// A server that speaks only a TLS version older than 1.2: the error says so, not to check
// the CA or the name.
TEST_F(TlsTest, AServerWithOnlyAnOlderTlsVersionIsSaidToShareNone) {
  test::RedisServer server(server_options());
  // Set once it is up: its readiness check (redis-cli) cannot speak TLS 1.1 either.
  server.cli({"CONFIG", "SET", "tls-protocols", "TLSv1.1"});
  const std::string message = connect_error(tls_config(server));
  EXPECT_TRUE(contains(message, "TLS handshake with " + server.address() + " failed")) << message;
  EXPECT_TRUE(contains(message, "share no TLS version")) << message;
  EXPECT_FALSE(contains(message, "check sslCaFile")) << message;
}

TEST_F(TlsTest, NoCaOptionUsesTheSystemStoreWhichDoesNotTrustTheTestCa) {
  test::RedisServer server(server_options());
  const std::string message =
      connect_error(server.address() + ",ssl=true,connectRetry=0,connectTimeout=3000");
  EXPECT_TRUE(contains(message, "certificate verify failed")) << message;
}

TEST_F(TlsTest, SslVerifyFalseConnectsDespiteTheWrongCaAndName) {
  test::RedisServer server(server_options());
  auto mux = Multiplexer::connect(
      tls_config(server, ",sslVerify=false,sslHost=wrong.example", certs_->other_ca));
  EXPECT_EQ(mux->database().ping().get(), "PONG");
}

TEST_F(TlsTest, ServerNameIsVerifiedAgainstSslHost) {
  test::RedisServer server(server_options());
  const std::string message = connect_error(tls_config(server, ",sslHost=wrong.example"));
  EXPECT_TRUE(contains(message, "hostname mismatch")) << message;
  EXPECT_TRUE(contains(message, "\"wrong.example\"")) << message;
  EXPECT_TRUE(contains(message, "sslHost")) << message;
  // A name the certificate does hold is accepted.
  auto mux = Multiplexer::connect(tls_config(server, ",sslHost=localhost"));
  EXPECT_EQ(mux->database().ping().get(), "PONG");
}

TEST_F(TlsTest, AnIpEndpointIsVerifiedAgainstTheCertificatesIpAddresses) {
  // Signed by the trusted CA, but for elsewhere.example only: connecting to 127.0.0.1 fails.
  test::RedisServer server(server_options(false, /*elsewhere_cert=*/true));
  const std::string message = connect_error(tls_config(server));
  EXPECT_TRUE(contains(message, "IP address mismatch")) << message;
  auto mux = Multiplexer::connect(tls_config(server, ",sslHost=elsewhere.example"));
  EXPECT_EQ(mux->database().ping().get(), "PONG");
}

TEST_F(TlsTest, MutualTlsNeedsTheClientCertificate) {
  test::RedisServer server(server_options(/*client_auth=*/true));
  const std::string message = connect_error(tls_config(server));
  EXPECT_TRUE(contains(message, server.address())) << message;
  EXPECT_TRUE(contains(message, "client certificate")) << message;
  EXPECT_TRUE(contains(message, "sslCert")) << message;
  // A client certificate the server's CA did not sign: the server's alert is explained.
  const std::string stranger = connect_error(
      tls_config(server, ",sslCert=" + certs_->stranger_cert + ",sslKey=" + certs_->stranger_key));
  // The alert, or a reset before it was read: both messages name the certificate to check.
  EXPECT_TRUE(contains(stranger, "refused the client certificate in sslCert") ||
              contains(stranger,
                       "does it trust the CA that signed the client certificate in "
                       "sslCert"))
      << stranger;

  auto mux = Multiplexer::connect(
      tls_config(server, ",sslCert=" + certs_->client_cert + ",sslKey=" + certs_->client_key));
  Database db = mux->database();
  EXPECT_TRUE(db.set("mtls", "yes").get());
  EXPECT_EQ(db.get("mtls").get(), std::optional<std::string>("yes"));
}

TEST_F(TlsTest, ReconnectsOverTlsAfterTheServerRestarts) {
  test::RedisServer server(server_options());
  auto mux =
      Multiplexer::connect(tls_config(server, ",reconnectBaseDelay=20,reconnectMaxDelay=200"));
  Database db = mux->database();
  EXPECT_TRUE(db.set("before", "1").get());
  server.kill();
  server.restart();
  // Commands issued while reconnecting are queued and sent once the new TLS session is up.
  ASSERT_TRUE(test::wait_until(
      [&] {
        try {
          return db.set("after", "2").get();
        } catch (const RedmuxError&) {
          return false;
        }
      },
      10s));
  EXPECT_EQ(server.cli({"GET", "after"}), "2");
  EXPECT_EQ(db.get("before").get(), std::nullopt);  // a new server: its data is gone
  EXPECT_GE(mux->status().reconnects, 1u);
}

TEST_F(TlsTest, Resp2OverTls) {
  test::RedisServer server(server_options());
  auto mux = Multiplexer::connect(tls_config(server, ",protocol=resp2,name=resp2-tls"));
  Database db = mux->database();
  EXPECT_EQ(db.incr("n").get(), 1);
  EXPECT_EQ(db.hset("h", "f", "v").get(), 1);
  EXPECT_EQ(db.hget("h", "f").get(), std::optional<std::string>("v"));
  std::string clients = server.cli({"CLIENT", "LIST"});
  const std::size_t line = clients.find("name=resp2-tls");
  ASSERT_NE(line, std::string::npos) << clients;
  const std::string ours = clients.substr(line, clients.find('\n', line) - line);
  EXPECT_TRUE(contains(ours, "resp=2")) << ours;
}

TEST_F(TlsTest, TheConnectTimeoutBoundsTheTlsHandshake) {
  test::RedisServer server(server_options());
  server.pause();  // the kernel still accepts TCP connections; nobody answers the handshake
  const auto start = std::chrono::steady_clock::now();
  const std::string message = connect_error(server.address() + ",ssl=true,sslCaFile=" + certs_->ca +
                                            ",connectRetry=0,connectTimeout=300");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  server.resume();
  EXPECT_TRUE(contains(message, "timed out after 300 ms (TLS handshake")) << message;
  EXPECT_LT(elapsed, 3s);
}

TEST_F(TlsTest, APlainServerIsNotMistakenForTls) {
  test::RedisServer server;  // plain text only: it waits for the end of a line, never answers
  const std::string message = connect_error(server.address() + ",ssl=true,sslCaFile=" + certs_->ca +
                                            ",connectRetry=0,connectTimeout=500");
  EXPECT_TRUE(contains(message, "timed out after 500 ms (TLS handshake")) << message;
  EXPECT_TRUE(contains(message, "tls-port")) << message;
  // Only the probe stays. The server sees our close a moment after connect() returned, so
  // wait for it; a connection left open would keep the count at 2 and fail here.
  EXPECT_TRUE(test::wait_until([&] { return server.info_int("connected_clients") == 1; }))
      << server.info_int("connected_clients") << " clients";
}

TEST_F(TlsTest, AtSyncTimeoutTheErrorSaysTheTlsHandshakeWasUnansweredAndWhy) {
  // syncTimeout ends connect() before the attempt's own timeout (with the defaults, both
  // 5000 ms, either may come first): its message still carries the hint.
  test::RedisServer server;  // plain text only
  const std::size_t io_threads = test::threads_named("redmux-io-").size();
  const std::string message = connect_error(server.address() + ",ssl=true,sslCaFile=" + certs_->ca +
                                            ",connectRetry=0,connectTimeout=3000,syncTimeout=800");
  EXPECT_TRUE(contains(message, "connected within syncTimeout=800 ms")) << message;
  EXPECT_TRUE(contains(message, server.address() +
                                    " in its TLS handshake, unanswered so far (is this the "
                                    "server's TLS port (tls-port)?)"))
      << message;
  // The handshake given up on is stopped before connect() throws, and the multiplexer's I/O
  // thread ends with it (joined there, or just after when a handler let go of the pool
  // last): nothing of it runs on until connectTimeout (2.2 s more), say into the process's
  // exit, where OpenSSL frees what a handshake still uses.
  EXPECT_TRUE(
      test::wait_until([&] { return test::threads_named("redmux-io-").size() <= io_threads; }, 1s));
}

TEST_F(TlsTest, APlainConnectionToATlsPortSuggestsSsl) {
  test::RedisServer server(server_options());  // TLS only: it closes a plain connection
  const std::string message =
      connect_error(server.address() + ",connectRetry=0,connectTimeout=3000");
  EXPECT_TRUE(contains(message, "closed the connection")) << message;
  EXPECT_TRUE(contains(message, "is this a TLS port? set ssl=true")) << message;
}

TEST_F(TlsTest, UnreadableFilesAreConfigErrorsNamingOptionAndPath) {
  const std::string missing = (certs_->dir / "missing.pem").string();
  const auto config_error = [](const std::string& configuration) -> std::string {
    try {
      Multiplexer::connect(configuration);
    } catch (const ConfigError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("unexpected exception: ") + e.what();
    }
    return "connected";
  };
  // No server is needed: the files are read before any connection is tried.
  const std::string endpoint = "127.0.0.1:1,ssl=true";
  std::string message = config_error(endpoint + ",sslCaFile=" + missing);
  EXPECT_TRUE(contains(message, "sslCaFile=" + missing)) << message;
  EXPECT_TRUE(contains(message, "No such file")) << message;
  message = config_error(endpoint + ",sslCaPath=" + missing);
  EXPECT_TRUE(contains(message, "sslCaPath=" + missing)) << message;
  message = config_error(endpoint + ",sslCaFile=" + certs_->server_key);  // a key, not a CA
  EXPECT_TRUE(contains(message, "sslCaFile=" + certs_->server_key)) << message;
  message = config_error(endpoint + ",sslCert=" + certs_->client_cert + ",sslKey=" + missing);
  EXPECT_TRUE(contains(message, "sslKey=" + missing)) << message;
  message = config_error(endpoint + ",sslCert=" + missing + ",sslKey=" + certs_->client_key);
  EXPECT_TRUE(contains(message, "sslCert=" + missing)) << message;
  // A key that belongs to another certificate.
  message =
      config_error(endpoint + ",sslCert=" + certs_->client_cert + ",sslKey=" + certs_->server_key);
  EXPECT_TRUE(contains(message, "does not belong to the certificate")) << message;
  EXPECT_TRUE(contains(message, "sslKey=" + certs_->server_key)) << message;
  // An encrypted key fails (and OpenSSL does not prompt for its passphrase on a terminal).
  const std::string encrypted = (certs_->dir / "encrypted.key").string();
  run_openssl(
      {"pkey", "-in", certs_->client_key, "-aes256", "-passout", "pass:secret", "-out", encrypted});
  message = config_error(endpoint + ",sslCert=" + certs_->client_cert + ",sslKey=" + encrypted);
  EXPECT_TRUE(contains(message, "sslKey=" + encrypted + ": no usable private key")) << message;
}

#ifdef REDMUX_CLI_PATH
TEST_F(TlsTest, RedmuxCliTakesRedisCliTlsFlags) {
  test::RedisServer server(server_options(/*client_auth=*/true));
  const auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {REDMUX_CLI_PATH, "-p", std::to_string(server.port())});
    return test::run_process(args, 30s);
  };
  const std::vector<std::string> client = {"--cert", certs_->client_cert, "--key",
                                           certs_->client_key};
  std::vector<std::string> args = {"--tls", "--cacert", certs_->ca};
  args.insert(args.end(), client.begin(), client.end());
  args.insert(args.end(), {"SET", "from-cli", "yes"});
  test::ProcessResult result = cli(args);
  EXPECT_TRUE(result.ok()) << result.describe() << ": " << result.err;
  EXPECT_EQ(test::trim(result.out), "OK");
  EXPECT_EQ(server.cli({"GET", "from-cli"}), "yes");

  args = {"--tls", "--cacert", certs_->other_ca};  // the wrong CA
  args.insert(args.end(), client.begin(), client.end());
  args.push_back("PING");
  result = cli(args);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "certificate verify failed")) << result.err;
  // The advice names the CLI's flags, not the library's options.
  EXPECT_TRUE(contains(result.err, "give --cacert (or --cacertdir) the CA")) << result.err;
  EXPECT_TRUE(contains(result.err, "--insecure skips verification")) << result.err;
  EXPECT_FALSE(contains(result.err, "sslCaFile")) << result.err;

  args = {"--tls", "--insecure", "--sni", "wrong.example", "--cacert", certs_->other_ca};
  args.insert(args.end(), client.begin(), client.end());
  args.push_back("PING");
  result = cli(args);
  EXPECT_TRUE(result.ok()) << result.describe() << ": " << result.err;
  EXPECT_EQ(test::trim(result.out), "PONG");

  result = cli({"--cacert", certs_->ca, "PING"});  // without --tls
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(contains(result.err, "need --tls")) << result.err;

  // --tls to a plain port: the server never answers the TLS handshake. The error names the
  // endpoint the user gave, not the configuration the CLI made, and no library option. The
  // connect timeout and the CLI's wait for a connection are both 5 s, so either ends it.
  test::RedisServer plain;
  result = test::run_process({REDMUX_CLI_PATH, "-p", std::to_string(plain.port()), "--tls",
                              "--cacert", certs_->ca, "PING"},
                             30s);
  EXPECT_EQ(result.exit_code, 2);
  const bool waited =
      contains(result.err, "no endpoint of \"" + plain.address() + "\" connected within ");
  if (waited) {
    // The TLS handshake's own question is asked once, not again in other words.
    EXPECT_TRUE(
        contains(result.err, "(is this the server's TLS port (tls-port)?); is the server up?"))
        << result.err;
    EXPECT_FALSE(contains(result.err, "is this its port")) << result.err;
  } else {
    EXPECT_TRUE(contains(result.err, "connecting to " + plain.address() +
                                         " timed out after 5000 ms (TLS handshake); is this the "
                                         "server's TLS port (tls-port)?"))
        << result.err;
  }
  EXPECT_FALSE(contains(result.err, "connectTimeout")) << result.err;
  EXPECT_FALSE(contains(result.err, "syncTimeout")) << result.err;
  EXPECT_FALSE(contains(result.err, "abortConnect")) << result.err;
  EXPECT_FALSE(contains(result.err, "sslCaFile")) << result.err;
}
#endif

}  // namespace
}  // namespace redmux

#else  // !REDMUX_WITH_TLS

#include "redmux/redmux.hpp"

namespace redmux {
namespace {

TEST(TlsTest, WithoutTlsSupportSslIsAConfigError) {
  try {
    Multiplexer::connect("127.0.0.1:1,ssl=true");
    FAIL() << "a TLS request must not fall back to plain text";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("REDMUX_WITH_TLS=OFF"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace redmux

#endif
