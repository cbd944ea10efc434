#pragma once
// Where the GPU locks of --auto-select-gpus live (gpu_lock.h), and the checks that make a
// directory fit for them. Users share it, so what matters is who can delete a lock file in
// it: the file's owner, the directory's owner, root, and, without the sticky bit, anyone
// who may write in the directory. A lock file deleted while held lets a second job lock a
// new file of the same name: the GPU taken twice.
//
// DIR: $PLTRUN_GPU_LOCK_DIR (made mode 0700 if missing), else /run/lock (root's, mode 1777
// on systemd machines: every user's pltruns see each other's locks, and nobody can delete
// another user's), else $XDG_RUNTIME_DIR/pltrun-gpus (made 0700: this user's pltruns only).

#include <string>

namespace pltrun {

/// The directory of the GPU locks, made if missing (see above). Throws InvalidArgument, one
/// line, when none can be used.
std::string gpuLockDirectory();

/// Opens `path` (O_DIRECTORY, close-on-exec) after checking that it can hold GPU locks: a
/// real directory, never a symbolic link; this user's or root's; and where others may write
/// in it, sticky. Throws InvalidArgument, one line saying what is wrong and what to do.
int openGpuLockDirectory(const std::string& path);

}  // namespace pltrun
