#pragma once
// Blame per node (--max-node-blames K, issue 46): a round that ends because of this node's
// workers (an exit, a signal, a stall: the worker failure that ended the round was reported
// here) counts against this node; K such rounds in a row, while the other nodes' workers ran,
// and the node is excluded for the rest of the run: a bad machine leaves the job instead of
// failing every new round until --max-restarts is spent. Pure: the agent feeds it each
// round's end and does the leaving (node_exclusion.h).

#include <string>

#include "rendezvous/elastic/round_end.h"

namespace pltrun {

/// The exit status of an agent whose node was excluded: its part of the job failed, though
/// the job may go on, and succeed, without it.
constexpr int kExcludedExitStatus = 1;

class NodeBlame {
 public:
  /// `maxBlames` 0: never excluded.
  explicit NodeBlame(int maxBlames) : maxBlames_(maxBlames) {}

  /// Round `round` of `nnodes` nodes ended as `end`; `reportedHere`: this node's worker
  /// failure ended it; `othersFailed`: another node's workers failed on their own in the
  /// same round too. Returns whether this node is now to be excluded. A failure on another
  /// node, or on several, clears the count (the blame must be this node's alone, and in a
  /// row); a node joining, lost or a round that could not form leaves it as it is; a job of
  /// one node blames nobody (its failures are the job's), nor does the round that ends the job.
  bool afterRound(int round, const rdzv::RoundEnd& end, bool reportedHere, bool othersFailed, int nnodes);

  int blames() const { return blames_; }
  /// One line: "its workers ended 2 rounds in a row while the other nodes' ran (--max-node-blames 2);
  /// last, round 3: rank 1 (...) ended with exit code 1".
  std::string reason() const;

 private:
  int maxBlames_;
  int blames_ = 0;
  int lastRound_ = -1;
  std::string lastFailure_;
};

}  // namespace pltrun
