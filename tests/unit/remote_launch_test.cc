// The driver's pure parts: what reaches the remote workers, how a command line survives the
// remote shell, and how the remote command is built.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "helpers/temp_dir.h"
#include "launcher/driver/agent_stdin.h"
#include "launcher/driver/forwarded_environment.h"
#include "launcher/driver/remote_command.h"
#include "launcher/plan/shell_words.h"
#include "pltrun/error.h"

using namespace pltrun;

TEST_CASE("the forwarded environment: default prefixes, -x and the env file", "[remote]") {
  Environment here = {{"NCCL_IB_HCA", "mlx5"},
                      {"CUDA_LAUNCH_BLOCKING", "1"},
                      {"CUDA_VISIBLE_DEVICES", "0,1"},
                      {"PYTHONPATH", "/src"},
                      {"OMP_NUM_THREADS", "4"},
                      {"HOME", "/nonexistent-home"},  // no ~/.deepspeed_env to read
                      {"PATH", "/usr/bin"},
                      {"MY_FLAG", "on"}};
  RemoteLaunchSettings remote;
  Environment forwarded = forwardedEnvironment(here, remote);
  CHECK(forwarded == Environment{{"NCCL_IB_HCA", "mlx5"},
                                 {"CUDA_LAUNCH_BLOCKING", "1"},
                                 {"PYTHONPATH", "/src"},
                                 {"OMP_NUM_THREADS", "4"}});  // not CUDA_VISIBLE_DEVICES, HOME, PATH

  remote.exports = {"MY_FLAG", "EXTRA=a b"};
  forwarded = forwardedEnvironment(here, remote);
  CHECK(forwarded.at("MY_FLAG") == "on");
  CHECK(forwarded.at("EXTRA") == "a b");

  remote.exports = {"BAD-NAME=1"};
  CHECK_THROWS_WITH(forwardedEnvironment(here, remote), Catch::Contains("'BAD-NAME' is not a variable name"));
  remote.exports = {"NOT_SET_HERE"};
  CHECK_THROWS_WITH(forwardedEnvironment(here, remote), Catch::Contains("-x NOT_SET_HERE: not set here"));
}

TEST_CASE("DeepSpeed's .deepspeed_env in HOME is forwarded, and -x and --env-file override it", "[remote]") {
  const pltrun::test::TempDir temp("pltrun-deepspeed-env-test");
  const std::filesystem::path home = temp.path();
  std::ofstream(home / ".deepspeed_env") << "NCCL_SOCKET_IFNAME=eth0\nFROM_DS=ds\nOVERRIDDEN=by ds\n";
  std::ofstream(home / "renamed_env") << "RENAMED=yes\n";
  std::ofstream(home / "job.env") << "OVERRIDDEN=by the env file\n";
  Environment here = {{"HOME", home.string()}, {"NCCL_SOCKET_IFNAME", "ib0"}};
  RemoteLaunchSettings remote;
  Environment forwarded = forwardedEnvironment(here, remote);
  CHECK(forwarded.at("FROM_DS") == "ds");
  CHECK(forwarded.at("NCCL_SOCKET_IFNAME") == "eth0");  // the file over the inherited prefix, as DeepSpeed
  remote.exports = {"FROM_DS=from -x"};
  remote.envFile = (home / "job.env").string();
  forwarded = forwardedEnvironment(here, remote);
  CHECK(forwarded.at("FROM_DS") == "from -x");
  CHECK(forwarded.at("OVERRIDDEN") == "by the env file");
  // DS_ENV_FILE names another file, as in DeepSpeed.
  here["DS_ENV_FILE"] = "renamed_env";
  forwarded = forwardedEnvironment(here, RemoteLaunchSettings{});
  CHECK(forwarded.at("RENAMED") == "yes");
  CHECK(forwarded.count("FROM_DS") == 0);
  std::ofstream(home / "renamed_env") << "not a setting\n";
  CHECK_THROWS_WITH(forwardedEnvironment(here, RemoteLaunchSettings{}),
                    Catch::Contains("renamed_env:1") && Catch::Contains("expected KEY=VALUE"));
}

TEST_CASE("env files: KEY=VALUE lines, comments, export, CRLF, bad lines name their number", "[remote]") {
  const pltrun::test::TempDir temp("pltrun-remote-launch-test");
  const std::string path = temp / "job.env";
  {
    std::ofstream file(path);
    file << "# a comment\n\nA=1\r\nexport B=two words\n  C = spaced\n";
  }
  RemoteLaunchSettings remote;
  remote.envFile = path;
  Environment forwarded = forwardedEnvironment({}, remote);
  CHECK(forwarded.at("A") == "1");
  CHECK(forwarded.at("B") == "two words");
  CHECK(forwarded.at("C") == " spaced");
  {
    std::ofstream file(path);
    file << "A=1\nthis is not an assignment\n";
  }
  CHECK_THROWS_WITH(forwardedEnvironment({}, remote), Catch::Contains(path + ":2: expected KEY=VALUE"));
  {
    std::ofstream file(path);
    file << "export Q=\"two words\"\nS='a \"b\" $c'\nE=\"say \\\"hi\\\" \\$x\"\n";
  }
  forwarded = forwardedEnvironment({}, remote);
  CHECK(forwarded.at("Q") == "two words");
  CHECK(forwarded.at("S") == "a \"b\" $c");
  CHECK(forwarded.at("E") == "say \"hi\" $x");
  {
    // As a shell reads one word: quoted parts joined, backslash escapes, a trailing comment.
    std::ofstream file(path);
    file << "I='it'\\''s'\nJ=\"a\"'b'c\nK=one\\ two\nL=\"v\"  # a comment\n";
  }
  forwarded = forwardedEnvironment({}, remote);
  CHECK(forwarded.at("I") == "it's");
  CHECK(forwarded.at("J") == "abc");
  CHECK(forwarded.at("K") == "one two");
  CHECK(forwarded.at("L") == "v");
  for (const auto& [text, error] :
       std::vector<std::pair<std::string, std::string>>{{"U=\"no end\n", ":1: the value's \" quote is not closed"},
                                                        {"U='no end\n", ":1: the value's ' quote is not closed"},
                                                        {"U=\"a\" b\n", ":1: unquoted blanks in the value"},
                                                        {"U=a\\\n", ":1: the value ends in a backslash"},
                                                        {std::string("A=1\nN=a\0b\n", 10), ":2: a NUL byte"},
                                                        {"1X=1\n", ":1: '1X' is not a variable name"},
                                                        {"A-B=1\n", ":1: 'A-B' is not a variable name"}}) {
    std::ofstream(path) << text;
    CHECK_THROWS_WITH(forwardedEnvironment({}, remote), Catch::Contains(path + error));
  }
  remote.envFile = "/nonexistent/job.env";
  CHECK_THROWS_WITH(forwardedEnvironment({}, remote), Catch::Contains("cannot be read"));
}

TEST_CASE("the remote command: ssh with its options, or a template with {host}", "[remote]") {
  RemoteLaunchSettings remote;
  const std::vector<std::string> command = {"sh", "-c", "exec pltrun 'a b'"};
  const std::string asOneWord = "sh -c 'exec pltrun '\\''a b'\\'''";
  CHECK(remoteArgv(remote, "h1", command) ==
        std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "--", "h1", asOneWord});
  remote.sshPort = 2222;
  remote.sshIdentity = "/keys/id";
  CHECK(remoteArgv(remote, "h1", command) ==
        std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-p", "2222", "-i", "/keys/id", "--", "h1", asOneWord});
  // kubectl exec runs its arguments without a shell: the command goes as separate words.
  remote.remoteCommand = "kubectl exec -i {host} --";
  CHECK(remoteArgv(remote, "pod-1", command) ==
        std::vector<std::string>{"kubectl", "exec", "-i", "pod-1", "--", "sh", "-c", "exec pltrun 'a b'"});
  // pdsh and ssh templates hand a shell one line; quotes in the template are a shell's.
  remote.remoteCommand = "pdsh  -w {host}";
  CHECK(remoteArgv(remote, "n1", command) == std::vector<std::string>{"pdsh", "-w", "n1", asOneWord});
  remote.remoteCommand = "/usr/bin/ssh -F '/my configs/ssh.cfg' {host}";
  CHECK(remoteArgv(remote, "n1", command) ==
        std::vector<std::string>{"/usr/bin/ssh", "-F", "/my configs/ssh.cfg", "n1", asOneWord});
  // {cmd} puts the command, as one shell word, where the template says.
  remote.remoteCommand = "mytool --on={host} --run {cmd} --wait";
  CHECK(remoteArgv(remote, "n1", command) ==
        std::vector<std::string>{"mytool", "--on=n1", "--run", asOneWord, "--wait"});
  remote.remoteCommand = "kubectl exec -c 'unclosed {host}";
  CHECK_THROWS_WITH(remoteArgv(remote, "n1", command),
                    Catch::Contains("--remote-command") && Catch::Contains("not closed"));
}

TEST_CASE("this machine's own names start their agent here, as mpirun does, other loopback hosts over ssh",
          "[remote]") {
  RemoteLaunchSettings remote;
  for (const char* host : {"localhost", "127.0.0.1", "::1", "gpu-07", "gpu-07.cluster.example"}) {
    CAPTURE(host);
    CHECK(startsOnThisMachine(remote, host, "gpu-07.cluster.example"));
  }
  // The tests' sshd listens on 127.0.0.2 and 127.0.0.3 as separate hosts; other machines stay remote.
  for (const char* host : {"127.0.0.2", "127.1.2.3", "gpu-08", "gpu", "localhost2", ""}) {
    CAPTURE(host);
    CHECK_FALSE(startsOnThisMachine(remote, host, "gpu-07.cluster.example"));
  }
  CHECK_FALSE(startsOnThisMachine(remote, "gpu-07", ""));
  // A --remote-command is the way to every host, localhost too (a pod or container may have that name).
  remote.remoteCommand = "kubectl exec -i {host} --";
  CHECK_FALSE(startsOnThisMachine(remote, "localhost", "gpu-07"));
  CHECK_FALSE(startsOnThisMachine(remote, "gpu-07", "gpu-07"));
}

TEST_CASE("the agent's script sets the forwarded variables from stdin, exactly, and leaves the rest for pltrun",
          "[remote]") {
  const std::string tricky = R"(it's $HOME `id` \n "q" ;|&)";
  const Environment forwarded = {{"PLAIN", "1"}, {"TRICKY", tricky}, {"EMPTY", ""}};
  const std::string input = forwardedVariablesInput(forwarded);
  CHECK(input == "EMPTY=\nPLAIN=1\nTRICKY=" + tricky + "\n\n");
  CHECK_THROWS_WITH(forwardedVariablesInput({{"TWO_LINES", "a\nb"}}), Catch::Contains("TWO_LINES has a line break"));
  // A real sh runs the script: the values arrive byte for byte, and the secret after the
  // empty line is still on stdin for the command.
  const pltrun::test::TempDir temp("pltrun-agent-script-test");
  const std::string stem = temp / "agent";
  std::ofstream(stem + ".in") << input << "the-secret\n";
  const std::string script =
      agentScript({"sh", "-c", R"(printf '%s|%s|%s|' "$PLAIN" "$TRICKY" "${EMPTY-unset}"; cat)"});
  const std::string shell = "sh -c " + shellQuote(script) + " < " + stem + ".in > " + stem + ".out";
  REQUIRE(std::system(shell.c_str()) == 0);
  std::ifstream output(stem + ".out");
  const std::string text((std::istreambuf_iterator<char>(output)), std::istreambuf_iterator<char>());
  CHECK(text == "1|" + tricky + "||the-secret\n");
}
