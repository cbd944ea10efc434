#pragma once
// A StoreServer running on its own thread, for tests: started on 127.0.0.1 port 0, stopped
// and joined when the object goes away. Inspect it through onServer(), which runs code on
// the server's thread and returns the result.

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <memory>
#include <thread>

#include "pltrun/tcp_store.h"
#include "rendezvous/store/server/store_server.h"

namespace pltrun::test {

class ServerThread {
 public:
  explicit ServerThread(rdzv::StoreServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<rdzv::StoreServer>(context_, options);
    server_->start();
    thread_ = std::thread([this] { context_.run(); });
  }
  ~ServerThread() { stop(); }

  int port() const { return server_->port(); }

  template <typename Function>
  auto onServer(Function function) {
    std::packaged_task<decltype(function())()> task(function);
    auto result = task.get_future();
    boost::asio::post(context_, [&task] { task(); });
    return result.get();
  }

  /// Stops the server (closing every connection) and joins its thread.
  void stop() {
    if (!thread_.joinable()) return;
    onServer([this] {
      server_->stop();
      context_.stop();
      return 0;
    });
    thread_.join();
  }

  size_t connections() {
    return onServer([this] { return server_->connectionCount(); });
  }
  size_t waiters() {
    return onServer([this] { return server_->table().waiterCount(); });
  }

  TcpStoreOptions clientOptions(StoreDialect dialect = StoreDialect::Torch2) const {
    TcpStoreOptions options;
    options.port = port();
    options.dialect = dialect;
    options.connectTimeout = std::chrono::seconds(5);
    options.timeout = std::chrono::seconds(10);
    return options;
  }

 private:
  boost::asio::io_context context_;
  std::unique_ptr<rdzv::StoreServer> server_;
  std::thread thread_;
};

}  // namespace pltrun::test
