// The messages pltrun exchanges with its --preload zygote (zygote_messages.h): what a
// worker's start carries, and how each answer is read, a malformed one included.

#include "launcher/process/zygote_messages.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using pltrun::ChildSetup;
using pltrun::parseZygoteAnswer;

TEST_CASE("zygote messages: a worker's start carries its argv, environment, CPUs and descriptors",
          "[zygote_messages]") {
  char* argv[] = {const_cast<char*>("python3"), const_cast<char*>("-u"), const_cast<char*>("train.py"),
                  const_cast<char*>("--lr=0.1"), nullptr};
  char* envp[] = {const_cast<char*>("RANK=3"), const_cast<char*>("EMPTY="), nullptr};
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(2, &cpus);
  CPU_SET(5, &cpus);
  ChildSetup setup;
  setup.argv = argv;
  setup.envp = envp;
  setup.standardInput = 7;
  setup.standardOutput = 8;
  setup.standardError = 9;
  setup.cgroupProcsFd = 11;
  setup.openFileLimit = 1024;
  setup.cpus = &cpus;
  const auto names = pltrun::attachedDescriptorNames(setup);
  CHECK(names == std::vector<std::string>{"stdin", "stdout", "stderr", "cgroup"});

  const auto message = nlohmann::json::parse(pltrun::forkRequestMessage({setup, 1234, names}));
  CHECK(message["argv"] == nlohmann::json({"python3", "-u", "train.py", "--lr=0.1"}));
  CHECK(message["env"] == nlohmann::json({"RANK=3", "EMPTY="}));
  CHECK(message["launcher"] == 1234);
  CHECK(message["cpus"] == nlohmann::json({2, 5}));
  CHECK(message["open_file_limit"] == 1024);
  CHECK(message["fds"] == nlohmann::json({"stdin", "stdout", "stderr", "cgroup"}));
}

TEST_CASE("zygote messages: an argument that is not UTF-8 makes no request (that worker starts cold)",
          "[zygote_messages]") {
  char* argv[] = {const_cast<char*>("python3"), const_cast<char*>("-u"), const_cast<char*>("caf\xe9.py"), nullptr};
  char* envp[] = {nullptr};
  ChildSetup setup;
  setup.argv = argv;
  setup.envp = envp;
  CHECK(pltrun::forkRequestMessage({setup, 1, {}}).empty());
}

TEST_CASE("zygote messages: answers are ready, a pid, or a refusal, and anything else is a refusal",
          "[zygote_messages]") {
  CHECK(parseZygoteAnswer(R"({"ready": true})").ready);
  CHECK(parseZygoteAnswer(R"({"pid": 4242})").pid == 4242);
  CHECK(parseZygoteAnswer(R"({"error": "cannot import the preloaded modules: ModuleNotFoundError"})").error ==
        "cannot import the preloaded modules: ModuleNotFoundError");
  for (const char* malformed :
       {"", "not json", "[1]", R"({"pid": -3})", R"({"pid": "12"})", R"({"ready": false})", R"({"error": 5})"}) {
    INFO(malformed);
    const auto answer = parseZygoteAnswer(malformed);
    CHECK_FALSE(answer.ready);
    CHECK(answer.pid == -1);
    CHECK(answer.error == "it answered something that is not its protocol");
  }
}

TEST_CASE("zygote messages: the zygote's setup names the modules, the workers' argv and the environment it was given",
          "[zygote_messages]") {
  const auto message = nlohmann::json::parse(
      pltrun::zygoteConfigMessage({"torch", "numpy"}, {"python3", "-u", "-m", "pkg.train"}, {"PATH=/usr/bin"}));
  CHECK(message["preload"] == nlohmann::json({"torch", "numpy"}));
  CHECK(message["argv"] == nlohmann::json({"python3", "-u", "-m", "pkg.train"}));
  CHECK(message["env"] == nlohmann::json({"PATH=/usr/bin"}));
  CHECK(pltrun::zygoteConfigMessage({"torch"}, {"python3"}, {"NAME=caf\xe9"}).empty());
}
