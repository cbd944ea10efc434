// The worker the end-to-end tests start under the real pltrun. One mode per behaviour a
// launcher must handle; every mode reports what it saw in files under a directory the
// test owns, named by the worker's RANK, so a test can check each rank.
//
//   env DIR                      write the launcher-set variables to DIR/env_RANK.json
//   exit CODE [RANK]             exit with CODE (only on RANK, if given; others exit 0)
//   fail-first-attempt DIR RANK  exit 7 on RANK while TORCHELASTIC_RESTART_COUNT is 0;
//                                every attempt appends "RANK RESTART_COUNT" to DIR/attempts
//   kill-self SIGNAL [RANK]      raise SIGNAL (only on RANK, if given)
//   family DIR                   fork a grandchild that sleeps; write "PID GRANDCHILD_PID"
//                                to DIR/family_RANK, then sleep
//   signals DIR                  write DIR/ready_RANK, then record SIGUSR1 in DIR/usr1_RANK
//                                and exit 0 on SIGTERM after writing DIR/term_RANK
//   ignore-term DIR              like signals, but ignores SIGTERM (for the SIGKILL grace)
//   flood BYTES                  write BYTES of numbered lines to stdout, then exit 0
//   record-error MESSAGE         write a torch @record error file, print to stderr, exit 1
//   stderr-lines N CODE          write N numbered lines to stderr, then exit CODE
//   progress N                   write N carriage-return progress updates, then a newline
//   serve DIR                    for the elastic tests: write the launcher-set variables plus
//                                pid, ppid and the start time (CLOCK_MONOTONIC, ns) to
//                                DIR/env_RANK_RESTARTCOUNT.json (atomically, by rename) and
//                                the pid to DIR/pid_RANK_RESTARTCOUNT, then wait: exit 0 on
//                                SIGTERM or once DIR/release exists

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

volatile sig_atomic_t usr1Count = 0;
volatile sig_atomic_t termReceived = 0;

std::string envOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

std::string rank() { return envOr("RANK", "-1"); }

void writeFile(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream file(path, append ? std::ios::app : std::ios::trunc);
  file << text;
}

std::string jsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

// DeepSpeed's launcher (and pltrun under its words) puts --local_rank=N before the
// program's own arguments: recorded, then skipped.
std::string localRankArgument;

std::string environmentJson() {
  const char* names[] = {"RANK",
                         "LOCAL_RANK",
                         "WORLD_SIZE",
                         "LOCAL_WORLD_SIZE",
                         "GROUP_RANK",
                         "GROUP_WORLD_SIZE",
                         "ROLE_NAME",
                         "ROLE_RANK",
                         "ROLE_WORLD_SIZE",
                         "NODE_RANK",
                         "MASTER_ADDR",
                         "MASTER_PORT",
                         "TORCHELASTIC_RESTART_COUNT",
                         "TORCHELASTIC_MAX_RESTARTS",
                         "TORCHELASTIC_RUN_ID",
                         "TORCHELASTIC_USE_AGENT_STORE",
                         "TORCHELASTIC_ERROR_FILE",
                         "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                         "OMP_NUM_THREADS",
                         "CUDA_VISIBLE_DEVICES",
                         "PLTRUN_TEST_INHERITED",
                         "NCCL_DEBUG",
                         "PLTRUN_TEST_EXPORTED",
                         "PLTRUN_TEST_FROM_FILE"};
  std::string json = "{";
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (!value) continue;
    if (json.size() > 1) json += ",";
    json += jsonString(name) + ":" + jsonString(value);
  }
  if (!localRankArgument.empty()) json += ",\"local_rank_argument\":" + jsonString(localRankArgument);
  json += ",\"pid\":" + std::to_string(getpid()) + ",\"pgid\":" + std::to_string(getpgrp()) + "}";
  return json;
}

int writeEnvironment(const std::string& dir) {
  writeFile(dir + "/env_" + rank() + ".json", environmentJson());
  return 0;
}

bool onlyRank(int argc, char** argv, int index) { return argc <= index || rank() == argv[index]; }

void onUsr1(int) { usr1Count = usr1Count + 1; }
void onTerm(int) { termReceived = 1; }

int recordSignals(const std::string& dir, bool ignoreTerm) {
  signal(SIGUSR1, onUsr1);
  signal(SIGTERM, ignoreTerm ? SIG_IGN : onTerm);
  writeFile(dir + "/ready_" + rank(), std::to_string(getpid()));
  int recorded = 0;
  while (!termReceived) {
    if (usr1Count != recorded) {
      recorded = usr1Count;
      writeFile(dir + "/usr1_" + rank(), std::to_string(recorded));
    }
    usleep(2000);
  }
  writeFile(dir + "/term_" + rank(), "1");
  return 0;
}

long long monotonicNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// Written whole under a temporary name, then renamed: a reader never sees part of it.
void writeFileAtomically(const std::string& path, const std::string& text) {
  writeFile(path + ".tmp", text);
  rename((path + ".tmp").c_str(), path.c_str());
}

int serve(const std::string& dir) {
  const long long started = monotonicNanoseconds();
  signal(SIGTERM, onTerm);
  const std::string suffix = rank() + "_" + envOr("TORCHELASTIC_RESTART_COUNT", "x");
  std::string json = environmentJson();
  json.pop_back();  // the closing brace
  json += ",\"ppid\":" + std::to_string(getppid()) + ",\"started_ns\":" + std::to_string(started) + "}";
  writeFileAtomically(dir + "/env_" + suffix + ".json", json);
  writeFileAtomically(dir + "/pid_" + suffix, std::to_string(getpid()));
  const std::string release = dir + "/release";
  struct stat info {};
  while (!termReceived && stat(release.c_str(), &info) != 0) usleep(5000);
  return 0;
}

int spawnFamily(const std::string& dir) {
  pid_t grandchild = fork();
  if (grandchild == 0) {
    execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  writeFile(dir + "/family_" + rank(), std::to_string(getpid()) + " " + std::to_string(grandchild));
  while (true) pause();
}

int flood(long long bytes) {
  std::string line;
  std::string buffer;
  long long written = 0;
  for (long long number = 0; written < bytes; ++number) {
    line = "rank " + rank() + " line " + std::to_string(number) + " " + std::string(60, 'x') + "\n";
    buffer += line;
    written += static_cast<long long>(line.size());
    if (buffer.size() > 60000) {
      fwrite(buffer.data(), 1, buffer.size(), stdout);
      buffer.clear();
    }
  }
  fwrite(buffer.data(), 1, buffer.size(), stdout);
  return 0;
}

int recordError(const std::string& message) {
  std::string traceback =
      "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nValueError: " + message;
  std::string json = "{\"message\": {\"message\": " + jsonString("ValueError: " + message) +
                     ", \"extraInfo\": {\"py_callstack\": " + jsonString(traceback) + ", \"timestamp\": \"" +
                     std::to_string(time(nullptr)) + "\"}}}";
  writeFile(envOr("TORCHELASTIC_ERROR_FILE", "/dev/null"), json);
  fprintf(stderr, "something went wrong on rank %s\n", rank().c_str());
  return 1;
}

int stderrLines(int count, int code) {
  for (int number = 1; number <= count; ++number) fprintf(stderr, "stderr line %d\n", number);
  return code;
}

int progress(int steps) {
  for (int step = 1; step <= steps; ++step) {
    fprintf(stdout, "\rstep %d/%d", step, steps);
    fflush(stdout);
    usleep(1000);
  }
  fprintf(stdout, "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]).rfind("--local_rank=", 0) == 0) {
    localRankArgument = argv[1];
    --argc;
    ++argv;  // argv[0] is not read below
  }
  if (argc < 2) {
    fprintf(stderr, "usage: pltrun_test_worker MODE [ARGS...]\n");
    return 64;
  }
  std::string mode = argv[1];
  std::string arg = argc > 2 ? argv[2] : "";
  if (mode == "env") return writeEnvironment(arg);
  if (mode == "exit") return onlyRank(argc, argv, 3) ? std::atoi(arg.c_str()) : 0;
  if (mode == "fail-first-attempt") {
    std::string restart = envOr("TORCHELASTIC_RESTART_COUNT", "?");
    writeFile(arg + "/attempts", rank() + " " + restart + "\n", true);
    return (rank() == argv[3] && restart == "0") ? 7 : 0;
  }
  if (mode == "kill-self") {
    if (onlyRank(argc, argv, 3)) raise(std::atoi(arg.c_str()));
    return 0;
  }
  if (mode == "family") return spawnFamily(arg);
  if (mode == "signals") return recordSignals(arg, false);
  if (mode == "ignore-term") return recordSignals(arg, true);
  if (mode == "flood") return flood(std::atoll(arg.c_str()));
  if (mode == "record-error") return recordError(arg);
  if (mode == "stderr-lines") return stderrLines(std::atoi(arg.c_str()), std::atoi(argv[3]));
  if (mode == "progress") return progress(std::atoi(arg.c_str()));
  if (mode == "serve") return serve(arg);
  fprintf(stderr, "pltrun_test_worker: unknown mode %s\n", mode.c_str());
  return 64;
}
