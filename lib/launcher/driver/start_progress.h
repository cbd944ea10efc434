#pragma once
// While the driver's agents start (ssh, then pltrun on each host) and meet in the first
// round, the driver says what it waits for: a line at the start with the most it waits (the
// rendezvous' join_timeout, after which the agents give up), then one every 5 s with how
// many have joined and, once they report them, which hosts are missing. It reads the joins
// from the store it hosts, as any agent would; the first round formed ends the lines.
// Ctrl-C ends the wait as it ends the job (the driver's signals reach every agent).

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "launcher/plan/host_list.h"
#include "pltrun/tcp_store.h"

namespace pltrun {

class AgentStartProgress {
 public:
  /// `store` reaches the driver's own store (its secret and the run as its context).
  AgentStartProgress(boost::asio::io_context& context, TcpStoreOptions store, std::string runId,
                     const std::vector<HostSlots>& hosts, std::chrono::milliseconds joinTimeout);

  /// Prints the first line and arms the timer.
  void start();
  /// No more lines (the job ended).
  void stop();

 private:
  void arm();
  /// False once the first round has formed.
  bool report();

  boost::asio::steady_timer timer_;
  TcpStoreOptions storeOptions_;
  std::unique_ptr<TcpStore> store_;
  std::string keys_;  ///< "pltrun/rdzv/RUN_ID/"
  size_t hostCount_;
  std::string hostNames_;  ///< for the first line: at most 8 names
  std::chrono::milliseconds joinTimeout_;
  std::chrono::steady_clock::time_point started_;
  bool stopped_ = false;
};

}  // namespace pltrun
