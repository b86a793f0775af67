// NCCL's cost model, one (algorithm, protocol) at a time. Every figure below is NCCL 2.30.7's
// (src/graph/tuning.cc, tag v2.30.7-1: ncclTunerConstantsDefaults, nvlsEfficiency,
// ncclTopoTuneModel, treeCorrectionFactor, ncclTopoGetAlgoTime); the code is ours.
#include <algorithm>
#include <array>
#include <limits>

#include "collectives/tuner_nccl.hpp"

namespace clustersim {

namespace {

enum Algo { kTree, kRing, kNvls, kNvlsTree, kPat, kAlgos };
enum Proto { kLL, kLL128, kSimple, kProtos };
enum Hw { kNvlink, kPci, kNet };
using PerProto = std::array<double, kProtos>;

std::optional<Algo> algo_of(const std::string& name) {
  if (name == "tree") return kTree;
  if (name == "ring") return kRing;
  if (name == "nvls") return kNvls;
  if (name == "nvls_tree") return kNvlsTree;
  if (name == "pat") return kPat;
  return std::nullopt;
}

std::optional<Proto> proto_of(const std::string& name) {
  if (name == "LL") return kLL;
  if (name == "LL128") return kLL128;
  if (name == "Simple") return kSimple;
  return std::nullopt;
}

// Base latency per collective (us); NVLS and NVLS-tree have none, PAT 8 for every protocol.
constexpr std::array<PerProto, kAlgos> kBaseLatency_us{{
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}}};

// Latency per hop (us) by hop kind: NVLink, PCI, network.
constexpr std::array<std::array<PerProto, kAlgos>, 3> kHopLatency_us{{
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}}},
    {{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}}},
    {{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}},
}};

// Caps in GB/s, [generation][min(nodes, 3) - 1]. LL's whole-collective cap: one node by GPU
// generation, more nodes by CPU vendor (we take Intel's row, NCCL's first).
constexpr std::array<std::array<double, 3>, 4> kLLMax_GBps{{
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
// Per channel: ring LL128, tree LL128, tree (all-reduce), NVLS-tree.
constexpr std::array<std::array<double, 3>, 4> kRingLL128PerChannel_GBps{{
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
constexpr std::array<std::array<double, 3>, 4> kTreeLL128PerChannel_GBps{{
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr std::array<std::array<double, 3>, 4> kTreePerChannel_GBps{{
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr std::array<std::array<double, 3>, 4> kNvlsTreePerChannel_GBps{{
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};
// What the switch's reduction reaches of NVLink (none before Hopper).
constexpr std::array<double, 4> kNvlsEfficiency{0.0, 0.0, 0.85, 0.74};

// Trees run below the model at medium sizes; NCCL scales their bandwidth by size class
// (log2 of size / 64 B, 64 B to 256 MiB).
constexpr std::array<std::array<double, 24>, kProtos> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}}};

// A network post costs 1 us of CPU time on x86 (Intel); Simple posts three times as much.
constexpr double kNetOverhead_us = 1.0;

int floor_log2(long n) {
  if (n <= 0) return -1;
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

/// The number of pipeline steps of a ring (NCCL's nsteps).
int ring_steps(Op op, int ranks) {
  if (op == Op::all_reduce) return 2 * (ranks - 1);
  if (op == Op::all_gather || op == Op::reduce_scatter) return ranks - 1;
  return ranks;
}

/// Which algorithms NCCL's tuner considers for an op at all.
bool considered(Op op, Algo a, Proto p, const NcclTopology& t) {
  if (op == Op::all_to_all || op == Op::send_recv) return false;
  if (op == Op::broadcast && a != kRing) return false;
  if ((op == Op::all_gather || op == Op::reduce_scatter) && a == kTree) return false;
  if (op == Op::all_reduce && a == kPat) return false;
  if ((a == kNvls || a == kNvlsTree || a == kPat) && p != kSimple) return false;
  if (a == kPat && t.nodes != t.ranks) return false;                 // one GPU per node only
  if ((a == kNvls || a == kNvlsTree) && t.nvls_channels < 2) return false;
  if (a == kNvlsTree && t.nodes == 1) return false;
  if (a == kNvls && t.nodes > 1) return false;                       // needs CollNet across nodes
  return true;
}

}  // namespace

double nvls_efficiency(GpuGeneration g) {
  const double e = kNvlsEfficiency[static_cast<std::size_t>(g)];
  return e > 0 ? e : 1.0;
}

double nvls_tree_channel_cap_GBps(GpuGeneration g, int nodes) {
  return kNvlsTreePerChannel_GBps[static_cast<std::size_t>(g)][static_cast<std::size_t>(std::clamp(nodes, 1, 3) - 1)];
}

NcclCost nccl_cost(const NcclTopology& t, Op op, const std::string& algorithm, const std::string& protocol) {
  const auto a_of = algo_of(algorithm);
  const auto p_of = proto_of(protocol);
  if (!a_of || !p_of || t.ranks < 2 || t.nodes < 1 || !considered(op, *a_of, *p_of, t)) return {};
  const Algo a = *a_of;
  const Proto p = *p_of;
  const int gen = static_cast<int>(t.generation);
  const int col = std::min(t.nodes, 3) - 1;
  // LL128 is on by default from Hopper, and before it only over NVLink (typeIntra <= NVB).
  if (p == kLL128 && t.generation < GpuGeneration::hopper && !t.nvlink) return {};
  const bool multi = t.nodes > 1;
  const double ppn = static_cast<double>(t.ranks) / t.nodes;
  const int nsteps = ring_steps(op, t.ranks);
  const bool gather_scatter = op == Op::all_gather || op == Op::reduce_scatter;

  // Per-channel bandwidths of the graph. NCCL's search gives a multi-node ring or tree one speed
  // for both (lowered to what its NIC path carries); a 2-node tree may raise bwIntra up to 2x.
  const int channels = (a == kNvls || a == kNvlsTree) ? t.nvls_channels : t.channels;
  const double intra = t.intra_GBps / channels;
  const double inter = t.inter_GBps / channels;
  double bw = !multi ? intra : std::min(intra, inter);
  if (a == kTree && multi && t.nodes <= 2) bw = std::min(intra, 2 * inter);
  if (a == kNvls || a == kNvlsTree) {
    double intra_bw = intra * kNvlsEfficiency[gen] * (channels - 1) / channels;
    intra_bw *= op == Op::all_reduce ? 2.0 : (ppn - 1) / ppn;  // all-reduce pipelines two operations
    // In one node the NVLS search raises bwInter to twice bwIntra; a 2-node NVLS-tree doubles it.
    const double inter_bw = !multi ? 2 * intra : inter * ((t.nodes <= 2 && a == kNvlsTree) ? 2 : 1);
    bw = std::min(intra_bw, inter_bw);
    if (a == kNvlsTree) bw = std::min(bw, nvls_tree_channel_cap_GBps(t.generation, t.nodes));
  }
  double bus = channels * bw;
  const double ll_max = kLLMax_GBps[multi ? 0 : gen][col];
  if (a == kRing && p == kLL) bus = std::min(ll_max, bus * 0.5);
  if (a == kRing && p == kLL128) bus = std::min(bus * 0.92, channels * kRingLL128PerChannel_GBps[gen][col]);
  if (a == kTree && op == Op::all_reduce) bus = std::min(bus * 0.92, channels * kTreePerChannel_GBps[gen][col]);
  if (a == kTree && p == kLL) bus = std::min(bus / 3.8, ll_max);
  if (a == kTree && p == kLL128)
    bus = std::min(bus * (t.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kTreeLL128PerChannel_GBps[gen][col]);
  if (a == kPat) bus *= 0.75;
  // Bus to algorithm bandwidth (NVLS and PAT all-gather / reduce-scatter stay as they are).
  if (!(a != kRing && gather_scatter)) bus *= (a == kTree) ? 0.5 : static_cast<double>(t.ranks) / nsteps;

  const Hw intra_hw = t.nvlink ? kNvlink : kPci;
  double intra_lat = kHopLatency_us[intra_hw][a][p];
  // With one GPU per node every hop is exposed: NCCL takes the tree's network latency.
  double inter_lat = (ppn == 1 ? kHopLatency_us[kNet][kTree][p] : kHopLatency_us[kNet][a][p]) + t.inter_latency_us;
  if (p == kSimple) inter_lat += t.inter_latency_us;  // the flush
  double lat = kBaseLatency_us[a][p];
  const int local = t.ranks / t.nodes;
  const int log_nodes = floor_log2(t.nodes);
  switch (a) {
    case kRing:
      if (op == Op::broadcast) {
        // One node: every channel runs the same GPU order, a single hop's latency; across
        // nodes (channels on other NICs) each step's, Simple at the tree's hop latency.
        const Hw hw = multi ? kNet : intra_hw;
        if (!multi) lat += kHopLatency_us[hw][kRing][p];
        else lat += nsteps * kHopLatency_us[hw][p == kSimple ? kTree : kRing][p];
      } else {
        const double overhead = multi ? kNetOverhead_us * (p == kSimple ? 3 : 1) : 0.0;
        intra_lat = std::max(intra_lat, overhead);
        const int inter_steps = !multi ? 0 : op == Op::all_reduce ? 2 * (t.nodes - 1) : t.nodes - 1;
        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      }
      break;
    case kTree: lat += 2 * ((local - 1) * intra_lat + log_nodes * inter_lat); break;
    case kNvls: lat = intra_lat + (multi ? inter_lat : 0); break;
    case kNvlsTree: lat += intra_lat + 2 * log_nodes * inter_lat; break;
    case kPat: lat += log_nodes * (inter_lat / 3.5) + t.ranks * 2.8; break;
    default: break;
  }
  return {lat, bus};
}

std::optional<Seconds> nccl_predicted_time(const NcclTopology& t, Op op, const std::string& algorithm,
                                           const std::string& protocol, Bytes size_bytes) {
  const NcclCost cost = nccl_cost(t, op, algorithm, protocol);
  if (cost.bandwidth_GBps <= 0) return std::nullopt;
  double bw = cost.bandwidth_GBps, lat = cost.latency_us;
  const int size_class = floor_log2(static_cast<long>(size_bytes >> 6));
  const int p = *proto_of(protocol);
  if (algorithm == "tree" && op == Op::all_reduce && size_class >= 0 && size_class < 23) bw *= kTreeCorrection[p][size_class];
  if (algorithm == "nvls_tree" && op == Op::all_reduce && size_class >= 0 && size_class < 24 &&
      t.generation == GpuGeneration::blackwell)
    bw *= kTreeCorrection[p][size_class];
  // The ring's latency plateau once each rank's chunk per channel reaches 64 bytes.
  if (algorithm == "ring" && protocol == "Simple" && t.nodes > 1 && op == Op::all_reduce &&
      size_bytes / static_cast<Bytes>(t.channels * t.ranks) >= 64)
    lat *= t.generation < GpuGeneration::ampere ? 1.9 : 1.4;
  return (lat + static_cast<double>(size_bytes) / (1000.0 * bw)) * kMicro;
}

}  // namespace clustersim
