#pragma once
// One replica's scheduler, as vLLM and Sarathi-Serve run it: iteration-level continuous batching
// (a request joins and leaves the batch between forwards, Orca), a token budget per iteration
// (max_batch_tokens) that prompts fill in chunks (Sarathi's chunked prefill) and at most
// max_batch_requests requests; paged KV blocks allocated as tokens are computed; when a running
// request needs a block and none is free, the most recently admitted running request is preempted:
// by recompute (vLLM's default) its blocks are freed and it waits at the head of the queue to
// prefill its prompt and the tokens it generated again; by swap (preemption: swap) its blocks are
// copied to host memory (the iteration carries the copy: ServeBatch::swap_out_tokens) and it waits
// at the head of the queue until its blocks fit again, when they are copied back (swap_in_tokens)
// before anything new is admitted, as vLLM runs its swapped queue first. A request whose blocks do
// not fit the swap space left is recomputed instead.
//  - priority decode (vLLM with chunked prefill, Sarathi's stall-free batching): every running
//    decode first, then prefill chunks fill what is left of the budget;
//  - priority prefill (vLLM without chunked prefill, Orca-like): an iteration with prefill work runs
//    only prefills; decodes run when no prompt can be admitted.
// Without chunked prefill a prompt runs whole; one longer than the budget runs alone.
// Prefix caching (kv_cache.prefix_caching, vLLM's automatic prefix caching at block granularity):
// once a request has computed the full blocks of its shared prefix, those blocks stay in the cache
// after it leaves; a later request with the same prefix starts its prefill after them (at most up to
// its last prompt token's block, which it computes to sample) and shares them, holding a
// reference. Blocks no running request references are evicted, least recently used first, when a
// request needs blocks and none are free, before anything is preempted.
// Requests live in the caller's table, indexed by id; the scheduler keeps their ids.
#include <deque>
#include <map>
#include <vector>

#include "workloads/serving/iteration_cost.hpp"
#include "workloads/serving/request_stream.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

struct RequestState {
  Request request;
  long target_tokens = 0;    // KV tokens its prefill must compute: the prompt, or prompt + generated after a preemption
  long computed_tokens = 0;  // KV tokens in the cache
  long generated = 0;        // output tokens emitted
  long blocks = 0;
  int replica = -1;
  int preemptions = 0;
  long swapped_blocks = 0;   // > 0 while its KV cache is in host memory
  long shared_blocks = 0;    // blocks of a cached prefix it reads, not its own
  Seconds first_token_s = -1, finish_s = -1, last_token_s = -1;
  bool prefilling() const { return computed_tokens < target_tokens; }
  bool finished() const { return generated >= request.output_tokens; }
};

/// What one iteration runs, and what it means for each request.
struct ScheduledItem {
  long id = 0;
  long tokens = 0;  // a prefill chunk's tokens; a decode step's query tokens
  bool decode = false;
};
struct ServeBatch {
  std::vector<ScheduledItem> items;
  BatchShape shape;
  long swap_out_tokens = 0, swap_in_tokens = 0;  // KV tokens copied to and from host memory before the forward
  bool empty() const { return items.empty(); }
};

/// What a replica does: everything, or one side of disaggregated serving.
enum class ReplicaRole { both, prefill, decode };

class ReplicaScheduler {
 public:
  /// `swap_blocks`: the blocks host memory holds (preemption: swap); `prefix_caching`: kv_cache's.
  ReplicaScheduler(const SchedulerSpec& spec, long blocks, int block_tokens, int speculative_tokens, ReplicaRole role,
                   long swap_blocks = 0, bool prefix_caching = false);
  /// A request routed here (new, or arriving from the prefill pool with its KV cache).
  void enqueue(long id);
  /// The next iteration's batch; allocates its blocks and preempts where blocks run out.
  ServeBatch plan(std::vector<RequestState>& requests);
  /// Applies an iteration that ended at `end_s`: `accepted(id)` gives a decode step's emitted
  /// tokens (1 without speculation). Fills `done` with the requests that leave this replica
  /// (finished, or under ReplicaRole::prefill prefilled).
  template <typename Accepted>
  void complete(const ServeBatch& plan, Seconds end_s, std::vector<RequestState>& requests, Accepted accepted,
                std::vector<long>& done);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  long free_blocks() const { return free_blocks_; }
  long total_blocks() const { return total_blocks_; }
  long outstanding() const { return long(waiting_.size() + running_.size()); }
  long running() const { return long(running_.size()); }
  long preemptions() const { return preemptions_; }
  long swaps() const { return swaps_; }
  long prefix_hit_tokens() const { return prefix_hit_tokens_; }
  long prefill_tokens() const { return prefill_tokens_; }    // prompt tokens computed (hits are not)
  long prefix_evictions() const { return prefix_evictions_; }
  bool has_prefix(int prefix_id) const { return prefix_cache_.count(prefix_id) > 0; }
  long blocks_for(long tokens) const { return (tokens + block_tokens_ - 1) / block_tokens_; }

 private:
  bool grow(RequestState& r, long tokens);  // blocks for `tokens` KV tokens, if free
  void release(RequestState& r);
  void preempt_last(std::vector<RequestState>& requests, ServeBatch& plan);
  void swap_in_pass(std::vector<RequestState>& requests, ServeBatch& plan);
  void attach_prefix(RequestState& r);   // a cached prefix's blocks, when it has one
  void cache_prefix(RequestState& r);    // its prefix's full blocks into the cache, once computed
  bool evict_for(long blocks);           // unreferenced cached prefixes, LRU, until `blocks` are free

  struct CachedPrefix {
    long blocks = 0, users = 0, last_used = 0;
  };
  void decode_pass(std::vector<RequestState>& requests, ServeBatch& plan, long& budget);
  void prefill_pass(std::vector<RequestState>& requests, ServeBatch& plan, long& budget);
  void add_decode(std::vector<RequestState>& requests, ServeBatch& plan, long id, long query);

  SchedulerSpec spec_;
  long total_blocks_ = 0, free_blocks_ = 0;
  int block_tokens_ = 16;
  int query_tokens_ = 1;
  ReplicaRole role_ = ReplicaRole::both;
  std::deque<long> waiting_;
  std::vector<long> running_;  // in admission order
  long preemptions_ = 0;
  long swap_free_blocks_ = 0, swaps_ = 0;
  bool prefix_caching_ = false;
  std::map<int, CachedPrefix> prefix_cache_;
  long prefix_clock_ = 0, prefix_hit_tokens_ = 0, prefill_tokens_ = 0, prefix_evictions_ = 0;
};

template <typename Accepted>
void ReplicaScheduler::complete(const ServeBatch& plan, Seconds end_s, std::vector<RequestState>& requests,
                                Accepted accepted, std::vector<long>& done) {
  for (const ScheduledItem& item : plan.items) {
    RequestState& r = requests[static_cast<std::size_t>(item.id)];
    long emitted = 0;
    if (item.decode) {
      emitted = std::min(accepted(item.id), r.request.output_tokens - r.generated);
      r.computed_tokens += emitted;
    } else {
      r.computed_tokens += item.tokens;
      prefill_tokens_ += item.tokens;
      if (prefix_caching_) cache_prefix(r);
      if (!r.prefilling()) emitted = 1;  // the prefill's last chunk samples the next token
    }
    if (emitted == 0) continue;
    if (r.first_token_s < 0) r.first_token_s = end_s;
    r.generated += emitted;
    r.last_token_s = end_s;
    const bool leaves = r.finished() || (role_ == ReplicaRole::prefill && !item.decode);
    if (!leaves) continue;
    if (r.finished()) r.finish_s = end_s;
    release(r);
    std::erase(running_, item.id);
    done.push_back(item.id);
  }
  // Blocks reserved for rejected speculative tokens go back.
  for (long id : running_) {
    RequestState& r = requests[static_cast<std::size_t>(id)];
    const long keep = blocks_for(r.computed_tokens) - r.shared_blocks;
    if (r.blocks > keep) {
      free_blocks_ += r.blocks - keep;
      r.blocks = keep;
    }
  }
}

}  // namespace clustersim
