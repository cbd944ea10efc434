#pragma once
// Nothing a worker starts outlives the job, not even a descendant that left the worker's
// process group and session (setsid, Popen(start_new_session=True): Ray, data loaders),
// which the group kill cannot reach. pltrun becomes the child subreaper of everything it
// starts, so such a process is reparented to pltrun when its parent dies, and when the
// job is over pltrun kills and reaps every child it still has.

#include <sys/types.h>

namespace pltrun {

/// PR_SET_CHILD_SUBREAPER: orphaned descendants are reparented to this process, not init.
/// Call before starting any child.
void adoptOrphanedDescendants();

/// pltrun's own children (workers, the orphan guard, eu-stack) are reaped by the code that
/// started them; reapAdoptedChildren() leaves them alone. Claim a child right after it is
/// started, release it right after it is reaped.
void claimOwnChild(pid_t pid);
void releaseOwnChild(pid_t pid);

/// Reaps the children that have ended and that pltrun did not start (descendants reparented
/// here when their parent died), so that a long job's zombies do not pile up until exit
/// (each holds a pid). Does nothing unless this process is a child subreaper. Returns how
/// many it reaped. The group runner calls it every second.
int reapAdoptedChildren();

struct SweptChildren {
  int killed = 0;         ///< every child left (one the job's cgroup kill ended is counted too)
  int outsideGroups = 0;  ///< of those, the ones that had made a process group of their own
};

/// Kills (SIGKILL) and reaps every child this process still has, again for the ones their
/// deaths reparent here, until none is left; returns how many it killed. Call once every
/// child pltrun started itself (workers, the orphan guard, ssh) has been reaped: what is
/// left was inherited. A child's pid cannot be reused before it is reaped, so no other
/// process can be hit.
SweptChildren sweepRemainingChildren();

}  // namespace pltrun
