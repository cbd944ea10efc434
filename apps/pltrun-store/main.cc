// pltrun-store: the rendezvous store as a standalone server for a dedicated host.
// Its first line on stdout is "listening on ADDR:PORT", flushed at once, so scripts can
// start it with --port 0 and read the port back. Runs until SIGINT or SIGTERM.

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstdlib>

#include "base/out_of_descriptors.h"
#include "pltrun/error.h"
#include "rendezvous/store/server/secret_file.h"
#include "rendezvous/store/server/store_server.h"
#include "version/version.h"

namespace {

constexpr int kUsageError = 2;

int serve(pltrun::rdzv::StoreServerOptions options) {
  boost::asio::io_context context;
  pltrun::rdzv::raiseOpenFileLimit();
  pltrun::rdzv::StoreServer server(context, std::move(options));
  server.start();
  std::printf("listening on %s:%d\n", server.host().c_str(), server.port());
  std::fflush(stdout);
  boost::asio::signal_set stopSignals(context, SIGINT, SIGTERM);
  stopSignals.async_wait([&](boost::system::error_code, int signal) {
    spdlog::info("store: stopping on signal {}", signal);
    server.stop();
    context.stop();
  });
  context.run();
  return 0;
}

// The timeouts as the command line gives them, in seconds.
struct TimeoutSeconds {
  double request = 30;
  double idle = 0;
  double auth = 5;
};

void declareOptions(CLI::App& app, pltrun::rdzv::StoreServerOptions& options, TimeoutSeconds& seconds,
                    std::string& secretFile) {
  app.add_option("--host", options.host, "address to listen on (default 127.0.0.1)");
  app.add_option("--port", options.port, "port to listen on; 0 picks a free one (default 0)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--max-connections", options.maxConnections, "connections held at once (default 100000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-key-size", options.limits.maxKeySize, "largest key in bytes (default 65536)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-value-size", options.limits.maxValueSize, "largest value in bytes (default 64 MiB)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-store-bytes", options.maxStoreBytes,
                 "bytes held in all: keys, values, queue items and parked requests, each with its fixed cost "
                 "(and as much again in connection buffers); a request past it is refused (default 2 GiB)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-keys", options.maxStoreKeys,
                 "keys and queue items held at once; a new one past it is refused (default 4 Mi)")
      ->check(CLI::PositiveNumber);
  app.add_option("--request-timeout", seconds.request,
                 "seconds a started request may take to arrive whole (default 30)")
      ->check(CLI::PositiveNumber);
  app.add_option("--idle-timeout", seconds.idle, "close connections silent this many seconds (default 0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--auth-timeout", seconds.auth,
                 "with --secret-file: seconds a connection has to authenticate (default 5)")
      ->check(CLI::PositiveNumber);
  app.add_option("--secret-file", secretFile,
                 "require pltrun's shared-secret authentication, with the secret in this file, readable by its "
                 "owner only (default: $PLTRUN_SECRET_FILE; torch clients are then refused)");
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a client that vanished mid-reply is an error code, not a death
  spdlog::set_pattern("pltrun-store: %v");
  CLI::App app{"pltrun-store: the rendezvous store (PyTorch TCPStore protocol, torch 1.13 and 2.x clients)",
               "pltrun-store"};
  app.set_version_flag("--version", pltrun::buildVersion());
  pltrun::rdzv::StoreServerOptions options;
  TimeoutSeconds seconds;
  std::string secretFile;
  declareOptions(app, options, seconds, secretFile);
  try {
    app.parse(argc, argv);
    const auto milliseconds = [](double seconds) {
      return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    };
    options.requestTimeout = milliseconds(seconds.request);
    options.idleTimeout = milliseconds(seconds.idle);
    options.authTimeout = milliseconds(seconds.auth);
    if (!secretFile.empty()) {
      options.secret = pltrun::rdzv::readSecretFile(secretFile, "--secret-file");
    } else if (const char* fromEnvironment = std::getenv("PLTRUN_SECRET_FILE"); fromEnvironment && *fromEnvironment) {
      options.secret = pltrun::rdzv::readSecretFile(fromEnvironment, "PLTRUN_SECRET_FILE");
    }
    return serve(std::move(options));
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("pltrun-store %s\n", pltrun::buildVersion());
    return 0;
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "pltrun-store: error: %s (see pltrun-store --help)\n", error.what());
    return kUsageError;
  } catch (const pltrun::Error& error) {
    std::fprintf(stderr, "pltrun-store: error: %s\n", pltrun::withDescriptorAdvice(error.what()).c_str());
    return error.code() == pltrun::ErrorCode::InvalidArgument ? kUsageError : 1;
  } catch (const std::exception& error) {
    // Out of descriptors at start-up (epoll, the signal pipe): one line, not an abort.
    std::fprintf(stderr, "pltrun-store: error: %s\n", pltrun::withDescriptorAdvice(error.what()).c_str());
    return 1;
  }
}
