#pragma once
// Nothing a worker starts outlives the job, not even a descendant that left the worker's
// process group and session (setsid, Popen(start_new_session=True): Ray, data loaders),
// which the group kill cannot reach. pltrun becomes the child subreaper of everything it
// starts, so such a process is reparented to pltrun when its parent dies, and when the
// job is over pltrun kills and reaps every child it still has.

namespace pltrun {

/// PR_SET_CHILD_SUBREAPER: orphaned descendants are reparented to this process, not init.
/// Call before starting any child.
void adoptOrphanedDescendants();

/// Kills (SIGKILL) and reaps every child this process still has, again for the ones their
/// deaths reparent here, until none is left; returns how many it killed. Call once every
/// child pltrun started itself (workers, the orphan guard, ssh) has been reaped: what is
/// left was inherited. A child's pid cannot be reused before it is reaped, so no other
/// process can be hit.
int sweepRemainingChildren();

}  // namespace pltrun
