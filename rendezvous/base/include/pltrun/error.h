#pragma once
// The one exception type of pltrun (public: the client library throws it too; no Boost,
// spdlog or nlohmann here). The code tells callers how to react (exit status,
// retry or not); the message is written for the person who has to act on it.

#include <stdexcept>
#include <string>

namespace pltrun {

enum class ErrorCode {
  InvalidArgument,  ///< the user gave a value we cannot use (exit status 2)
  NotFound,         ///< a program or file the user named does not exist (exit status 127)
  Timeout,
  Network,
  Protocol,          ///< the peer sent something the protocol does not allow
  PermissionDenied,  ///< the store refused us (shared-secret authentication failed)
  System,            ///< a system call failed for reasons outside the user's input
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace pltrun
