#include "workloads/serving/scheduler.hpp"

#include <algorithm>

namespace clustersim {

ReplicaScheduler::ReplicaScheduler(const SchedulerSpec& spec, long blocks, int block_tokens, int speculative_tokens,
                                   ReplicaRole role, long swap_blocks, bool prefix_caching)
    : spec_(spec), total_blocks_(blocks), free_blocks_(blocks), block_tokens_(block_tokens),
      query_tokens_(1 + speculative_tokens), role_(role), swap_free_blocks_(swap_blocks), prefix_caching_(prefix_caching) {}

void ReplicaScheduler::enqueue(long id) { waiting_.push_back(id); }

bool ReplicaScheduler::grow(RequestState& r, long tokens) {
  const long need = blocks_for(tokens) - r.blocks - r.shared_blocks;
  if (need <= 0) return true;
  if (need > free_blocks_ && !evict_for(need)) return false;
  free_blocks_ -= need;
  r.blocks += need;
  return true;
}

void ReplicaScheduler::release(RequestState& r) {
  free_blocks_ += r.blocks;
  r.blocks = 0;
  if (r.shared_blocks > 0) {
    --prefix_cache_[r.request.prefix_id].users;
    r.shared_blocks = 0;
  }
}

void ReplicaScheduler::attach_prefix(RequestState& r) {
  if (!prefix_caching_ || r.request.prefix_id < 0 || r.computed_tokens > 0 || r.shared_blocks > 0) return;
  const auto it = prefix_cache_.find(r.request.prefix_id);
  if (it == prefix_cache_.end()) return;
  // The last prompt token is always computed: its logits sample the first output token.
  const long blocks = std::min(it->second.blocks, (r.target_tokens - 1) / block_tokens_);
  if (blocks <= 0) return;
  ++it->second.users;
  it->second.last_used = ++prefix_clock_;
  r.shared_blocks = blocks;
  r.computed_tokens = blocks * block_tokens_;
  prefix_hit_tokens_ += r.computed_tokens;
}

void ReplicaScheduler::cache_prefix(RequestState& r) {
  const long blocks = r.request.prefix_tokens / block_tokens_;
  if (r.request.prefix_id < 0 || blocks == 0 || r.shared_blocks > 0 || r.computed_tokens < blocks * block_tokens_ ||
      prefix_cache_.count(r.request.prefix_id))
    return;
  // Its first `blocks` blocks become the cache's; it keeps reading them as a user.
  prefix_cache_[r.request.prefix_id] = {blocks, 1, ++prefix_clock_};
  r.blocks -= blocks;
  r.shared_blocks = blocks;
}

bool ReplicaScheduler::evict_for(long blocks) {
  while (free_blocks_ < blocks) {
    auto lru = prefix_cache_.end();
    for (auto it = prefix_cache_.begin(); it != prefix_cache_.end(); ++it)
      if (it->second.users == 0 && (lru == prefix_cache_.end() || it->second.last_used < lru->second.last_used)) lru = it;
    if (lru == prefix_cache_.end()) return false;
    free_blocks_ += lru->second.blocks;
    prefix_cache_.erase(lru);
    ++prefix_evictions_;
  }
  return true;
}

void ReplicaScheduler::preempt_last(std::vector<RequestState>& requests, ServeBatch& plan) {
  const long id = running_.back();
  running_.pop_back();
  RequestState& r = requests[static_cast<std::size_t>(id)];
  // A swapped request takes all its KV cache to host memory, a shared prefix's blocks included (it
  // owns them all when it comes back).
  const long held = r.blocks + r.shared_blocks;
  if (spec_.preemption == PreemptionMode::swap && held > 0 && held <= swap_free_blocks_) {
    swap_free_blocks_ -= held;
    r.swapped_blocks = held;
    plan.swap_out_tokens += r.computed_tokens;
    ++swaps_;
    release(r);
  } else {
    release(r);
    r.computed_tokens = 0;
    r.target_tokens = r.request.prompt_tokens + r.generated;
  }
  ++r.preemptions;
  ++preemptions_;
  waiting_.push_front(id);
}

void ReplicaScheduler::swap_in_pass(std::vector<RequestState>& requests, ServeBatch& plan) {
  // Swapped requests wait at the head of the queue; each comes back once its blocks and its next
  // step's fit, so that it is not swapped out again in the iteration that brings it back.
  while (!waiting_.empty()) {
    const long id = waiting_.front();
    RequestState& r = requests[static_cast<std::size_t>(id)];
    if (r.swapped_blocks == 0) return;
    const long need = blocks_for(r.computed_tokens + query_tokens_);
    if (need > free_blocks_ && !evict_for(need)) return;
    swap_free_blocks_ += r.swapped_blocks;
    r.swapped_blocks = 0;
    grow(r, r.computed_tokens);
    plan.swap_in_tokens += r.computed_tokens;
    waiting_.pop_front();
    running_.push_back(id);
  }
}

void ReplicaScheduler::add_decode(std::vector<RequestState>& requests, ServeBatch& plan, long id, long query) {
  const RequestState& r = requests[static_cast<std::size_t>(id)];
  plan.items.push_back({id, query, true});
  plan.shape.decode_requests += 1;
  plan.shape.decode_context_tokens += double(r.computed_tokens + query);
  plan.shape.sampled_rows += query;
}

void ReplicaScheduler::decode_pass(std::vector<RequestState>& requests, ServeBatch& plan, long& budget) {
  const long query = query_tokens_;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    const long id = running_[i];
    RequestState& r = requests[static_cast<std::size_t>(id)];
    if (r.prefilling()) continue;
    if (budget < query || long(plan.items.size()) >= spec_.max_batch_requests) return;
    // Out of blocks: preempt the latest admitted until this one grows, or it is the latest itself.
    while (!grow(r, r.computed_tokens + query)) {
      const bool self = running_.back() == id;
      preempt_last(requests, plan);
      if (self) return;
    }
    add_decode(requests, plan, id, query);
    budget -= query;
  }
  // A decode pool admits requests whose KV cache arrived from the prefill pool.
  while (!waiting_.empty() && budget >= query && long(plan.items.size()) < spec_.max_batch_requests) {
    RequestState& r = requests[static_cast<std::size_t>(waiting_.front())];
    if (r.swapped_blocks > 0 || r.prefilling() || !grow(r, r.computed_tokens + query)) return;
    const long id = waiting_.front();
    waiting_.pop_front();
    running_.push_back(id);
    add_decode(requests, plan, id, query);
    budget -= query;
  }
}

void ReplicaScheduler::prefill_pass(std::vector<RequestState>& requests, ServeBatch& plan, long& budget) {
  auto chunk_of = [&](const RequestState& r) -> long {
    const long rest = r.target_tokens - r.computed_tokens;
    if (spec_.chunked_prefill) return std::min(rest, budget);
    if (rest <= budget) return rest;
    return plan.items.empty() && budget == spec_.max_batch_tokens ? rest : 0;  // too long for the budget: alone
  };
  auto schedule = [&](long id, RequestState& r) -> bool {
    if (budget <= 0 || long(plan.items.size()) >= spec_.max_batch_requests) return false;
    const long chunk = chunk_of(r);
    if (chunk <= 0 || !grow(r, r.computed_tokens + chunk)) return false;
    plan.items.push_back({id, chunk, false});
    plan.shape.chunks.push_back({r.computed_tokens, chunk});
    if (r.computed_tokens + chunk >= r.target_tokens) plan.shape.sampled_rows += 1;
    budget -= chunk;
    return true;
  };
  auto planned = [&](long id) {
    return std::any_of(plan.items.begin(), plan.items.end(), [id](const ScheduledItem& it) { return it.id == id; });
  };
  for (std::size_t i = 0; i < running_.size(); ++i) {
    const long id = running_[i];
    RequestState& r = requests[static_cast<std::size_t>(id)];
    if (!r.prefilling()) continue;
    if (schedule(id, r)) continue;
    if (budget <= 0 || long(plan.items.size()) >= spec_.max_batch_requests || !plan.empty()) return;
    // Partly prefilled requests holding every block, and nothing else to run: preempt the latest
    // admitted until this one grows (or is itself preempted), as a decode would.
    for (;;) {
      const bool self = running_.back() == id;
      if (planned(running_.back())) return;
      preempt_last(requests, plan);
      if (self) return;
      if (schedule(id, r)) break;
    }
  }
  while (!waiting_.empty()) {
    const long id = waiting_.front();
    RequestState& r = requests[static_cast<std::size_t>(id)];
    if (r.swapped_blocks > 0 || !r.prefilling()) return;
    attach_prefix(r);
    if (!schedule(id, r)) return;
    waiting_.pop_front();
    running_.push_back(id);
  }
}

ServeBatch ReplicaScheduler::plan(std::vector<RequestState>& requests) {
  ServeBatch plan;
  plan.shape.decode_query_tokens = query_tokens_;
  long budget = spec_.max_batch_tokens;
  swap_in_pass(requests, plan);
  if (role_ == ReplicaRole::prefill) {
    prefill_pass(requests, plan, budget);
  } else if (spec_.priority == SchedulePriority::decode) {
    decode_pass(requests, plan, budget);
    prefill_pass(requests, plan, budget);
  } else {
    prefill_pass(requests, plan, budget);
    if (plan.empty()) decode_pass(requests, plan, budget);
  }
  return plan;
}

}  // namespace clustersim
