#pragma once
// NCCL's tuner: the algorithm, protocol and channel count NCCL would pick for one collective,
// from its cost model alone (nothing is simulated). The model's facts (base and hardware
// latencies, per-channel bandwidth caps per GPU generation, protocol factors, the tree correction
// and ring plateau) are NCCL 2.30.7's `src/graph/tuning.cc` (tag v2.30.7-1); the channel count
// for the size is `nccl_channels_for_size` (src/enqueue.cc). What NCCL reads off its topology
// search (per-channel bandwidths bwIntra / bwInter) is read off our cluster instead
// (nccl_topology, collectives/README.md "The NCCL tuner").
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace clustersim {

/// NCCL's compute-capability rows (Volta < sm80 <= Ampere < sm90 <= Hopper < sm100 <= Blackwell).
enum class GpuGeneration { volta, ampere, hopper, blackwell };
/// The generation of a GPU by its catalog name (V100, A100/A800, H100/H200/H800/GH200,
/// B200/B300/GB200/GB300); any other name (AMD's MI300X/MI355X run RCCL, not NCCL) gets Hopper's
/// row, the one whose link rates are closest.
GpuGeneration gpu_generation(const std::string& gpu_name);
const char* to_string(GpuGeneration g);
/// NCCL's nvlsEfficiency (src/graph/tuning.cc, v2.30.7-1): the share of NVLink's copy bandwidth the
/// switch's reduction and multicast reach, 0.85 on Hopper, 0.74 on Blackwell; 1 for generations
/// without NVLS (nothing to scale).
double nvls_efficiency(GpuGeneration g);
/// NCCL's ceiling on one NVLS-tree channel's bus bandwidth (perChMaxNVLSTreeBws, GB/s, by nodes
/// 1 / 2 / more): what a channel's thread blocks move while they split between the switch's
/// reduction, network sends and receives, however fast the links (57.7 on Hopper at 2 nodes, 45.5
/// beyond; 96 and 80 on Blackwell; NCCL's rows for older generations, which have no NVLS, unused).
double nvls_tree_channel_cap_GBps(GpuGeneration g, int nodes);

/// What NCCL's tuner knows of one communicator: its shape and its topology graphs' channels and
/// per-channel bandwidths, here derived from the cluster.
struct NcclTopology {
  int ranks = 0;
  int nodes = 0;
  int channels = 1;                   // ring and tree graphs' nChannels
  int nvls_channels = 0;              // NVLS graph's heads (one per local GPU); 0: no NVLS
  GpuGeneration generation = GpuGeneration::hopper;
  bool nvlink = true;                 // intra-node hops are NVLink (else PCI)
  double intra_GBps = 0;              // bandwidth of a GPU inside its node (all channels together)
  double inter_GBps = 0;              // network bandwidth of a node's ranks (all channels together)
  double inter_latency_us = 0;        // NCCL's latencyInter: the net plugin's (IB reports 0)
};
/// The communicator over `ranks` (GPU ids) of `cluster` with `channels` ring/tree channels.
NcclTopology nccl_topology(const Cluster& cluster, const std::vector<int>& ranks, int channels);

/// One (algorithm, protocol) as NCCL's model states it: latency and algorithm bandwidth
/// (GB/s, 1e9); bandwidth 0 means NCCL would not run it.
struct NcclCost {
  double latency_us = 0;
  double bandwidth_GBps = 0;
};
/// `algorithm`: ring, tree, nvls, nvls_tree, pat; `protocol`: LL, LL128, Simple.
NcclCost nccl_cost(const NcclTopology& topo, Op op, const std::string& algorithm, const std::string& protocol);
/// NCCL's time for one collective of `size_bytes` (ncclTopoGetAlgoTime, one operation), with the
/// tree correction factors and the ring plateau; nullopt when NCCL would not run it.
std::optional<Seconds> nccl_predicted_time(const NcclTopology& topo, Op op, const std::string& algorithm,
                                           const std::string& protocol, Bytes size_bytes);

struct NcclChoice {
  const Algorithm* algorithm = nullptr;
  Protocol protocol;
  int channels = 1;
  /// NCCL's own estimate; nullopt for send/recv and all-to-all, which NCCL does not tune.
  std::optional<Seconds> predicted_s;
};

/// NCCL's pick for `request` (its op, ranks, size; `request.channels` is the channel count NCCL
/// opened): the (algorithm, protocol) of least predicted time among those NCCL enables and our
/// registry can run on this cluster, limited to `only` when given, on
/// nccl_channels_for_size(...) channels when `size_channels`, else on request.channels.
/// Send/recv and all-to-all are not tuned by NCCL: PXN where the fabric offers it (NCCL's
/// default), else direct, with Simple. nullopt when nothing applies (e.g. `only` is LL for PAT).
std::optional<NcclChoice> nccl_choose(const Cluster& cluster, const CollectiveRequest& request,
                                      const std::optional<Protocol>& only, bool size_channels);

}  // namespace clustersim
