#pragma once
// Where the agents of an end-to-end elastic job meet, so one test runs on both backends
// (TEMPLATE_TEST_CASE over these): the c10d store the first agent hosts, or a real etcd
// member the fixture starts on loopback for the test and stops after it.

#include <string>

#include "e2e/elastic_job.h"
#include "etcd/etcd_cluster.h"

namespace pltrun::test {

struct C10dMeeting {
  void prepare(ElasticJob&) {}  // the first agent hosts the store
};

struct EtcdMeeting {
  explicit EtcdMeeting(int members = 1) : cluster(members) {}
  void prepare(ElasticJob& job) { job.meetAtEtcd(cluster.endpointsText()); }
  EtcdCluster cluster;
};

}  // namespace pltrun::test
