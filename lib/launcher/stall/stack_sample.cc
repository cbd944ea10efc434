#include "launcher/stall/stack_sample.h"

#include <array>
#include <sstream>
#include <string_view>
#include <vector>

namespace pltrun {
namespace {

struct PythonFrame {
  std::string path;
  std::string line;
  std::string function;
};

// `  File "PATH", line N in FUNCTION`, faulthandler's frame line.
bool parsePythonFrame(std::string_view text, PythonFrame& frame) {
  constexpr std::string_view kStart = "File \"";
  const size_t start = text.find(kStart);
  if (start == std::string_view::npos) return false;
  const size_t pathEnd = text.find("\", line ", start + kStart.size());
  if (pathEnd == std::string_view::npos) return false;
  frame.path = std::string(text.substr(start + kStart.size(), pathEnd - start - kStart.size()));
  const std::string_view rest = text.substr(pathEnd + 8);
  const size_t in = rest.find(" in ");
  frame.line = std::string(rest.substr(0, in));
  frame.function = in == std::string_view::npos ? "" : std::string(rest.substr(in + 4));
  return true;
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Frames of torch's own code that a rank sits in while it waits for the others: the
// collectives, DDP's gradient all-reduce inside backward, a device synchronize.
bool isTorchWaitFrame(const PythonFrame& frame) {
  static constexpr std::array<std::string_view, 5> kPlaces = {
      "/torch/distributed/", "/torch/autograd/", "/torch/nn/parallel/", "/torch/_tensor.py", "/torch/cuda/"};
  for (std::string_view place : kPlaces) {
    if (frame.path.find(place) != std::string::npos) return true;
  }
  return false;
}

bool isCollectiveName(std::string_view name) {
  static constexpr std::array<std::string_view, 14> kNames = {
      "all_reduce",        "barrier",    "broadcast", "all_gather", "all_gather_into_tensor",
      "reduce_scatter",    "all_to_all", "gather",    "scatter",    "reduce",
      "monitored_barrier", "send",       "recv",      "backward"};
  for (std::string_view known : kNames) {
    if (name == known) return true;
  }
  return false;
}

// The main thread's frames, innermost first: faulthandler marks the thread that ran the
// handler "Current thread", which is the main thread for a signal sent to the process.
std::vector<PythonFrame> mainThreadFrames(const std::string& dump) {
  std::vector<std::vector<PythonFrame>> threads;
  size_t current = std::string::npos;
  std::istringstream lines(dump);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Thread 0x", 0) == 0 || line.rfind("Current thread 0x", 0) == 0) {
      if (line.rfind("Current", 0) == 0) current = threads.size();
      threads.emplace_back();
      continue;
    }
    PythonFrame frame;
    if (!threads.empty() && parsePythonFrame(line, frame)) threads.back().push_back(frame);
  }
  if (threads.empty()) return {};
  return current != std::string::npos ? threads[current] : threads.back();
}

std::string frameText(const PythonFrame& frame) {
  return baseName(frame.path) + ":" + frame.line + " in " + frame.function;
}

// Code of Python's or of an installed package (torch, the standard library), not the program's.
bool isLibraryFrame(const PythonFrame& frame) {
  return frame.path.find("/lib/python3") != std::string::npos || frame.path.rfind("<frozen", 0) == 0;
}

// Where the program itself is: its innermost frame of its own code, followed, with
// `libraryFrame`, by the library frame it is in when that is deeper ("train.py:18 in load
// (in threading.py:320 in wait)"), so that the user reads their own line first. Only
// library frames: the innermost.
std::string programWhere(const std::vector<PythonFrame>& frames, bool libraryFrame) {
  for (const PythonFrame& frame : frames) {
    if (isLibraryFrame(frame)) continue;
    if (&frame == &frames.front() || !libraryFrame) return frameText(frame);
    return frameText(frame) + " (in " + frameText(frames.front()) + ")";
  }
  return frameText(frames.front());
}

// The dump without the frames of pltrun's --preload zygote (lib/launcher/process/zygote.py),
// which a forked worker has below its program: the outermost ones, the zygote's code, and
// under them its bootstrap, run by `python -c` as "<string>". A cold worker has neither.
std::string withoutZygoteFrames(const std::string& dump) {
  if (dump.find("File \"<pltrun zygote>\"") == std::string::npos) return dump;
  std::istringstream lines(dump);
  std::string kept;
  bool underZygote = false;
  for (std::string line; std::getline(lines, line);) {
    const bool zygoteFrame = line.find("File \"<pltrun zygote>\"") != std::string::npos;
    const bool bootstrap = underZygote && line.find("File \"<string>\", line 1 in <module>") != std::string::npos;
    underZygote = zygoteFrame;
    if (!zygoteFrame && !bootstrap) kept += line + "\n";
  }
  return kept;
}

}  // namespace

StackSample pythonStackSample(const std::string& dump) {
  StackSample sample;
  sample.kind = StackSample::Kind::Python;
  sample.text = withoutZygoteFrames(dump).substr(0, kStackTextLimit);
  const std::vector<PythonFrame> frames = mainThreadFrames(sample.text);
  if (frames.empty()) return sample;
  const PythonFrame& innermost = frames.front();
  // In a collective, waitingIn names it; where is the program's call.
  sample.where = programWhere(frames, !isTorchWaitFrame(innermost));
  if (!isTorchWaitFrame(innermost)) return sample;
  sample.inCollective = true;
  sample.waitingIn = innermost.function;
  for (const PythonFrame& frame : frames) {
    if (!isTorchWaitFrame(frame)) break;
    if (isCollectiveName(frame.function)) {
      sample.waitingIn = frame.function;
      break;
    }
  }
  return sample;
}

StackSample nativeStackSample(const std::string& dump, int pid) {
  static constexpr std::array<std::string_view, 9> kWaits = {"nccl",
                                                             "gloo::",
                                                             "c10d::",
                                                             "MPI_",
                                                             "ProcessGroup",
                                                             "cudaStreamSynchronize",
                                                             "cudaDeviceSynchronize",
                                                             "cuStreamSynchronize",
                                                             "cudaEventSynchronize"};
  StackSample sample;
  sample.kind = StackSample::Kind::Native;
  sample.text = dump.substr(0, kStackTextLimit);
  std::istringstream lines(sample.text);
  std::string line;
  bool inMain = false;
  std::vector<std::string> functions;
  while (std::getline(lines, line)) {
    if (line.rfind("TID ", 0) == 0) {
      inMain = line == "TID " + std::to_string(pid) + ":";
      continue;
    }
    if (!inMain || line.rfind('#', 0) != 0) continue;
    // "#0  0x00007f0c2b8e9f3a __GI___clock_nanosleep": the function is the third field.
    std::istringstream fields(line);
    std::string index, address, function;
    fields >> index >> address >> function;
    if (!function.empty()) functions.push_back(function);
  }
  for (size_t index = 0; index < functions.size() && index < 3; ++index) {
    sample.where += (index > 0 ? " < " : "") + functions[index];
  }
  for (const std::string& function : functions) {
    for (std::string_view wait : kWaits) {
      if (function.find(wait) == std::string::npos) continue;
      sample.inCollective = true;
      sample.waitingIn = function;
      return sample;
    }
  }
  return sample;
}

StackSample kernelStackSample(const std::string& wchan, const std::string& kernelStack) {
  StackSample sample;
  sample.kind = StackSample::Kind::Kernel;
  sample.text = kernelStack.substr(0, kStackTextLimit);
  sample.where = wchan.empty() || wchan == "0" ? "running (no kernel wait)" : "kernel wait in " + wchan;
  return sample;
}

StackSample stoppedStackSample(char state) {
  StackSample sample;
  sample.kind = StackSample::Kind::Stopped;
  sample.where = state == 't' ? "stopped by a debugger (traced): it runs no code"
                              : "stopped (SIGSTOP or SIGTSTP): it runs no code, not even a stack dump";
  return sample;
}

const char* stackKindName(StackSample::Kind kind) {
  switch (kind) {
    case StackSample::Kind::Python:
      return "python";
    case StackSample::Kind::Native:
      return "native";
    case StackSample::Kind::Kernel:
      return "kernel";
    case StackSample::Kind::Stopped:
      return "stopped";
    case StackSample::Kind::Unavailable:
      break;
  }
  return "none";
}

}  // namespace pltrun
