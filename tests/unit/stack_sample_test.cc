// Stack samples: where a stalled worker's main thread is, read from Python's faulthandler
// dump and from eu-stack's, and whether it waits in a collective.

#include "launcher/stall/stack_sample.h"

#include <catch2/catch.hpp>
#include <string>

using pltrun::kernelStackSample;
using pltrun::nativeStackSample;
using pltrun::pythonStackSample;
using pltrun::stackKindName;
using pltrun::StackSample;
using pltrun::stoppedStackSample;

namespace {

// Background threads as faulthandler prints them: a DataLoader's pin-memory thread, and
// one that synchronizes the device (torch code that would count as waiting, were it the
// main thread).
const std::string kOtherThread =
    "Thread 0x00007f3b1e7fc6c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "  File \"/usr/lib/python3.11/queue.py\", line 180 in get\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/pin_memory.py\", line 31 in do_one_step\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/pin_memory.py\", line 54 in _pin_memory_loop\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
    "\n"
    "Thread 0x00007f3b1effd6c0 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/cuda/__init__.py\", line 801 in synchronize\n"
    "  File \"/home/ada/project/monitor.py\", line 12 in poll\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
    "\n";

// faulthandler's dump with the main thread ("Current thread", the one that ran the handler)
// in `frames` (innermost first, each a "  File ..." line).
std::string dumpWithMainThread(const std::string& frames) {
  return kOtherThread + "Current thread 0x00007f3b3c1b2740 (most recent call first):\n" + frames;
}

const std::string kUserFrames =
    "  File \"/home/ada/project/train.py\", line 57 in main\n"
    "  File \"/home/ada/project/train.py\", line 61 in <module>\n";

}  // namespace

TEST_CASE("stack sample: a Python main thread in user code is where it is, in no collective", "[stack_sample]") {
  const std::string dump = dumpWithMainThread(
      "  File \"/home/ada/project/train.py\", line 33 in train_step\n"
      "  File \"/home/ada/project/train.py\", line 52 in train_epoch\n" +
      kUserFrames);
  const StackSample sample = pythonStackSample(dump);
  CHECK(sample.kind == StackSample::Kind::Python);
  CHECK(sample.where == "train.py:33 in train_step");
  CHECK_FALSE(sample.inCollective);
  CHECK(sample.waitingIn.empty());
  CHECK(sample.text == dump);
}

TEST_CASE("stack sample: a Python main thread inside distributed_c10d's all_reduce waits in it", "[stack_sample]") {
  const StackSample sample = pythonStackSample(dumpWithMainThread(
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1536 in all_reduce\n"
      "  File \"/home/ada/project/train.py\", line 40 in sync_gradients\n" +
      kUserFrames));
  CHECK(sample.where == "train.py:40 in sync_gradients");  // the program's call; waitingIn names the collective
  CHECK(sample.inCollective);
  CHECK(sample.waitingIn == "all_reduce");
}

TEST_CASE("stack sample: torch 2.x's c10d_logger wrapper around all_reduce is still all_reduce", "[stack_sample]") {
  const StackSample sample = pythonStackSample(dumpWithMainThread(
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py\", line 83 in wrapper\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 2501 in all_reduce\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py\", line 83 in wrapper\n"
      "  File \"/home/ada/project/train.py\", line 40 in sync_gradients\n" +
      kUserFrames));
  CHECK(sample.where == "train.py:40 in sync_gradients");
  CHECK(sample.inCollective);
  CHECK(sample.waitingIn == "all_reduce");
}

TEST_CASE("stack sample: DDP's backward (the gradient all-reduce) waits in backward", "[stack_sample]") {
  const StackSample sample = pythonStackSample(
      dumpWithMainThread("  File \"/usr/lib/python3/dist-packages/torch/autograd/__init__.py\", line 251 in backward\n"
                         "  File \"/usr/lib/python3/dist-packages/torch/_tensor.py\", line 492 in backward\n"
                         "  File \"/home/ada/project/train.py\", line 35 in train_step\n" +
                         kUserFrames));
  CHECK(sample.where == "train.py:35 in train_step");
  CHECK(sample.inCollective);
  CHECK(sample.waitingIn == "backward");
}

TEST_CASE("stack sample: a main thread inside the standard library shows the program's line first", "[stack_sample]") {
  const StackSample sample =
      pythonStackSample(dumpWithMainThread("  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
                                           "  File \"/usr/lib/python3.11/queue.py\", line 171 in get\n"
                                           "  File \"/home/ada/project/train.py\", line 18 in load\n" +
                                           kUserFrames));
  CHECK(sample.where == "train.py:18 in load (in threading.py:320 in wait)");
  CHECK_FALSE(sample.inCollective);
}

TEST_CASE("stack sample: only the main thread counts, wherever faulthandler lists it", "[stack_sample]") {
  const std::string mainInUserCode =
      "Current thread 0x00007f3b3c1b2740 (most recent call first):\n"
      "  File \"/home/ada/project/train.py\", line 33 in train_step\n" +
      kUserFrames + "\n";
  // The main thread first, then threads waiting in torch code.
  const StackSample first = pythonStackSample(mainInUserCode + kOtherThread);
  CHECK(first.where == "train.py:33 in train_step");
  CHECK_FALSE(first.inCollective);
  // No "Current thread" (a dump from elsewhere): the last thread, as the main thread is listed last.
  const StackSample unmarked = pythonStackSample(kOtherThread +
                                                 "Thread 0x00007f3b3c1b2740 (most recent call first):\n"
                                                 "  File \"/home/ada/project/train.py\", line 33 in train_step\n" +
                                                 kUserFrames);
  CHECK(unmarked.where == "train.py:33 in train_step");
  CHECK_FALSE(unmarked.inCollective);
}

TEST_CASE("stack sample: a dump without frames says nowhere, and a huge one is cut", "[stack_sample]") {
  const StackSample empty = pythonStackSample("");
  CHECK(empty.kind == StackSample::Kind::Python);
  CHECK(empty.where.empty());
  CHECK_FALSE(empty.inCollective);
  CHECK(pythonStackSample("Fatal Python error: Segmentation fault\n").where.empty());

  const std::string huge(pltrun::kStackTextLimit * 2, 'x');
  CHECK(pythonStackSample(huge).text.size() == pltrun::kStackTextLimit);
}

TEST_CASE("stack sample: eu-stack's main thread only, its three innermost functions", "[stack_sample]") {
  const std::string dump =
      "PID 10 - process\n"
      "TID 10:\n"
      "#0  0x00007f0c2b8e9f3a __GI___clock_nanosleep\n"
      "#1  0x00007f0c2b8ee8a7 __nanosleep\n"
      "#2  0x000055d4c8a1b2c3 compute\n"
      "#3  0x000055d4c8a1b400 main\n"
      "TID 11:\n"
      "#0  0x00007f0c2b8e9f3a ncclProxyProgress\n"
      "#1  0x00007f0c2b8e0000 start_thread\n";
  const StackSample sample = nativeStackSample(dump, 10);
  CHECK(sample.kind == StackSample::Kind::Native);
  CHECK(sample.where == "__GI___clock_nanosleep < __nanosleep < compute");
  CHECK_FALSE(sample.inCollective);  // thread 11's NCCL proxy is not the main thread
  CHECK(sample.text == dump);
}

TEST_CASE("stack sample: an eu-stack main thread in ncclAllReduce waits in it", "[stack_sample]") {
  const StackSample sample = nativeStackSample(
      "PID 10 - process\n"
      "TID 10:\n"
      "#0  0x00007f0c2b8e9f3a __futex_abstimed_wait_common\n"
      "#1  0x00007f0c1a000100 ncclAllReduce\n"
      "#2  0x000055d4c8a1b400 main\n"
      "TID 11:\n"
      "#0  0x00007f0c2b8e9f3a epoll_wait\n",
      10);
  CHECK(sample.where == "__futex_abstimed_wait_common < ncclAllReduce < main");
  CHECK(sample.inCollective);
  CHECK(sample.waitingIn == "ncclAllReduce");
}

TEST_CASE("stack sample: kernel and stopped samples, and each kind's JSON name", "[stack_sample]") {
  const StackSample kernel = kernelStackSample("futex_wait_queue", "[<0>] futex_wait_queue+0x60/0x90\n");
  CHECK(kernel.kind == StackSample::Kind::Kernel);
  CHECK(kernel.where == "kernel wait in futex_wait_queue");
  CHECK(kernelStackSample("0", "").where == "running (no kernel wait)");

  const StackSample stopped = stoppedStackSample('T');
  CHECK(stopped.kind == StackSample::Kind::Stopped);
  CHECK(stopped.where.rfind("stopped (SIGSTOP", 0) == 0);
  CHECK(stoppedStackSample('t').where.rfind("stopped by a debugger", 0) == 0);

  CHECK(std::string(stackKindName(StackSample::Kind::Python)) == "python");
  CHECK(std::string(stackKindName(StackSample::Kind::Native)) == "native");
  CHECK(std::string(stackKindName(StackSample::Kind::Kernel)) == "kernel");
  CHECK(std::string(stackKindName(StackSample::Kind::Stopped)) == "stopped");
  CHECK(std::string(stackKindName(StackSample::Kind::Unavailable)) == "none");
}

TEST_CASE("stack sample: a worker forked by the --preload zygote shows only its own frames", "[stack_sample]") {
  const std::string zygoteFrames =
      "  File \"<pltrun zygote>\", line 177 in _run_script\n"
      "  File \"<pltrun zygote>\", line 160 in _run_program\n"
      "  File \"<pltrun zygote>\", line 267 in <module>\n"
      "  File \"<string>\", line 1 in <module>\n";
  const std::string ownFrames = "  File \"/home/ada/project/train.py\", line 33 in train_step\n" + kUserFrames;
  const StackSample sample = pythonStackSample(dumpWithMainThread(ownFrames + zygoteFrames));
  CHECK(sample.text == dumpWithMainThread(ownFrames));
  CHECK(sample.where == "train.py:33 in train_step");
}

TEST_CASE("stack sample: a program's own exec'd <string> code is kept", "[stack_sample]") {
  const std::string dump = dumpWithMainThread("  File \"<string>\", line 1 in <module>\n" + kUserFrames);
  CHECK(pythonStackSample(dump).text == dump);
}
