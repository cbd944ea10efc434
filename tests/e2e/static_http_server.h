#pragma once
// A scrape target that serves one fixed text at every path, on 127.0.0.1 port 0, on a
// thread of its own: what the metrics test puts beside pltrun as a stand-in for NVIDIA's DCGM
// exporter (its per-GPU series labelled gpu and UUID), so that Prometheus holds series to join
// pltrun_rank_info with. One request per connection (Connection: close).

#include <atomic>
#include <string>
#include <thread>

#include "helpers/loopback_listener.h"

namespace pltrun::test {

class StaticHttpServer {
 public:
  explicit StaticHttpServer(std::string body);
  ~StaticHttpServer();  ///< stops the thread and closes the listener
  StaticHttpServer(const StaticHttpServer&) = delete;
  StaticHttpServer& operator=(const StaticHttpServer&) = delete;

  /// "127.0.0.1:PORT".
  std::string address() const { return "127.0.0.1:" + std::to_string(listener_.port()); }

 private:
  void serve();
  void answer(int connection) const;

  std::string body_;
  LoopbackListener listener_{64};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace pltrun::test
