#pragma once
// A shared-secret file as pltrun wants one: in a fresh directory, mode 0600, one line.

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

class SecretFile {
 public:
  explicit SecretFile(std::string secret = "the job's shared secret", mode_t mode = 0600) : secret_(std::move(secret)) {
    std::ofstream file(path());
    file << secret_ << "\n";
    file.close();
    chmod(path().c_str(), mode);
  }
  std::string path() const { return dir_ / "secret"; }
  const std::string& secret() const { return secret_; }

 private:
  TempDir dir_;
  std::string secret_;
};

}  // namespace pltrun::test
