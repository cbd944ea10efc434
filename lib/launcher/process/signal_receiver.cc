#include "launcher/process/signal_receiver.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/read.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "pltrun/error.h"

namespace pltrun {

namespace {

// Every live receiver's pipe (write end + 1; 0: a free slot). The handler writes each signal
// to all of them. `busy` counts the handlers inside a slot, so that a receiver closes its
// pipe only when no handler can still be writing to that descriptor number.
constexpr int kMaxReceivers = 8;
std::atomic<int> slotWriteFd[kMaxReceivers];
std::atomic<int> slotBusy[kMaxReceivers];

// The actions in place before the first receiver caught each signal, restored after the
// last one is gone; guarded by `registry`.
std::mutex registry;
std::map<int, std::pair<int, struct sigaction>> caught;  // signal -> (receivers, previous action)

void onSignal(int signal, siginfo_t* info, void*) {
  const int savedErrno = errno;
  // si_pid is meaningful for kill(), sigqueue() and tgkill() (si_code <= 0), not for the kernel's own.
  const ReceivedSignal record{signal, info != nullptr && info->si_code <= 0 ? info->si_pid : 0};
  for (int slot = 0; slot < kMaxReceivers; ++slot) {
    ++slotBusy[slot];
    const int fd = slotWriteFd[slot].load() - 1;
    // One write of a few bytes into a pipe is atomic; a full pipe drops it (signals coalesce anyway).
    if (fd >= 0) (void)::write(fd, &record, sizeof record);
    --slotBusy[slot];
  }
  errno = savedErrno;
}

}  // namespace

SignalReceiver::SignalReceiver(boost::asio::io_context& context) : reader_(context) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw Error(ErrorCode::System, std::string("pipe for signals: ") + std::strerror(errno));
  }
  reader_.assign(fds[0]);
  for (int slot = 0; slot < kMaxReceivers; ++slot) {
    int expected = 0;
    if (slotWriteFd[slot].compare_exchange_strong(expected, fds[1] + 1)) {
      slot_ = slot;
      return;
    }
  }
  ::close(fds[1]);
  throw std::logic_error("more than 8 SignalReceivers in one process");
}

SignalReceiver::~SignalReceiver() {
  {
    std::lock_guard<std::mutex> lock(registry);
    for (int signal : signals_) {
      auto& [receivers, previous] = caught[signal];
      if (--receivers == 0) {
        ::sigaction(signal, &previous, nullptr);
        caught.erase(signal);
      }
    }
  }
  const int writeFd = slotWriteFd[slot_].exchange(0) - 1;
  while (slotBusy[slot_].load() != 0) std::this_thread::yield();
  ::close(writeFd);
}

void SignalReceiver::add(int signal) {
  std::lock_guard<std::mutex> lock(registry);
  auto found = caught.find(signal);
  if (found != caught.end()) {
    ++found->second.first;
    signals_.push_back(signal);
    return;
  }
  struct sigaction action {};
  action.sa_sigaction = onSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&action.sa_mask);
  struct sigaction before {};
  if (::sigaction(signal, &action, &before) != 0) {
    throw Error(ErrorCode::System, "sigaction(" + std::to_string(signal) + "): " + std::strerror(errno));
  }
  caught[signal] = {1, before};
  signals_.push_back(signal);
}

void SignalReceiver::asyncWait(std::function<void(const ReceivedSignal&)> handler) {
  boost::asio::async_read(reader_, boost::asio::buffer(&pending_, sizeof pending_),
                          [this, handler = std::move(handler)](boost::system::error_code error, size_t) mutable {
                            if (error) return;
                            // Another receiver's signal (every pipe gets every signal): wait on.
                            if (std::find(signals_.begin(), signals_.end(), pending_.signal) == signals_.end()) {
                              asyncWait(std::move(handler));
                              return;
                            }
                            handler(pending_);
                          });
}

std::optional<ReceivedSignal> SignalReceiver::poll() {
  ReceivedSignal record;
  while (::read(reader_.native_handle(), &record, sizeof record) == sizeof record) {  // the pipe is non-blocking
    if (std::find(signals_.begin(), signals_.end(), record.signal) != signals_.end()) return record;
  }
  return std::nullopt;
}

bool sentBySlurmStepd(pid_t sender) {
  if (sender <= 0) return false;
  std::ifstream comm("/proc/" + std::to_string(sender) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name == "slurmstepd";
}

}  // namespace pltrun
