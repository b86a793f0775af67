#pragma once
// DeepEP's normal (high-throughput) inter-node dispatch and combine kernels as flows
// (github.com/deepseek-ai/DeepEP, V1 `csrc/kernels/internode.cu`; DeepSeek-V3 report,
// arXiv:2412.19437, section 3.2.2). A dispatch moves each token once per remote node it needs,
// GPU i to GPU i of that node over the rail NIC (the RDMA leg); there, GPU i forwards it over NVLink
// to every GPU of its node holding one of the token's experts (the NVLink leg). Tokens for the
// sender's own node take only the NVLink leg. The combine runs the legs backwards.
//
// How the kernel is modelled:
//  - SMs: the kernel runs sms / 2 channels, each on two SMs: one sends over RDMA (and receives
//    from NVLink), one forwards from the RDMA buffer to the NVLink peers with warp-wide loads and
//    stores. So a GPU forwards at most (sms / 2) x sm_nvlink_Bps: its NVLink leg runs at its
//    NVLink bandwidth x share, share = min(1, that / NVLink bandwidth) (the NVLink sends' wire bytes
//    are scaled by 1 / share, so a GPU's NVLink intake is held alike: its receiving SMs copy out of
//    the NVLink buffer at the same rate, which makes a hot expert's GPU SM-bound under skewed
//    routing). sm_nvlink_Bps is fitted once, on DeepEP's intra-node dispatch on
//    H800 (README: 153 GB/s at 24 SMs, counting the tokens a rank receives, its own 1/8 included):
//    153 x 7/8 / 12 = 11.2 GB/s of NVLink sends per channel. That row calibrates; the inter-node
//    rows validate (test_deepep). It is DeepEP V1's kernel on SM90 and is used on every GPU (no
//    other GPU has a published DeepEP figure). At DeepSeek-V3's 20 SMs a GPU forwards 112 GB/s,
//    below an H800's NVLink (164 GB/s calibrated): enough for EP 64, whose NICs bind first.
//    DeepEP V2 (2026) sizes its SMs with 50 GB/s written per SM and needs up to 4x fewer SMs: a
//    different kernel, not modelled.
//  - Pipeline: the RDMA receive buffer holds a few chunks per channel, so the legs run at once and
//    the RDMA leg never runs ahead of forwarding: timed alone, the kernel takes the slower leg's
//    time plus one chunk per channel of the other (the second leg waits for the first's first
//    chunks, and the first leg's last chunks still cross the second): the NVLink leg pays
//    channels x rdma_chunk_tokens tokens at the NIC's rate, the RDMA leg channels x
//    nvl_chunk_tokens at the NVLink leg's rate, in both directions. Chunks are DeepEP's test
//    defaults (`tests/test_internode.py`: RDMA 16, NVLink 8 tokens).
//  - Not modelled: the notify kernel that exchanges counts before the dispatch (DeepEP's benchmark
//    times it apart, as we leave it out); the copies of the other SM of a channel (into the RDMA
//    send buffer, out of the NVLink receive buffer) and the forwarder's copy to itself, which the
//    fitted rate covers only as they were in the intra-node kernel; HBM traffic.
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/point_to_point.hpp"

namespace clustersim {

struct DeepEpKernel {
  int sms = 20;                  // DeepSeek-V3 section 3.2.2; DeepEP's Buffer.num_sms default
  double sm_nvlink_Bps = 153e9 * 7 / 8 / 12;  // NVLink sends per forwarding SM (fitted, above)
  int rdma_chunk_tokens = 16;    // DeepEP tests/test_internode.py Config(num_sms, 8, ..., 16, ...)
  int nvl_chunk_tokens = 8;
  double token_bytes = 0;        // bytes of one token on the wire, for the chunks; 0: no fill term
  int channels() const { return sms / 2; }
};

/// The share of `gpu`'s NVLink bandwidth its forwarding SMs can drive, in (0, 1].
double deepep_nvlink_share(const Cluster& cluster, int gpu, const DeepEpKernel& kernel);

/// One dispatch or combine (its network_bytes and nvlink_bytes reversed) as flows: network_bytes[i][node] from
/// gpus[i] to GPU i's peer on that node, nvlink_bytes[i][j] from gpus[i] to gpus[j] of its node (its
/// own tokens and those it forwards), as lower_node_limited_all_to_all, with DeepEP's SM share and
/// chunk pipeline. No NCCL protocol: the links' latency only.
FlowGraph lower_deepep(const Router& router, const std::vector<int>& gpus, int per_node,
                       const std::vector<std::vector<double>>& network_bytes,
                       const std::vector<std::vector<double>>& nvlink_bytes, const DeepEpKernel& kernel,
                       AllToAllFlows flows = AllToAllFlows::per_link);

/// DeepEP's benchmark routing (tests/test_internode.py): 256 experts (rounded down to a multiple of
/// the ranks), top-8, and each token limited to its top min(nodes, 4) nodes. Its expected counts,
/// for ranks filling whole nodes of per_node (or one node with fewer).
struct DeepEpRouting {
  int experts = 256;
  int top_k = 8;
  int max_nodes = 4;
};
/// Chance that a token of any rank needs a given node / a given rank: the nodes are picked
/// uniformly, then top_k distinct experts among theirs.
double deepep_node_hit(int ranks, int per_node, const DeepEpRouting& routing);
double deepep_rank_hit(int ranks, int per_node, const DeepEpRouting& routing);

/// What DeepEP's benchmark divides by the kernel's time (tests/test_internode.py, local rank 0):
/// RDMA bytes = (token, node) pairs over every node the token needs, its own node included, x
/// token bytes; NVLink bytes = the tokens the rank receives (from every rank, itself included) x
/// token bytes. For `send_bytes` of tokens per rank under DeepEpRouting. A combine counts the same.
struct DeepEpCountedBytes {
  double rdma_bytes = 0;
  double nvl_bytes = 0;
};
DeepEpCountedBytes deepep_counted_bytes(int ranks, int per_node, double send_bytes, const DeepEpRouting& routing);

/// DeepSeek-V3's dispatch token on the wire (FP8 hidden 7168 with a 4-byte scale per 128): the
/// token size `clustersim collective --algo deepep` chunks by.
inline constexpr double kDeepEpBenchmarkTokenBytes = 7168 + 7168 / 128 * 4;

}  // namespace clustersim
