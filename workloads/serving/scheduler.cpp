#include "workloads/serving/scheduler.hpp"

#include <algorithm>

namespace clustersim {

ReplicaScheduler::ReplicaScheduler(const SchedulerSpec& spec, long blocks, int block_tokens, int speculative_tokens,
                                   ReplicaRole role)
    : spec_(spec), total_blocks_(blocks), free_blocks_(blocks), block_tokens_(block_tokens),
      query_tokens_(1 + speculative_tokens), role_(role) {}

void ReplicaScheduler::enqueue(long id) { waiting_.push_back(id); }

bool ReplicaScheduler::grow(RequestState& r, long tokens) {
  const long need = blocks_for(tokens) - r.blocks;
  if (need <= 0) return true;
  if (need > free_blocks_) return false;
  free_blocks_ -= need;
  r.blocks += need;
  return true;
}

void ReplicaScheduler::release(RequestState& r) {
  free_blocks_ += r.blocks;
  r.blocks = 0;
}

void ReplicaScheduler::preempt_last(std::vector<RequestState>& requests) {
  const long id = running_.back();
  running_.pop_back();
  RequestState& r = requests[static_cast<std::size_t>(id)];
  release(r);
  r.computed_tokens = 0;
  r.target_tokens = r.request.prompt_tokens + r.generated;
  ++r.preemptions;
  ++preemptions_;
  waiting_.push_front(id);
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
      preempt_last(requests);
      if (self) return;
    }
    add_decode(requests, plan, id, query);
    budget -= query;
  }
  // A decode pool admits requests whose KV cache arrived from the prefill pool.
  while (!waiting_.empty() && budget >= query && long(plan.items.size()) < spec_.max_batch_requests) {
    RequestState& r = requests[static_cast<std::size_t>(waiting_.front())];
    if (r.prefilling() || !grow(r, r.computed_tokens + query)) return;
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
      preempt_last(requests);
      if (self) return;
      if (schedule(id, r)) break;
    }
  }
  while (!waiting_.empty()) {
    const long id = waiting_.front();
    RequestState& r = requests[static_cast<std::size_t>(id)];
    if (!r.prefilling() || !schedule(id, r)) return;
    waiting_.pop_front();
    running_.push_back(id);
  }
}

ServeBatch ReplicaScheduler::plan(std::vector<RequestState>& requests) {
  ServeBatch plan;
  plan.shape.decode_query_tokens = query_tokens_;
  long budget = spec_.max_batch_tokens;
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
