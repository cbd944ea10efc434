#pragma once
// PyTorch's own TCPStore server (Debian's python3-torch 1.13, run by /usr/bin/python3) in
// a child process on 127.0.0.1, port 0: the reference our client must interoperate with.

#include <memory>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

class TorchStoreServer {
 public:
  TorchStoreServer();   ///< starts it and reads its port; fails the test if torch is missing
  ~TorchStoreServer();  ///< stops and reaps it
  int port() const { return port_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string portFile_;
  TempDir dir_;
  int port_ = 0;
};

}  // namespace pltrun::test
