// `pltrun status`'s pure half: a job's state from a table of its rendezvous keys, as the
// agents write them (docs/ELASTIC.md), and the heartbeat ages measured from counters.

#include "launcher/status/job_status.h"

#include <catch2/catch.hpp>

#include "launcher/status/heartbeat_tracker.h"

using namespace pltrun;

namespace {

std::string slot(const std::string& host, int pid) {
  return R"({"id":")" + host + ":" + std::to_string(pid) + R"(:ab","host":")" + host + R"(","addr":"10.0.0.)" +
         std::to_string(pid % 100) + R"(","nproc":2,"pid":)" + std::to_string(pid) +
         R"(,"nnodes":[2,3],"max_restarts":3,"keep_alive_ms":1000})";
}

std::string assign(int nodeRank) {
  return R"({"node_rank":)" + std::to_string(nodeRank) + R"(,"nnodes":2,"world_size":4,"first_rank":)" +
         std::to_string(2 * nodeRank) + R"(,"rank0_addr":"10.0.0.1"})";
}

// Round 1 of a job on a and b, formed, both running, after one worker failure in round 0.
JobKeys runningJob() {
  return {
      {"round", "1"},
      {"failures", "1"},
      {"r0/count", "2"},
      {"r0/slot/1", slot("a", 101)},
      {"r0/slot/2", slot("b", 102)},
      {"r0/complete", R"({"nnodes":2,"world_size":4,"failures":0})"},
      {"r0/end",
       R"({"reason":"worker_failed","host":"b","message":"rank 3 ended with exit code 1","status":1,"failures":1,"final":false})"},
      {"r1/count", "2"},
      {"r1/slot/1", slot("b", 102)},
      {"r1/slot/2", slot("a", 101)},
      {"r1/assign/1", assign(1)},
      {"r1/assign/2", assign(0)},
      {"r1/complete", R"({"nnodes":2,"world_size":4,"failures":1})"},
      {"r1/state/1", R"({"state":"running","workers":2})"},
      {"r1/state/2", R"({"state":"running","workers":2})"}};
}

}  // namespace

TEST_CASE("status: a running round lists its nodes by node rank, with ranks, pids and heartbeats", "[status]") {
  JobStatus status = evaluateJob("job", "h:1", runningJob(), {{1, 0.4}, {2, 0.2}});
  CHECK(status.state == JobStatus::State::Running);
  CHECK(status.round == 1);
  CHECK(status.maxRestarts == std::optional<int>(3));
  CHECK(status.workerFailures == 1);
  CHECK(status.minNodes == std::optional<int>(2));
  CHECK(status.maxNodes == std::optional<int>(3));
  REQUIRE(status.nodes.size() == 2);
  CHECK(status.nodes[0].host == "a");
  CHECK(status.nodes[0].nodeRank == 0);
  CHECK(status.nodes[0].pid == 101);
  CHECK(status.nodes[1].firstRank == 2);
  CHECK(statusExitCode(status) == 0);
  const std::string text = renderStatusText(status);
  CHECK_THAT(text, Catch::StartsWith("run job at h:1: running round 1 on 2 node(s) of 2..3; 1 worker failure(s) of "
                                     "--max-restarts 3\n"));
  CHECK_THAT(text, Catch::Contains("0.4 s ago") && Catch::Contains("2-3"));
  const nlohmann::json json = statusJson(status);
  CHECK(json["schema"] == 1);
  CHECK(json["nodes"][1]["ranks"] == nlohmann::json{2, 3});
}

TEST_CASE("status: a node with a node_name is shown by it beside its host, as its metrics label it", "[status]") {
  JobKeys keys = runningJob();
  std::string named = slot("a", 101);
  named.insert(named.find(R"("addr")"), R"("name":"na",)");
  keys["r1/slot/2"] = named;
  const JobStatus status = evaluateJob("job", "h:1", keys, {});
  REQUIRE(status.nodes.size() == 2);
  CHECK(status.nodes[0].name == "na");
  CHECK_THAT(renderStatusText(status), Catch::Contains("na (a)") && !Catch::Contains("b (b)"));
  const nlohmann::json json = statusJson(status);
  CHECK(json["nodes"][0]["node"] == "na");
  CHECK(json["nodes"][0]["host"] == "a");
  CHECK(json["nodes"][1]["node"] == "b");  // no node_name: its host
}

TEST_CASE("status: a heartbeat that stopped makes its node silent and the job degraded", "[status]") {
  JobStatus status = evaluateJob("job", "h:1", runningJob(), {{1, 0.4}, {2, 1.6}});  // 1.5 x keep_alive_ms
  CHECK(status.nodes[0].state == "silent");                                          // a, in slot 2, is node rank 0
  CHECK(status.nodes[1].state == "running");
  CHECK(statusExitCode(status) == 1);
  JobKeys failed = runningJob();
  failed["r1/state/2"] = R"({"state":"failed","workers":0})";
  CHECK(statusExitCode(evaluateJob("job", "h:1", failed, {})) == 1);
}

TEST_CASE("status: while a round forms after a loss, the members not back are missing", "[status]") {
  JobKeys keys = runningJob();
  keys["r1/end"] = R"({"reason":"node_lost","host":"a","message":"","status":0,"failures":1,"final":false})";
  keys["round"] = "2";
  keys["r2/count"] = "1";
  keys["r2/slot/1"] = slot("b", 102);
  JobStatus status = evaluateJob("job", "h:1", keys, {});
  CHECK(status.state == JobStatus::State::Reforming);
  CHECK(status.joined == 1);
  CHECK(status.missing == std::vector<std::string>{"a"});
  CHECK(statusExitCode(status) == 1);
  CHECK_THAT(renderStatusText(status), Catch::Contains("missing: a"));
}

TEST_CASE("status: where the job expects named nodes, rR/missing names them, first round or not", "[status]") {
  JobKeys waiting = {
      {"round", "0"}, {"r0/count", "1"}, {"r0/slot/1", slot("a", 101)}, {"r0/missing", R"(["gpu-07","gpu-08"])"}};
  JobStatus status = evaluateJob("job", "h:1", waiting, {});
  CHECK(status.state == JobStatus::State::Waiting);
  CHECK(status.missing == std::vector<std::string>{"gpu-07", "gpu-08"});
  CHECK_THAT(renderStatusText(status), Catch::Contains("  missing: gpu-07, gpu-08\n"));
  CHECK(statusJson(status)["missing"] == nlohmann::json{"gpu-07", "gpu-08"});
  // While re-forming, the published names win over the last round's hosts.
  JobKeys reforming = runningJob();
  reforming["r1/end"] = R"({"reason":"node_lost","host":"a","message":"","status":0,"failures":1,"final":false})";
  reforming["round"] = "2";
  reforming["r2/count"] = "1";
  reforming["r2/slot/1"] = slot("b", 102);
  reforming["r2/missing"] = R"(["node-a"])";
  CHECK(evaluateJob("job", "h:1", reforming, {}).missing == std::vector<std::string>{"node-a"});
  // Not a list (another program's value): no names rather than a wrong one.
  waiting["r0/missing"] = "gpu-07";
  CHECK(evaluateJob("job", "h:1", waiting, {}).missing.empty());
}

TEST_CASE("status: the first round waits, an ended job gives its status, and no keys is no job", "[status]") {
  JobKeys waiting = {{"round", "0"}, {"r0/count", "1"}, {"r0/slot/1", slot("a", 101)}};
  JobStatus status = evaluateJob("job", "h:1", waiting, {});
  CHECK(status.state == JobStatus::State::Waiting);
  CHECK_THAT(renderStatusText(status), Catch::Contains("1 of 2..3 joined (1 missing to start)"));
  CHECK(statusExitCode(status) == 1);

  JobKeys ended = runningJob();
  ended["closed"] =
      R"({"reason":"worker_failed","host":"a","message":"rank 0 ended with exit code 7","status":7,"failures":4,"final":true})";
  status = evaluateJob("job", "h:1", ended, {});
  CHECK(status.state == JobStatus::State::Finished);
  CHECK(status.exitStatus == 7);
  CHECK(statusExitCode(status) == 2);
  ended["closed"] = R"({"reason":"succeeded","host":"a","message":"","status":0,"failures":1,"final":true})";
  CHECK(statusExitCode(evaluateJob("job", "h:1", ended, {})) == 0);

  status = evaluateJob("job", "h:1", {}, {});
  CHECK(status.state == JobStatus::State::Unknown);
  CHECK(statusExitCode(status) == 2);
  CHECK(statusJson(status)["state"] == "unknown");
}

TEST_CASE("status: a heartbeat's age is the time since its counter was seen to move", "[status]") {
  using Clock = HeartbeatTracker::Clock;
  HeartbeatTracker tracker;
  const Clock::time_point start = Clock::now();
  tracker.observe(3, {{"r3/beat/1", "5"}, {"r3/beat/2", "9"}}, start);
  CHECK_FALSE(tracker.allMoved(3, 2));
  tracker.observe(3, {{"r3/beat/1", "6"}, {"r3/beat/2", "9"}}, start + std::chrono::milliseconds(700));
  CHECK_FALSE(tracker.allMoved(3, 2));
  HeartbeatAges ages = tracker.ages(3, start + std::chrono::milliseconds(1000));
  CHECK(ages[1] == Approx(0.3));
  CHECK(ages[2] == Approx(1.0));  // not seen to move: at least as old as the watching
  tracker.observe(3, {{"r3/beat/2", "10"}}, start + std::chrono::milliseconds(1100));
  CHECK(tracker.allMoved(3, 2));
  CHECK(tracker.ages(4, start).empty());
}

TEST_CASE("status: each node's slowest rank from its published heartbeats: lowest step, then longest silence",
          "[status]") {
  JobKeys keys = runningJob();
  keys["r1/state/1"] =
      R"({"state":"running","workers":2,"ranks":[{"rank":2,"step":40,"silent":0.1},{"rank":3,"step":37,"silent":2.5}]})";
  keys["r1/state/2"] =
      R"({"state":"running","workers":2,"ranks":[{"rank":0,"step":9,"silent":0.2},{"rank":1,"step":9,"silent":0.7}]})";
  const JobStatus status = evaluateJob("job", "h:1", keys, {{1, 0.4}, {2, 0.2}});
  REQUIRE(status.nodes.size() == 2);
  // Node rank 0 (slot 2): equal steps, the longer silence; node rank 1 (slot 1): the lower step.
  CHECK(status.nodes[0].slowestRank == std::optional<int>(1));
  CHECK(status.nodes[0].slowestSilence == std::optional<double>(0.7));
  CHECK(status.nodes[1].slowestRank == std::optional<int>(3));
  CHECK(status.nodes[1].slowestStep == std::optional<long long>(37));
  CHECK_THAT(renderStatusText(status), Catch::Contains("rank 3, step 37, 2.5 s ago"));
  const nlohmann::json json = statusJson(status);
  CHECK(json["nodes"][1]["slowest_rank"] == 3);
  CHECK(json["nodes"][1]["slowest_step"] == 37);
  CHECK(json["nodes"][1]["slowest_heartbeat_age_s"] == 2.5);
}

TEST_CASE("status: each node's step times and goodput, and the job's: the lowest ratio, the most seconds lost",
          "[status]") {
  JobKeys keys = runningJob();
  keys["r1/state/1"] = R"({"state":"running","workers":2,"ranks":[{"rank":2,"step":40,"silent":0.1,"step_s":0.2},)"
                       R"({"rank":3,"step":37,"silent":2.5,"step_s":0.25}],)"
                       R"("goodput":{"productive_s":30,"elapsed_s":60,"lost_s":12.5}})";
  keys["r1/state/2"] = R"({"state":"running","workers":2,"ranks":[{"rank":0,"step":9,"silent":0.2,"step_s":0.213},)"
                       R"({"rank":1,"step":9,"silent":0.7,"step_s":0.2131}],)"
                       R"("goodput":{"productive_s":45,"elapsed_s":60,"lost_s":8}})";
  const JobStatus status = evaluateJob("job", "h:1", keys, {{1, 0.4}, {2, 0.2}});
  REQUIRE(status.nodes.size() == 2);
  CHECK(status.nodes[1].stepSeconds == std::map<int, double>{{2, 0.2}, {3, 0.25}});
  REQUIRE(status.nodes[0].goodput);
  CHECK(status.nodes[0].goodput->productiveSeconds == 45);
  const auto job = jobGoodput(status);
  REQUIRE(job);
  CHECK(job->ratio == 0.5);
  CHECK(job->lostSeconds == 12.5);

  const std::string text = renderStatusText(status);
  CHECK_THAT(text, Catch::Contains(" step ") && Catch::Contains(" goodput "));
  CHECK_THAT(text, Catch::Contains("0.213 s/step     75%"));  // node rank 0: its ranks agree
  CHECK_THAT(text, Catch::Contains("0.2-0.25 s/step  50%"));  // node rank 1: fastest to slowest
  CHECK_THAT(text, Catch::Contains("\n  goodput: 50% (the lowest node's), 12.5 s lost to restarts\n"));

  const nlohmann::json json = statusJson(status);
  CHECK(json["nodes"][1]["step_s"] == nlohmann::json{{"2", 0.2}, {"3", 0.25}});
  CHECK(json["nodes"][1]["goodput"] ==
        nlohmann::json{{"productive_s", 30.0}, {"elapsed_s", 60.0}, {"lost_s", 12.5}, {"ratio", 0.5}});
  CHECK(json["goodput"] == nlohmann::json{{"ratio", 0.5}, {"lost_s", 12.5}});
}

TEST_CASE("status: without published step times or goodput, none is shown", "[status]") {
  JobKeys keys = runningJob();
  keys["r1/state/1"] = R"({"state":"running","workers":2,"ranks":[{"rank":2,"step":40,"silent":0.1,"step_s":-1}],)"
                       R"("goodput":{"productive_s":30,"elapsed_s":"60","lost_s":1}})";
  const JobStatus status = evaluateJob("job", "h:1", keys, {{1, 0.4}, {2, 0.2}});
  REQUIRE(status.nodes.size() == 2);
  CHECK(status.nodes[1].stepSeconds.empty());
  CHECK_FALSE(status.nodes[1].goodput);
  CHECK_FALSE(jobGoodput(status));
  CHECK(status.malformedKeys.empty());
  const std::string text = renderStatusText(status);
  CHECK_THAT(text, !Catch::Contains("goodput:") && !Catch::Contains("s/step"));
  const nlohmann::json json = statusJson(status);
  CHECK(json["goodput"].is_null());
  CHECK(json["nodes"][1]["goodput"].is_null());
  CHECK(json["nodes"][1]["step_s"] == nlohmann::json::object());
}

TEST_CASE("status: workers without heartbeats, and malformed published ranks, show no slowest rank", "[status]") {
  JobKeys keys = runningJob();
  keys["r1/state/1"] = R"({"state":"running","workers":2,"ranks":[{"rank":2,"step":null,"silent":null},)"
                       R"({"rank":"x","step":1,"silent":0.1},{"step":1,"silent":0.1},7]})";
  keys["r1/state/2"] = R"({"state":"running","workers":2,"ranks":{"rank":0}})";
  const JobStatus status = evaluateJob("job", "h:1", keys, {{1, 0.4}, {2, 0.2}});
  REQUIRE(status.nodes.size() == 2);
  CHECK_FALSE(status.nodes[0].slowestRank);
  CHECK_FALSE(status.nodes[1].slowestRank);
  CHECK(statusJson(status)["nodes"][0]["slowest_rank"].is_null());
  CHECK_THAT(renderStatusText(status), Catch::Contains("running   -"));
}

namespace {

// The keys named malformed when `key` of runningJob() holds `value` instead.
std::vector<std::string> malformedWith(const std::string& key, const std::string& value) {
  JobKeys keys = runningJob();
  keys[key] = value;
  const JobStatus status = evaluateJob("job", "h:1", keys, {{1, 0.4}, {2, 0.2}});
  CHECK(statusExitCode(status) == 2);
  CHECK(statusJson(status)["malformed_keys"] == nlohmann::json(status.malformedKeys));
  return status.malformedKeys;
}

const std::vector<std::string> kState1 = {"r1/state/1"};

}  // namespace

TEST_CASE("status: a node state no agent writes is named, and its counts are not shown", "[status][bounded]") {
  CHECK(malformedWith("r1/state/1", R"({"state":"running","workers":2147483647})") == kState1);
  CHECK(malformedWith("r1/state/1", R"({"state":"running","workers":3})") == kState1);  // of 2
  CHECK(malformedWith("r1/state/1", R"({"state":"running","workers":-5})") == kState1);
  CHECK(malformedWith("r1/state/1", R"({"state":"running\n[forged] line","workers":2})") == kState1);
  CHECK(malformedWith("r1/state/1", R"({"state":"exploded","workers":2})") == kState1);
  CHECK(malformedWith("r1/state/1", R"({"state":"running","workers":2,"host":"b\u001b[2J"})") == kState1);
  // Slot 1 (b) is node rank 1, ranks 2-3: rank 0 is not its own.
  CHECK(malformedWith("r1/state/1", R"({"state":"running","workers":2,"ranks":[{"rank":0,"step":1,"silent":0}]})") ==
        kState1);
  CHECK(malformedWith("r1/state/1", "not json") == kState1);
  JobKeys keys = runningJob();
  keys["r1/state/1"] = R"({"state":"running","workers":2147483647})";
  const JobStatus status = evaluateJob("job", "h:1", keys, {});
  REQUIRE(status.nodes.size() == 2);
  CHECK(status.nodes[1].state == "joined");  // what the state said is not shown as the node's
  CHECK(status.nodes[1].workersRunning == -1);
  CHECK_THAT(renderStatusText(status),
             !Catch::Contains("2147483647") &&
                 Catch::Contains("  the store holds a value at 'r1/state/1' that is not pltrun's"));
}

TEST_CASE("status: a descriptor or placement no agent writes is named, and the node left out", "[status][bounded]") {
  const std::vector<std::string> slot1 = {"r1/slot/1"};
  auto descriptor = [](const std::string& fields) {
    return R"({"id":"b:102:ab","addr":"10.0.0.2","nproc":2,"pid":102,"nnodes":[2,3],)" + fields + "}";
  };
  CHECK(malformedWith("r1/slot/1", descriptor(R"("host":"b\n[forged] line")")) == slot1);
  CHECK(malformedWith("r1/slot/1", descriptor(R"("host":"b\u001b]0;title\u0007")")) == slot1);
  CHECK(malformedWith("r1/slot/1", descriptor(R"("host":"b c")")) == slot1);
  CHECK(malformedWith("r1/slot/1", descriptor(R"("host":")" + std::string(256, 'b') + "\"")) == slot1);
  CHECK(malformedWith("r1/slot/1", descriptor(R"("host":"")")) == slot1);
  CHECK(malformedWith("r1/slot/1", R"({"id":"b","host":"b","addr":"a","nproc":5000})") == slot1);
  CHECK(malformedWith("r1/slot/1", R"({"id":"b","host":"b","addr":"a","nproc":2,"pid":-3})") == slot1);
  CHECK(malformedWith("r1/slot/1", R"({"id":"b","host":"b","addr":"a","nproc":2,"nnodes":[3,2]})") == slot1);
  CHECK(malformedWith("r1/slot/1", "[]") == slot1);
  JobKeys keys = runningJob();
  keys["r1/slot/1"] = descriptor(R"("host":"b\n[forged] line")");
  const JobStatus status = evaluateJob("job", "h:1", keys, {});
  REQUIRE(status.nodes.size() == 1);
  CHECK(status.nodes[0].host == "a");

  const std::vector<std::string> assign1 = {"r1/assign/1"};
  auto placement = [](int nodeRank, int nnodes, int worldSize, int firstRank) {
    return R"({"node_rank":)" + std::to_string(nodeRank) + R"(,"nnodes":)" + std::to_string(nnodes) +
           R"(,"world_size":)" + std::to_string(worldSize) + R"(,"first_rank":)" + std::to_string(firstRank) +
           R"(,"rank0_addr":"10.0.0.1"})";
  };
  CHECK(malformedWith("r1/assign/1", placement(2, 2, 4, 2)) == assign1);           // node rank 2 of 2
  CHECK(malformedWith("r1/assign/1", placement(-1, 2, 4, 2)) == assign1);          // a negative one
  CHECK(malformedWith("r1/assign/1", placement(1, 3, 4, 2)) == assign1);           // not the round's 2 nodes
  CHECK(malformedWith("r1/assign/1", placement(1, 2, 4, 3)) == assign1);           // ranks 3-4 of 4
  CHECK(malformedWith("r1/assign/1", placement(1, 2, 4, -1)) == assign1);          // a negative rank
  CHECK(malformedWith("r1/assign/1", placement(1, 2, 4, 2147483647)) == assign1);  // past int's end
}

TEST_CASE("status: counters that are not counts, and expected names no node has, are named", "[status][bounded]") {
  CHECK(malformedWith("failures", "-1") == std::vector<std::string>{"failures"});
  CHECK(malformedWith("failures", "3 and more") == std::vector<std::string>{"failures"});
  CHECK(malformedWith("r1/count", "-4") == std::vector<std::string>{"r1/count"});
  CHECK(malformedWith("r1/complete", R"({"nnodes":0,"world_size":0,"failures":1})") ==
        std::vector<std::string>{"r1/complete"});
  JobKeys keys = runningJob();
  keys["round"] = "-1";
  CHECK(evaluateJob("job", "h:1", keys, {}).malformedKeys == std::vector<std::string>{"round"});

  JobKeys waiting = {{"round", "0"},
                     {"r0/count", "1"},
                     {"r0/slot/1", slot("a", 101)},
                     {"r0/missing", R"(["gpu-07","gpu-08\n[forged] line"])"}};
  JobStatus status = evaluateJob("job", "h:1", waiting, {});
  CHECK(status.malformedKeys == std::vector<std::string>{"r0/missing"});
  CHECK(status.missing.empty());
  CHECK(statusExitCode(status) == 2);
  // A plain job has none of this.
  CHECK(evaluateJob("job", "h:1", runningJob(), {}).malformedKeys.empty());
}

TEST_CASE("status: a round end's host and message stay within their line, in text and JSON", "[status]") {
  JobKeys keys = runningJob();
  keys["closed"] =
      R"({"reason":"worker_failed","host":"a\n[forged] line","message":"rank 0\r\n\u001b[31mfine","status":7,"failures":4,"final":true})";
  const JobStatus status = evaluateJob("job", "h:1", keys, {});
  const std::string text = renderStatusText(status);
  CHECK_THAT(text, Catch::Contains("a worker failed on a\\x0a[forged] line: rank 0\\x0d\\x0a\\x1b[31mfine"));
  CHECK_THAT(text, !Catch::Contains("\n[forged]") && !Catch::Contains("\x1b"));
  const nlohmann::json json = statusJson(status);
  CHECK(json["end"]["host"] == "a\\x0a[forged] line");
  CHECK(json["end"]["message"] == "rank 0\\x0d\\x0a\\x1b[31mfine");
}

TEST_CASE("status: the nodes kept out are listed with their kind and why, from the exclusions key", "[status]") {
  JobKeys keys = runningJob();
  keys["exclusions"] =
      R"({"node":"c","kind":"blamed","excluded":true,"reason":"its workers ended 2 rounds in a row","time":"2026-11-29T08:50:00Z"})"
      "\n"
      R"({"node":"d","kind":"unhealthy","excluded":true,"reason":"GPU 1 lost","time":"2026-11-29T08:51:00Z"})"
      "\n"
      R"({"node":"d","kind":"unhealthy","excluded":false,"reason":"healthy","time":"2026-11-29T08:52:00Z"})"
      "\n"
      R"({"node":"e\u001b[2J","kind":"unhealthy","excluded":true,"reason":"ECC\nerrors","time":"2026-11-29T08:53:00Z"})"
      "\n";
  const JobStatus status = evaluateJob("job", "h:1", keys, {{1, 0.4}, {2, 0.2}});
  CHECK(status.state == JobStatus::State::Running);
  const std::string text = renderStatusText(status);
  CHECK_THAT(text, Catch::Contains(
                       "  excluded: c (blamed, since 2026-11-29T08:50:00Z): its workers ended 2 rounds in a row\n"));
  CHECK_THAT(text, Catch::Contains("  excluded: e\\x1b[2J (unhealthy, since 2026-11-29T08:53:00Z): ECC\\x0aerrors\n"));
  CHECK(text.find("excluded: d") == std::string::npos);  // back in
  const nlohmann::json excluded = statusJson(status)["excluded_nodes"];
  REQUIRE(excluded.size() == 2);
  CHECK(excluded[0] == nlohmann::json{{"node", "c"},
                                      {"kind", "blamed"},
                                      {"reason", "its workers ended 2 rounds in a row"},
                                      {"time", "2026-11-29T08:50:00Z"}});
  CHECK(excluded[1]["node"] == "e\\x1b[2J");
  CHECK(statusJson(evaluateJob("job", "h:1", runningJob(), {}))["excluded_nodes"] == nlohmann::json::array());
}
