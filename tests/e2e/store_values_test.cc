// Values in the rendezvous store are untrusted input: a round end of the wrong type written
// into a running job's store by another client ends that round as a failed rendezvous that
// names the key; the agents meet again in a new round and the job goes on. Before, every
// agent aborted (nlohmann's type_error escaping, exit 134).

#include <catch2/catch.hpp>
#include <string>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "pltrun/tcp_store.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

TEST_CASE("an elastic job survives a round end of the wrong type written into its store",
          "[elastic][e2e][bounded]") {
  TempDir dir;
  // Round 0's workers run long enough for the bad value to land; later rounds end at once.
  ElasticJob job(dir, "2", "typed-values", {"--max-restarts", "0"},
                 {"--no-python", "/usr/bin/python3", "-c",
                  "import os, time\n"
                  "time.sleep(30 if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0' else 0.2)\n"});
  ChildProcess& first = job.start();
  ChildProcess& second = job.start();
  REQUIRE(first.waitForStderr("starting 2 workers", 30s));
  REQUIRE(second.waitForStderr("starting 2 workers", 30s));

  pltrun::TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = job.port();
  pltrun::TcpStore client(options);
  const std::string prefix = "pltrun/rdzv/typed-values/";
  const std::string round = client.get(prefix + "round", 5s);
  client.set(prefix + "r" + round + "/end", R"({"reason":"worker_failed","host":5})");

  const std::vector<Finished> ends = job.waitAll(60s);
  INFO("agent 0: " << ends[0].err << "\nagent 1: " << ends[1].err);
  CHECK(ends[0].status == 0);
  CHECK(ends[1].status == 0);
  for (const Finished& end : ends) {
    CHECK_THAT(end.err, Catch::Contains("malformed value at 'pltrun/rdzv/typed-values/r" + round + "/end'"));
    CHECK_THAT(end.err, !Catch::Contains("terminate called"));
  }
}
