#pragma once
// The words DeepSpeed's launcher users type first (`deepspeed --num_gpus 2 train.py
// --deepspeed ...`), with DeepSpeed's meaning:
//   --num_gpus N     GPUs per node: on one node N workers on GPUs 0..N-1 (refused where fewer
//                    are visible); over hosts, at most the first N slots of each host
//   --num_nodes N    the first N hosts of the host list; without one only 1 (this node)
//   -i/--include, -e/--exclude without hosts: this node's GPUs, named localhost as DeepSpeed
//                    names them ("localhost:0,2"); with hosts see host_list.h
//   --no_local_rank  DeepSpeed passes --local_rank=N to the program unless told not to.
// pltrun passes --local_rank=N only when the command line is DeepSpeed's (--num_gpus or
// --num_nodes, words no other launcher has) or asks with --pass-local-rank: torchrun's and
// mpirun's users' programs read LOCAL_RANK, and an argument they do not declare would stop
// their argparse.

#include <vector>

#include "launcher/command_line/raw_flags.h"
#include "launcher/plan/host_list.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// Without hosts: --num_gpus as --devices N, --include/--exclude of localhost as the
/// GPUs (flag errors name --include/--exclude, not --devices), --num_nodes 1. Throws
/// InvalidArgument when they disagree with --nproc-per-node, --devices or -np, or name
/// another host.
void applyDeepSpeedOnOneNode(const RawFlags& raw, LaunchConfig& config);

/// With hosts (after --include/--exclude): the first --num_nodes hosts, at most --num_gpus
/// slots each.
std::vector<HostSlots> applyDeepSpeedToHosts(const RawFlags& raw, std::vector<HostSlots> hosts);

/// Whether each worker gets --local_rank=N before the program's own arguments.
bool passesLocalRankArgument(const RawFlags& raw);

}  // namespace pltrun
