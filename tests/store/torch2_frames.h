#pragma once
// torch 2.x request frames built with the store's own codec, for tests that send them on a
// RawConnection: VALIDATE (which every torch 2.x connection opens with) and any request.

#include <string>
#include <vector>

#include "rendezvous/store/store_protocol.h"

namespace pltrun::test {

inline rdzv::Request withKeys(rdzv::Command command, std::vector<std::string> keys,
                              std::vector<std::string> values = {}) {
  rdzv::Request request;
  request.command = command;
  request.keys = std::move(keys);
  request.values = std::move(values);
  return request;
}

inline std::string frame(const rdzv::Request& request) { return rdzv::encodeRequest(rdzv::Dialect::Torch2, request); }

inline std::string validate() {
  rdzv::Request request;
  request.command = rdzv::Command::Validate;
  request.number = rdzv::kValidationMagic;
  return frame(request);
}

}  // namespace pltrun::test
