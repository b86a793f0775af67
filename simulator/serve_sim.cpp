#include "simulator/serve_sim.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <queue>
#include <set>

#include "topologies/cluster.hpp"
#include "topologies/user_error.hpp"
#include "workloads/serving/comm_cost.hpp"
#include "workloads/serving/iteration_cost.hpp"
#include "workloads/serving/kv_transfers.hpp"
#include "workloads/serving/request_stream.hpp"

namespace clustersim {

namespace {

// kv_wake: the next KV shard's bytes are through at the rates of KvTransfers version `index`.
enum class EventKind { iteration_end, kv_arrival, kv_wake };

struct Event {
  Seconds time_s;
  long seq;
  EventKind kind;
  long index;  // replica, request, or KvTransfers version
  int lane;    // iteration_end: which of the replica's batches in flight
  bool operator>(const Event& o) const { return time_s != o.time_s ? time_s > o.time_s : seq > o.seq; }
};

/// What one GPU model of the fleet costs: its iteration times and its replicas' memory.
struct ModelCosts {
  std::unique_ptr<ServingSpec> spec;  // the run's, computing on this model
  std::unique_ptr<IterationCost> cost, draft;
  ReplicaMemory memory;
};

/// One of a replica's batches in flight: its own scheduler over its share of the KV blocks.
struct Lane {
  ReplicaScheduler scheduler;
  ServeBatch plan;
  bool busy = false;
  Seconds started_s = 0;
  std::vector<std::pair<Seconds, Seconds>> stages;  // the batch's time on each pipeline stage (pp > 1)
};

/// A replica runs its lanes' batches through its pipeline stages, each stage one batch at a time in
/// the order they started (a flow shop: a batch enters stage j once it left stage j - 1 and the batch
/// before it left stage j). With one stage or one lane, a batch's iteration is its forward alone.
/// Under data-parallel attention the lanes are the attention ranks, each on its own GPUs with its
/// own KV cache, and they step together (lockstep): one iteration runs every rank's batch.
struct Replica {
  std::vector<Lane> lanes;
  std::vector<Seconds> stage_free_s;  // when each stage is done with the batches already in it
  std::vector<int> stage_gpus;        // each stage's first GPU (the replica's first GPU first)
  int model = 0;  // into the loop's ModelCosts
  SplitMix64 rng;
  bool busy = false;                        // lockstep: a step is running
  std::vector<std::vector<int>> lane_gpus = {};  // lockstep: each attention rank's GPUs (empty: not lockstep)
  std::vector<long> lane_inbound = {};           // lockstep: KV caches on their way to each rank

  bool lockstep() const { return !lane_gpus.empty(); }
  long outstanding() const { return sum([](const ReplicaScheduler& s) { return s.outstanding(); }); }
  long free_blocks() const { return sum([](const ReplicaScheduler& s) { return s.free_blocks(); }); }
  long total_blocks() const { return sum([](const ReplicaScheduler& s) { return s.total_blocks(); }); }
  bool has_prefix(int prefix_id) const {
    return std::any_of(lanes.begin(), lanes.end(), [&](const Lane& l) { return l.scheduler.has_prefix(prefix_id); });
  }
  template <class F>
  long sum(F f) const {
    long n = 0;
    for (const Lane& l : lanes) n += f(l.scheduler);
    return n;
  }
};

/// Every request must fit a lane's KV blocks alone, or it would wait forever.
void check_fits(const ServingSpec& s, const std::vector<Request>& requests, const ReplicaMemory& mem) {
  const int lanes = s.scheduler.batches_in_flight;
  const long lane_blocks = mem.blocks / lanes;
  const long extra = s.speculative.tokens + 1;
  for (const Request& r : requests) {
    const long tokens = r.prompt_tokens + r.output_tokens + extra;
    const long blocks = (tokens + s.kv.block_tokens - 1) / s.kv.block_tokens;
    if (blocks <= lane_blocks) continue;
    const std::string cache = lanes == 1 ? "a replica's KV cache" : fmt::format("a batch's share ({} in flight) of a replica's KV cache", lanes);
    const std::string expected =
        fmt::format("expected every request to fit {} of {} blocks ({} tokens): request {} needs {} "
                    "blocks for {} prompt and {} output tokens",
                    cache, lane_blocks, lane_blocks * s.kv.block_tokens, r.id, blocks, r.prompt_tokens, r.output_tokens);
    if (r.line > 0) throw UserError(s.requests.trace_file, r.line, "prompt_tokens", expected);
    throw UserError(s.file, s.requests.line, "serving.requests.prompt_tokens", expected);
  }
}

class Loop {
 public:
  Loop(const ServingSpec& s, TraceSink* trace)
      : s_(s), trace_(trace), cluster_(build_cluster(s.cluster)), comm_(cluster_), kv_(cluster_, comm_) {
    std::vector<int> replica_model;
    for (int k = 0; k < s.replicas; ++k) replica_model.push_back(model_of(k));
    r_.memory = models_[std::size_t(replica_model.front())].memory;
    const std::vector<Request> stream = request_stream(s.requests);
    for (const ModelCosts& m : models_) check_fits(s, stream, m.memory);
    const DisaggregationSpec& d = s.disaggregation;
    r_.replicas = s.replicas;
    // Swapped blocks: each GPU's shard over its own PCIe link to the host, all GPUs at once.
    const long swap_blocks = r_.memory.block_bytes > 0 ? long(s.kv.swap_space_GiB * 1024 * 1024 * 1024 / double(r_.memory.block_bytes)) : 0;
    const LinkSpec& pcie = s.cluster.node.pcie_link;
    swap_Bps_ = pcie.bandwidth_Bps * s.cluster.efficiency(pcie.type);
    const int pp = s.parallel.pp, ranks = s.parallel.dp_attention, tp = s.parallel.tp;
    const bool lockstep = ranks > 1;
    const int lanes = lockstep ? ranks : s.scheduler.batches_in_flight;
    // The blocks split evenly between pipelined lanes (vLLM divides them between its virtual
    // engines); an attention rank has its own GPUs' blocks.
    const int share = lockstep ? 1 : lanes;
    for (int k = 0; k < s.replicas; ++k) {
      const ReplicaRole role = !d.enabled ? ReplicaRole::both : k < d.prefill_replicas ? ReplicaRole::prefill : ReplicaRole::decode;
      const ReplicaMemory& mem = models_[std::size_t(replica_model[std::size_t(k)])].memory;
      const std::vector<int>& gpus = s.placement[std::size_t(k)].gpus;
      Replica rep{{}, std::vector<Seconds>(std::size_t(pp), 0), {}, replica_model[std::size_t(k)],
                  SplitMix64(s.requests.seed * 1000003 + std::uint64_t(k) + 1)};
      for (int l = 0; l < lanes; ++l)
        rep.lanes.push_back({ReplicaScheduler(s.scheduler, mem.blocks / share, s.kv.block_tokens, s.speculative.tokens, role,
                                              swap_blocks / share, s.kv.prefix_caching),
                             {}, false, 0, std::vector<std::pair<Seconds, Seconds>>(std::size_t(pp))});
      for (int j = 0; j < pp; ++j) rep.stage_gpus.push_back(gpus[std::size_t(j * tp)]);
      if (lockstep) {
        for (int l = 0; l < lanes; ++l) rep.lane_gpus.emplace_back(gpus.begin() + l * tp, gpus.begin() + (l + 1) * tp);
        rep.lane_inbound.assign(std::size_t(lanes), 0);
      }
      replicas_.push_back(std::move(rep));
      if (lockstep) {
        for (int l = 0; l < lanes; ++l) {
          const int gpu = gpus[std::size_t(l * tp)];
          if (trace_ && trace_->wants(gpu, true)) trace_->place(gpu, l, k);
        }
        continue;
      }
      for (int j = 0; j < pp; ++j) {
        const int gpu = replicas_.back().stage_gpus[std::size_t(j)];
        if (trace_ && trace_->wants(gpu, true) && (j == 0 || lanes > 1)) trace_->place(gpu, j, k);
      }
    }
    front_end_ = d.enabled ? d.prefill_replicas : s.replicas;
    inbound_.assign(std::size_t(s.replicas), 0);
    for (int k = 0; k < s.replicas; ++k) note_load(k);
    r_.requests.reserve(stream.size());
    for (const Request& q : stream) {
      RequestState st;
      st.request = q;
      st.target_tokens = q.prompt_tokens;
      r_.requests.push_back(st);
    }
    if (d.enabled) {
      kv_started_s_.assign(r_.requests.size(), 0);
      kv_lane_.assign(r_.requests.size(), -1);
    }
    interval_s_ = s.series_interval_s;
    if (interval_s_ <= 0) {
      const Seconds last = stream.empty() ? 1 : stream.back().arrival_s;
      interval_s_ = std::max(1e-3, last / 100);
    }
  }

  ServeResult run() {
    std::size_t next = 0;
    const std::size_t n = r_.requests.size();
    while (next < n || !events_.empty()) {
      // A wake-up for rates that have changed since is dropped before it moves the clock.
      while (!events_.empty() && events_.top().kind == EventKind::kv_wake && events_.top().index != kv_.version()) events_.pop();
      if (next >= n && events_.empty()) break;
      const bool arrival = next < n && (events_.empty() || r_.requests[next].request.arrival_s < events_.top().time_s);
      const Seconds now = arrival ? r_.requests[next].request.arrival_s : events_.top().time_s;
      sample_until(now);
      if (arrival) {
        const long id = long(next++);
        const int k = route(0, front_end_, r_.requests[next - 1].request.prefix_id);
        r_.requests[std::size_t(id)].replica = k;
        start_if_idle(k, enqueue(k, id), now);
        continue;
      }
      const Event e = events_.top();
      events_.pop();
      if (e.kind == EventKind::kv_wake) {
        for (const auto& [id, lands_s] : kv_.advance(now)) {
          events_.push({lands_s, seq_++, EventKind::kv_arrival, id, 0});
          r_.kv_transfer_s_sum += lands_s - kv_started_s_[std::size_t(id)];
          ++r_.kv_transfers;
        }
        wake_kv();
      } else if (e.kind == EventKind::kv_arrival) {
        const int k = r_.requests[std::size_t(e.index)].replica;
        add_inbound(k, -1);
        const int lane = kv_lane_[std::size_t(e.index)];
        if (lane >= 0) --replicas_[std::size_t(k)].lane_inbound[std::size_t(lane)];
        start_if_idle(k, enqueue(k, e.index, lane), now);
      } else {
        finish(int(e.index), e.lane, now);
      }
      r_.end_s = now;
    }
    for (const Replica& rep : replicas_)
      for (const Lane& l : rep.lanes) {
        r_.preemptions += l.scheduler.preemptions();
        r_.swaps += l.scheduler.swaps();
        r_.prefix_hit_tokens += l.scheduler.prefix_hit_tokens();
        r_.prefill_tokens += l.scheduler.prefill_tokens();
        r_.prefix_evictions += l.scheduler.prefix_evictions();
      }
    for (const RequestState& q : r_.requests)  // our bug, never the user's: a scheduler that stalled
      if (!q.finished()) throw std::logic_error(fmt::format("serve: request {} never finished (a replica's scheduler stalled)", q.request.id));
    sample_until(r_.end_s);
    return std::move(r_);
  }

 private:
  /// Replica k's GPU model, as an index into models_, whose costs are built at the model's first
  /// replica (its GPUs' paths time the tensor-parallel and pipeline traffic).
  int model_of(int k) {
    const ReplicaPlacement& p = s_.placement[std::size_t(k)];
    for (std::size_t i = 0; i < models_.size(); ++i)
      if (models_[i].spec->gpu.name == p.gpu) return int(i);
    ModelCosts m;
    m.spec = std::make_unique<ServingSpec>(s_.on_replica_gpu(k));
    m.cost = std::make_unique<IterationCost>(*m.spec, m.spec->model, comm_, p.gpus);
    if (s_.speculative.method == SpeculativeMethod::draft)
      m.draft = std::make_unique<IterationCost>(*m.spec, *m.spec->speculative.draft_model, comm_, p.gpus);
    m.memory = plan_replica_memory(*m.spec);
    r_.memory_by_gpu.emplace_back(p.gpu, m.memory);
    models_.push_back(std::move(m));
    return int(models_.size() - 1);
  }

  /// The replica in [from, to) the router picks.
  int route(int from, int to, int prefix_id) {
    const RouterKind kind = s_.router;
    if (kind == RouterKind::round_robin) {
      int& next = from == 0 ? rr_front_ : rr_back_;
      const int k = from + next;
      next = (next + 1) % (to - from);
      return k;
    }
    if (kind == RouterKind::least_loaded) return load_[from == 0 ? 0 : 1].begin()->second;
    // kv_aware: a replica holding the request's prefix in its cache first, then the most free
    // blocks; free blocks change every iteration, so a scan (O(replicas) an arrival).
    const auto cached = [&](int k) { return prefix_id >= 0 && replicas_[std::size_t(k)].has_prefix(prefix_id); };
    int best = from;
    for (int k = from + 1; k < to; ++k) {
      const Replica& a = replicas_[std::size_t(k)];
      const Replica& b = replicas_[std::size_t(best)];
      if (cached(k) != cached(best)) {
        if (cached(k)) best = k;
        continue;
      }
      if (a.free_blocks() != b.free_blocks() ? a.free_blocks() > b.free_blocks() : load(k) < load(best)) best = k;
    }
    return best;
  }

  /// Replica k's lane with the fewest requests (vLLM's choice between its virtual engines, and
  /// between data-parallel attention ranks, counting the KV caches on their way to a rank), the
  /// first of those tied.
  int least_loaded_lane(int k) const {
    const Replica& rep = replicas_[std::size_t(k)];
    const auto load = [&](int l) {
      return rep.lanes[std::size_t(l)].scheduler.outstanding() + (rep.lane_inbound.empty() ? 0 : rep.lane_inbound[std::size_t(l)]);
    };
    int lane = 0;
    for (int l = 1; l < int(rep.lanes.size()); ++l)
      if (load(l) < load(lane)) lane = l;
    return lane;
  }
  /// Hands a request to replica k's `lane` (-1: the least loaded); returns the lane. least_loaded's
  /// index: (outstanding requests, replica) per pool, kept as they change.
  int enqueue(int k, long id, int lane = -1) {
    Replica& rep = replicas_[std::size_t(k)];
    if (lane < 0) lane = least_loaded_lane(k);
    forget_load(k);
    rep.lanes[std::size_t(lane)].scheduler.enqueue(id);
    note_load(k);
    return lane;
  }
  void start_if_idle(int k, int lane, Seconds now) {
    const Replica& rep = replicas_[std::size_t(k)];
    if (rep.lockstep()) {
      if (!rep.busy) step(k, now);
    } else if (!rep.lanes[std::size_t(lane)].busy) {
      start(k, lane, now);
    }
  }
  void forget_load(int k) { load_[k < front_end_ ? 0 : 1].erase({load(k), k}); }
  void note_load(int k) { load_[k < front_end_ ? 0 : 1].insert({load(k), k}); }
  /// A replica's requests, queued or running, and those whose KV cache is on its way to it: a
  /// router that counted only the first would send a whole burst of prefills to one decode replica.
  long load(int k) const { return replicas_[std::size_t(k)].outstanding() + inbound_[std::size_t(k)]; }
  void add_inbound(int k, long delta) {
    forget_load(k);
    inbound_[std::size_t(k)] += delta;
    note_load(k);
  }

  void start(int k, int lane, Seconds now) {
    Replica& rep = replicas_[std::size_t(k)];
    Lane& ln = rep.lanes[std::size_t(lane)];
    ln.plan = ln.scheduler.plan(r_.requests);
    ln.busy = !ln.plan.empty() || ln.plan.swap_out_tokens + ln.plan.swap_in_tokens > 0;
    if (!ln.busy) return;
    const BatchShape& shape = ln.plan.shape;
    ModelCosts& m = models_[std::size_t(rep.model)];
    const IterationTime it = shape.tokens() > 0 ? m.cost->time(shape) : IterationTime{};
    const Seconds before = before_forward_s(m, ln.plan);
    ln.started_s = now;
    ++r_.iterations;
    r_.batch_requests_sum += double(ln.plan.items.size());
    r_.batch_tokens_sum += double(shape.tokens());
    r_.max_batch_requests = std::max(r_.max_batch_requests, long(ln.plan.items.size()));
    const Seconds end = rep.stage_free_s.size() == 1 ? now + (it.total_s + before) : through_stages(rep, ln, it, now + before);
    events_.push({end, seq_++, EventKind::iteration_end, k, lane});
  }

  /// One step of a lockstep replica: every attention rank plans its batch, and the step takes the
  /// slowest rank's own work plus the experts over all their tokens (IterationCost::time_ranks),
  /// after the longest of the ranks' swap copies and speculative proposers (each on its own GPUs).
  void step(int k, Seconds now) {
    Replica& rep = replicas_[std::size_t(k)];
    ModelCosts& m = models_[std::size_t(rep.model)];
    std::vector<BatchShape> shapes;
    Seconds before = 0;
    long requests = 0, tokens = 0;
    for (Lane& ln : rep.lanes) {
      ln.plan = ln.scheduler.plan(r_.requests);
      ln.busy = !ln.plan.empty() || ln.plan.swap_out_tokens + ln.plan.swap_in_tokens > 0;
      ln.started_s = now;
      shapes.push_back(ln.plan.shape);
      before = std::max(before, before_forward_s(m, ln.plan));
      requests += long(ln.plan.items.size());
      tokens += ln.plan.shape.tokens();
    }
    rep.busy = std::any_of(rep.lanes.begin(), rep.lanes.end(), [](const Lane& l) { return l.busy; });
    if (!rep.busy) return;
    const IterationTime it = tokens > 0 ? m.cost->time_ranks(shapes) : IterationTime{};
    ++r_.iterations;
    r_.batch_requests_sum += double(requests);
    r_.batch_tokens_sum += double(tokens);
    r_.max_batch_requests = std::max(r_.max_batch_requests, requests);
    events_.push({now + before + it.total_s, seq_++, EventKind::iteration_end, k, -1});
  }

  /// Before a batch's forward: its swap copies over PCIe and the speculative proposer.
  Seconds before_forward_s(ModelCosts& m, const ServeBatch& plan) {
    Seconds before = 0;
    if (const long swapped = plan.swap_out_tokens + plan.swap_in_tokens; swapped > 0) {
      const Seconds swap = double(swapped) * r_.memory.kv_bytes_per_token / swap_Bps_;
      before += swap;
      r_.swap_s_sum += swap;
      r_.swapped_tokens += swapped;
    }
    if (plan.shape.decode_requests > 0 && s_.speculative.method != SpeculativeMethod::none) before += proposer_s(m, plan.shape);
    return before;
  }

  /// A batch entering the pipeline at `enter`: each stage takes 1/pp of the layers' work (the
  /// layers are split evenly, their TP and PP traffic with them), the last the output layer too,
  /// each once the stage is free. The host's time follows the last stage, or runs beside the stages.
  Seconds through_stages(Replica& rep, Lane& ln, const IterationTime& it, Seconds enter) {
    const std::size_t pp = rep.stage_free_s.size();
    const Seconds layers = (it.linear_s + it.attention_s + it.communication_s) / double(pp);
    Seconds at = enter;
    for (std::size_t j = 0; j < pp; ++j) {
      const Seconds from = std::max(at, rep.stage_free_s[j]);
      at = from + layers + (j + 1 == pp ? it.logits_s : 0);
      rep.stage_free_s[j] = at;
      ln.stages[j] = {from, at};
    }
    return s_.host.overlapped ? std::max(at, enter + it.host_s) : at + it.host_s;
  }

  /// The speculative proposer's time before the verifying forward (see the header).
  Seconds proposer_s(ModelCosts& m, const BatchShape& shape) {
    BatchShape d;
    d.decode_requests = shape.decode_requests;
    d.decode_context_tokens = shape.decode_context_tokens - double(shape.decode_requests) * (shape.decode_query_tokens - 1);
    d.decode_query_tokens = 1;
    d.sampled_rows = shape.decode_requests;
    const int k = s_.speculative.tokens;
    if (m.draft) return k * m.draft->time(d).total_s;
    const IterationTime one = m.cost->time(d);
    return k * ((one.linear_s + one.attention_s + one.communication_s) / m.cost->layers() + one.logits_s);
  }

  /// A batch's end (lane -1: a lockstep replica's step, every rank's batch).
  void finish(int k, int lane, Seconds now) {
    Replica& rep = replicas_[std::size_t(k)];
    if (lane >= 0) {
      Lane& ln = rep.lanes[std::size_t(lane)];
      complete(k, lane, now);
      ln.busy = false;
      if (!ln.scheduler.idle()) start(k, lane, now);
      return;
    }
    for (int l = 0; l < int(rep.lanes.size()); ++l)
      if (rep.lanes[std::size_t(l)].busy) complete(k, l, now);
    rep.busy = false;
    for (Lane& ln : rep.lanes) ln.busy = false;
    if (std::any_of(rep.lanes.begin(), rep.lanes.end(), [](const Lane& l) { return !l.scheduler.idle(); })) step(k, now);
  }

  /// Hands a finished batch's tokens to its requests; a prompt the prefill pool finished starts its
  /// KV cache's move to a decode replica.
  void complete(int k, int lane, Seconds now) {
    Replica& rep = replicas_[std::size_t(k)];
    Lane& ln = rep.lanes[std::size_t(lane)];
    const ServeBatch plan = std::move(ln.plan);
    if (trace_) trace_iteration(rep, ln, plan, now, lane);
    r_.kv_utilization_time_integral +=
        (now - ln.started_s) * double(ln.scheduler.total_blocks() - ln.scheduler.free_blocks()) / double(rep.total_blocks());
    const int spec = s_.speculative.tokens;
    auto accepted = [&](long) -> long {
      long a = 0;
      while (a < spec && rep.rng.uniform() < s_.speculative.acceptance(a)) ++a;
      ++r_.decode_steps;
      r_.accepted_tokens_sum += double(a + 1);
      return a + 1;
    };
    done_.clear();
    forget_load(k);
    ln.scheduler.complete(plan, now, r_.requests, accepted, done_);
    note_load(k);
    bool started_kv = false;
    for (long id : done_) {
      RequestState& r = r_.requests[std::size_t(id)];
      if (r.finished()) continue;
      // Prefilled on the prefill pool: its KV cache moves to a decode replica (under data-parallel
      // attention, between the two attention ranks' GPUs; the decode rank is chosen now).
      const int to = route(front_end_, s_.replicas, -1);
      const double bytes = double(r.computed_tokens) * r_.memory.kv_bytes_per_token;
      r.replica = to;
      add_inbound(to, +1);
      kv_started_s_[std::size_t(id)] = now;
      Replica& dst = replicas_[std::size_t(to)];
      if (dst.lockstep()) {
        kv_lane_[std::size_t(id)] = least_loaded_lane(to);
        ++dst.lane_inbound[std::size_t(kv_lane_[std::size_t(id)])];
      }
      const std::vector<int>& from_gpus = rep.lockstep() ? rep.lane_gpus[std::size_t(lane)] : s_.placement[std::size_t(k)].gpus;
      const std::vector<int>& to_gpus = dst.lockstep() ? dst.lane_gpus[std::size_t(kv_lane_[std::size_t(id)])] : s_.placement[std::size_t(to)].gpus;
      r_.kv_transfer_alone_s_sum += kv_.start(now, id, from_gpus, to_gpus, bytes);
      started_kv = true;
    }
    if (started_kv) wake_kv();
  }

  /// A wake-up at the next KV shard's end, for the present rates.
  void wake_kv() {
    if (kv_.next_end_s() < std::numeric_limits<double>::infinity())
      events_.push({kv_.next_end_s(), seq_++, EventKind::kv_wake, kv_.version(), 0});
  }

  /// One slice per iteration on the replica's first GPU; with batches pipelined, one per stage the
  /// batch ran on, on that stage's first GPU.
  void trace_iteration(const Replica& rep, const Lane& ln, const ServeBatch& plan, Seconds now, int lane) {
    const bool pipelined = rep.lanes.size() > 1 && !rep.lockstep();
    const int first_gpu = rep.lockstep() ? rep.lane_gpus[std::size_t(lane)].front() : rep.stage_gpus.front();
    if (!pipelined && !trace_->wants(first_gpu, true)) return;
    long prefill = 0, decode = 0;
    for (const ScheduledItem& it : plan.items) (it.decode ? decode : prefill) += it.tokens;
    label_ = fmt::format("{} prefill tokens in {} chunks, {} decode requests", prefill, plan.shape.chunks.size(),
                         plan.shape.decode_requests);
    TraceRecord rec;
    rec.name = prefill > 0 && decode > 0 ? "mixed" : prefill > 0 ? "prefill" : "decode";
    rec.cat = "serve";
    rec.label = label_;
    if (!pipelined) {
      rec.start_s = ln.started_s;
      rec.end_s = now;
      trace_->event(first_gpu, -1, rec);
      return;
    }
    for (std::size_t j = 0; j < rep.stage_gpus.size(); ++j) {
      if (!trace_->wants(rep.stage_gpus[j], true)) continue;
      rec.start_s = ln.stages[j].first;
      rec.end_s = ln.stages[j].second;
      trace_->event(rep.stage_gpus[j], -1, rec);
    }
  }

  void sample_until(Seconds now) {
    while (next_sample_s_ <= now) {
      ServeSample x;
      x.time_s = next_sample_s_;
      double used = 0, total = 0;
      for (const Replica& rep : replicas_)
        for (const Lane& l : rep.lanes) {
          used += double(l.scheduler.total_blocks() - l.scheduler.free_blocks());
          total += double(l.scheduler.total_blocks());
          x.running += l.scheduler.running();
          x.waiting += l.scheduler.outstanding() - l.scheduler.running();
        }
      x.kv_utilization = total > 0 ? used / total : 0;
      r_.series.push_back(x);
      next_sample_s_ += interval_s_;
    }
  }

  const ServingSpec& s_;
  TraceSink* trace_;
  Cluster cluster_;
  ServingComm comm_;
  KvTransfers kv_;                     // KV caches in flight between the pools
  std::vector<Seconds> kv_started_s_;  // per request, when its KV cache left (disaggregated)
  std::vector<int> kv_lane_;           // per request, the decode attention rank it goes to (-1: any)
  std::vector<long> inbound_;          // per replica, KV caches on their way to it
  std::vector<ModelCosts> models_;
  std::vector<Replica> replicas_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  ServeResult r_;
  int front_end_ = 0, rr_front_ = 0, rr_back_ = 0;
  std::set<std::pair<long, int>> load_[2];  // front pool (all, or prefill), decode pool
  long seq_ = 0;
  BytesPerSecond swap_Bps_ = 1;
  Seconds interval_s_ = 1, next_sample_s_ = 0;
  std::vector<long> done_;
  std::string label_;
};

}  // namespace

ServeResult simulate_serving(const ServingSpec& s, TraceSink* trace) { return Loop(s, trace).run(); }

}  // namespace clustersim
