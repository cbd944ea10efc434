#pragma once
// The conformance suite's fixture for EtcdStore (tests/store/store_conformance_test.cc is
// compiled a second time into etcd_tests with STORES = EtcdFixture): one real etcd member
// for the whole test binary, started on first use, and a fresh key prefix per fixture.

#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "etcd/etcd_cluster.h"
#include "rendezvous/etcd/etcd_store.h"

namespace pltrun::test {

inline EtcdCluster& sharedEtcd() {
  static EtcdCluster cluster(1);
  return cluster;
}

struct EtcdFixture {
  static constexpr bool kExtensions = true;
  EtcdFixture() {
    static std::atomic<int> fixtures{0};
    etcd::EtcdStoreOptions options;
    options.client.endpoints = sharedEtcd().endpoints();
    options.keyPrefix = "/conformance-" + std::to_string(getpid()) + "-" + std::to_string(fixtures++) + "/";
    options.leaseTtl = std::chrono::seconds(2);
    root = std::make_unique<etcd::EtcdStore>(options);
  }
  std::unique_ptr<Store> client() { return root->connect(); }
  std::unique_ptr<etcd::EtcdStore> root;  // holds the process's lease
};

}  // namespace pltrun::test
