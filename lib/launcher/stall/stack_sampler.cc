#include "launcher/stall/stack_sampler.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "base/seconds_text.h"
#include "launcher/stall/eu_stack_run.h"
#include "launcher/stall/process_view.h"

namespace pltrun {

using Clock = std::chrono::steady_clock;

struct StackSampling::Shared {
  std::mutex mutex;
  std::vector<std::optional<StackSample>> samples;  ///< each published as soon as it is read
  bool finished = false;                            ///< the thread has published every sample

  void publish(size_t index, StackSample sample) {
    std::lock_guard<std::mutex> lock(mutex);
    samples[index] = std::move(sample);
  }
};

namespace {

// How often the thread looks at the dump files, and the loop at the thread.
constexpr std::chrono::milliseconds kPollSlice{10};
// A dump is complete once its file has grown and then stayed the same this long.
constexpr std::chrono::milliseconds kDumpSettled{50};

struct PendingDump {
  size_t index;
  pid_t python;
  std::string file;
  off_t offset;
  off_t lastSize;
  Clock::time_point lastGrowth;
};

struct PendingNative {
  size_t index;
  pid_t pid;
  std::unique_ptr<EuStackRun> run;  ///< none: eu-stack is not installed
};

struct Work {
  std::vector<PendingDump> dumps;
  std::vector<PendingNative> natives;
};

off_t fileSize(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? info.st_size : 0;
}

std::string readFrom(const std::string& path, off_t offset) {
  std::ifstream file(path, std::ios::binary);
  file.seekg(offset);
  std::string text(kStackTextLimit, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  return text;
}

StackSample kernelView(pid_t pid) { return kernelStackSample(readProcText(pid, "wchan"), readProcText(pid, "stack")); }

StackSample lateSample(pid_t pid, const std::string& why) {
  StackSample sample = kernelView(pid);
  sample.noStack = why;
  return sample;
}

// Waits up to `wait` for output from any eu-stack still running.
void waitForOutput(const std::vector<PendingNative>& natives, std::chrono::milliseconds wait) {
  std::vector<pollfd> ready;
  for (const PendingNative& native : natives) ready.push_back({native.run->output(), POLLIN, 0});
  if (ready.empty()) {
    std::this_thread::sleep_for(wait);
  } else {
    poll(ready.data(), ready.size(), static_cast<int>(wait.count()));
  }
}

// Publishes the eu-stack runs that have answered (and kills and reaps them).
void takeAnswers(std::vector<PendingNative>& natives, StackSampling::Shared& shared) {
  for (auto native = natives.begin(); native != natives.end();) {
    if (native->run->readMore()) {
      ++native;
      continue;
    }
    const std::string& text = native->run->text();
    shared.publish(native->index, text.find("TID ") != std::string::npos ? nativeStackSample(text, native->pid)
                                                                         : kernelView(native->pid));
    native = natives.erase(native);
  }
}

// Publishes the Python dumps that have been written: their file grew, then stayed the same.
void takeDumps(std::vector<PendingDump>& dumps, StackSampling::Shared& shared) {
  const auto now = Clock::now();
  for (auto dump = dumps.begin(); dump != dumps.end();) {
    const off_t size = fileSize(dump->file);
    if (size != dump->lastSize) {
      dump->lastSize = size;
      dump->lastGrowth = now;
    }
    if (dump->lastSize > dump->offset && now - dump->lastGrowth >= kDumpSettled) {
      shared.publish(dump->index, pythonStackSample(readFrom(dump->file, dump->offset)));
      dump = dumps.erase(dump);
    } else {
      ++dump;
    }
  }
}

// The sampling thread: every sampler at once, until each has answered or the deadline.
void sampleUntil(std::shared_ptr<StackSampling::Shared> shared, Work work, Clock::time_point deadline,
                 std::string deadlineText) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // pltrun's signals are the event loop's
  auto& natives = work.natives;
  for (auto native = natives.begin(); native != natives.end();) {
    if (native->run) {
      ++native;
      continue;
    }
    shared->publish(native->index, kernelView(native->pid));
    native = natives.erase(native);
  }
  while ((!natives.empty() || !work.dumps.empty()) && Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    waitForOutput(natives, std::max(std::chrono::milliseconds(1), std::min(kPollSlice, left)));
    takeAnswers(natives, *shared);
    takeDumps(work.dumps, *shared);
  }
  for (const PendingNative& native : natives) {
    shared->publish(native.index, lateSample(native.pid, "eu-stack did not answer within " + deadlineText));
  }
  for (const PendingDump& dump : work.dumps) {
    shared->publish(dump.index, lateSample(dump.python, "its Python stack dump did not arrive within " + deadlineText));
  }
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->finished = true;
  }
  natives.clear();  // the late ones are killed and reaped, after the report has what it needs
}

}  // namespace

int pythonStackSignal() { return SIGRTMAX - 4; }

StackSampling::StackSampling(std::unique_ptr<Timer> timer, const std::vector<StackTarget>& targets, int stackSignal,
                             std::chrono::milliseconds deadline, OnStacks onStacks)
    : timer_(std::move(timer)),
      shared_(std::make_shared<Shared>()),
      giveUpAt_(Clock::now() + deadline + kStackDeliveryMargin),
      deadline_(deadline),
      onStacks_(std::move(onStacks)) {
  shared_->samples.resize(targets.size());
  const auto started = Clock::now();
  Work work;
  for (size_t index = 0; index < targets.size(); ++index) {
    const StackTarget& target = targets[index];
    const std::optional<pid_t> python = pythonProcessOf(target.workerPid, stackSignal);
    const std::optional<ProcessStat> stat = readProcessStat(python.value_or(target.workerPid));
    if (!stat) {
      shared_->publish(index, StackSample{});  // gone
    } else if (stat->state == 'T' || stat->state == 't') {
      shared_->publish(index, stoppedStackSample(stat->state));
    } else if (python && !target.stackFile.empty()) {
      const off_t offset = fileSize(target.stackFile);
      if (kill(*python, stackSignal) == 0) {
        work.dumps.push_back({index, *python, target.stackFile, offset, offset, started});
      } else {
        shared_->publish(index, StackSample{});
      }
    } else {
      work.natives.push_back({index, target.workerPid, EuStackRun::start(target.workerPid)});
    }
  }
  try {
    std::thread(sampleUntil, shared_, std::move(work), started + deadline, secondsText(deadline) + " s").detach();
  } catch (const std::system_error&) {
    // No thread: the report goes out with what was read here, the rest said to be missing.
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->finished = true;
  }
  // Not at once: `onStacks` never runs before the constructor has returned.
  timer_->expireAfter(kPollSlice, [this] { checkDone(); });
}

StackSampling::~StackSampling() { timer_->cancel(); }

void StackSampling::checkDone() {
  bool finished = false;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    finished = shared_->finished;
  }
  if (finished || Clock::now() >= giveUpAt_) {
    deliver();
    return;
  }
  timer_->expireAfter(kPollSlice, [this] { checkDone(); });
}

void StackSampling::deliver() {
  std::vector<StackSample> samples;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    for (const std::optional<StackSample>& sample : shared_->samples) {
      samples.push_back(sample.value_or(StackSample{}));
      if (!sample) {
        samples.back().noStack =
            "the stack sampler did not finish within " + secondsText(deadline_ + kStackDeliveryMargin) + " s";
      }
    }
  }
  OnStacks onStacks = std::move(onStacks_);
  onStacks_ = nullptr;
  if (onStacks) onStacks(std::move(samples));  // last: it may destroy this
}

}  // namespace pltrun
