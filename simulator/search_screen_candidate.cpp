// One candidate of the screen: a (virtual stages, schedule) under a resolved point of the space.
// Its schedule's rules, then its memory (weights and optimizer state first, which needs no replay,
// then with the activations the schedule's table holds), then its iteration time: the schedule's
// table at the pipeline's mean pass plus the bottleneck rank's extra work, pipeline transfers on
// the critical path, the data-parallel tail, ZeRO's gathers, the tied embedding's sync and the
// optimizer step.
#include <fmt/format.h>

#include <algorithm>

#include "simulator/pass_times.hpp"
#include "simulator/search_screen_state.hpp"
#include "workloads/model_math.hpp"

namespace clustersim {

std::variant<ScreenPrediction, Rejection> Screen::State::evaluate(const LayoutPoint& point,
                                                                  const std::vector<ScreenRemoval>& removed) {
  const Configuration& c = point.config;
  const ModelSpec& model = base.model;
  const RawCosts& raw = *point.raw;
  const Resolved& res = point.costs;
  const ParallelLayout& layout = point.layout;
  const std::vector<int>& dp_group = point.dp_group;
  const Seconds p2p_s = point.p2p_s;
  const int tp = c.tp, cp = c.cp, pp = c.pp, ep = c.ep, mb = c.microbatch, zero = c.zero_stage, v = c.virtual_stages;
  const Recompute rc = c.recompute;
  const Schedule* sched = c.schedule;
  const int m = point.microbatches;
  // Only a rule's first removal is kept as its example: the others need no message.
  auto wants = [&](int rule) { return removed[static_cast<std::size_t>(rule)].count == 0; };
  const int chunks_required = sched->chunks_required();
  const ScheduleShape shape{pp, m, v, 0};
  std::optional<std::string> why;
  if (chunks_required > 0 && v != chunks_required)
    why = fmt::format("{} runs {} chunks per rank, not {}", sched->name(), chunks_required, v);
  else if (!base.overlap_p2p_comm && !sched->runs_blocking_p2p())
    why = fmt::format("{} does not run the scenario's blocking p2p (overlap_p2p_comm: false)", sched->name());
  else if (double(pp) * v * m > double(1 << 22))
    why = "more than 2^22 pipeline steps";
  else if (auto na = sched->not_applicable(shape))
    why = fmt::format("{} cannot run pp {}, {} microbatches, v {}: {}", sched->name(), pp, m, v, *na);
  const int stages = why ? 1 : sched->model_stages(shape);
  if (!why && model.layers % stages != 0)
    why = fmt::format("{} model stages do not divide the {} layers", stages, model.layers);
  const ReplayShape* rs = nullptr;  // replayed only for what fits without activations
  if (why) {
    return Rejection{6, wants(6) ? c.text() + ": " + *why : std::string()};
  }
  // Each rank's passes for one microbatch (all its chunks) and its state.
  const int layers_per_stage = model.layers / stages;
  const bool splits = split[sched];
  Bytes memory = 0;
  double params_max = 0, rank0_chunk0_params = 0;
  Seconds rank0_chunk0_b = 0;
  std::optional<std::string> oom;
  // Interior ranks hold layers only; the first and the last add the embedding and head.
  auto rank_cost = [&](int r, double* params_out, double* chunk0_params, Seconds* chunk0_b, StageLoad* load) {
    PassCost pc;
    double params = 0, expert_params = 0;
    int layers = 0, moe_layers = 0;
    bool first = false, last = false;
    double emb_flight = -1, head_flight = -1;
    for (int ch = 0; ch < v; ++ch) {
      const int stage = sched->chunk_stage(shape, r, ch);
      PassCost chunk;
      double chunk_params = 0;
      for (int l = stage * layers_per_stage; l < (stage + 1) * layers_per_stage; ++l) {
        const bool moe_l = model.is_moe_layer(l);
        chunk += moe_l ? res.moe : res.dense;
        chunk_params += raw.dense_params_per_layer + (moe_l ? raw.expert_params_per_moe_layer : 0);
        expert_params += moe_l ? raw.expert_params_per_moe_layer : 0;
        ++layers;
        moe_layers += moe_l;
      }
      if (stage == 0) {
        chunk += res.first;
        chunk_params += raw.embedding_params;
        first = true;
        emb_flight = rs ? rs->held_by_chunk[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)] : 0;
      }
      if (stage == stages - 1) {
        chunk += res.last;
        if (!model.tied_embeddings || stages > 1) chunk_params += raw.embedding_params;
        last = true;
        head_flight = rs ? rs->held_by_chunk[static_cast<std::size_t>(r)][static_cast<std::size_t>(ch)] : 0;
      }
      if (ch == 0 && chunk0_params) *chunk0_params = chunk_params;
      if (ch == 0 && chunk0_b) *chunk0_b = splits ? chunk.bi + chunk.w : chunk.b;
      params += chunk_params;
      pc += chunk;
    }
    if (!point.rank_models.empty()) {
      // On a rank of another GPU model, compute runs at that model's speed (as apply_gpu_models
      // makes it in the engine); the slowest of the rank's GPUs paces it. Waits stay as they are.
      const int counts[4] = {layers - moe_layers, moe_layers, first ? 1 : 0, last ? 1 : 0};
      auto compute_on = [&](const std::string& name) {
        const std::array<Seconds, 4>& per = raw.compute_on.at(name);
        Seconds t = 0;
        for (int k = 0; k < 4; ++k) t += counts[k] * per[static_cast<std::size_t>(k)];
        return t;
      };
      const Seconds here = compute_on(base.cluster.gpu);
      double slower = here > 0 ? 0 : 1;
      for (const std::string& name : point.rank_models[static_cast<std::size_t>(r)])
        if (here > 0) slower = std::max(slower, compute_on(name) / here);
      auto scaled = [&](Seconds all, Seconds waits) { return (all - waits) * slower + waits; };
      pc.f = scaled(pc.f, pc.f_wait), pc.b = scaled(pc.b, pc.b_wait);
      pc.bi = scaled(pc.bi, pc.bi_wait), pc.w = scaled(pc.w, pc.w_wait);
      if (chunk0_b) *chunk0_b *= slower;
    }
    *params_out = params;
    load->params_on_rank = params - expert_params;
    load->expert_params_on_rank = expert_params;
    load->expert_data_parallel = c.dp / ep * cp;
    const double unit = static_cast<double>(stages) / (pp * v);
    load->layers = layers * unit;
    load->moe_layers = moe_layers * unit;
    load->in_flight_microbatches = rs ? rs->in_flight[static_cast<std::size_t>(r)] : 0;
    load->first_stage = first;
    load->last_stage = last;
    load->embedding_in_flight_microbatches = emb_flight;
    load->head_in_flight_microbatches = head_flight;
    load->mtp_modules = last ? model.mtp_depth : 0;
    load->data_parallel = c.dp * cp;
    load->distributed_optimizer = zero >= 1;
    load->gradient_bytes_per_param = base.gradient_buffer_bytes();
    load->optimizer_bytes_per_param = base.optimizer_state_bytes_per_param();
    load->zero_stage = zero;
    if (zero == 3 && layers > 0) {
      const double per_layer = params / layers;
      load->gathered_params = base.reshard_after_forward ? 2 * per_layer : params;
    }
    return pc;
  };
  const ActivationLayout act{mb, tp, base.sequence_parallel, rc, base.eight_bit_gemm_inputs(),
                             base.attention == AttentionKernel::flash,
                             rc == base.recompute ? base.recompute_modules : RecomputeModules{}};
  // The ranks whose memory and time are checked: the first and the last (interior ranks hold
  // layers only, uniform) or, on GPUs of several models, every rank on its own models.
  const bool each_rank = !point.rank_models.empty();
  const int checked = each_rank ? pp : 2;
  auto rank_at = [&](int i) { return each_rank ? i : i == 0 ? 0 : pp - 1; };
  auto capacity = [&](int r) {
    const GpuModel* g = &base.gpu;
    if (each_rank)
      for (const std::string& name : point.rank_models[static_cast<std::size_t>(r)])
        if (models.at(name)->hbm_bytes < g->hbm_bytes) g = models.at(name);
    return g;
  };
  // Weights, gradients and optimizer state alone (no activations held) first: what
  // cannot fit even so needs no schedule replay.
  for (int i = 0; i < checked && !oom; ++i) {
    StageLoad load;
    double params = 0;
    const int r = rank_at(i);
    rank_cost(r, &params, nullptr, nullptr, &load);
    const StageMemory mem = stage_memory(*point.local, act, load);
    if (const GpuModel* g = capacity(r); mem.total > g->hbm_bytes)
      oom = fmt::format("{}: pipeline rank {} needs more than {:.1f} GiB before activations, more than the {}'s {:.1f} GiB",
                        c.text(), r, mem.total / double(1ULL << 30), g->name, g->hbm_bytes / double(1ULL << 30));
  }
  if (!oom && !(rs = replay_shape(*sched, pp, m, v)))
    return Rejection{6, wants(6) ? c.text() + ": " + sched->name() + " cannot run this shape" : std::string()};
  auto fb_of = [&](const PassCost& p) { return p.f + (splits ? p.bi + p.w : p.b); };
  double fb_sum = 0, bottleneck = 0;
  std::vector<double> rank_fb;  // on GPUs of several models: each rank's pass, for the replay below
  PassCost worst;
  for (int i = 0; i < checked && !oom; ++i) {
    const int r = rank_at(i);
    StageLoad load;
    double params = 0;
    const PassCost pass = rank_cost(r, &params, r == 0 ? &rank0_chunk0_params : nullptr,
                                    r == 0 ? &rank0_chunk0_b : nullptr, &load);
    const StageMemory mem = stage_memory(*point.local, act, load);
    memory = std::max(memory, mem.total);
    if (const GpuModel* g = capacity(r); mem.total > g->hbm_bytes)
      oom = fmt::format("{}: pipeline rank {} needs {:.1f} GiB, more than the {}'s {:.1f} GiB", c.text(), r,
                        mem.total / double(1ULL << 30), g->name, g->hbm_bytes / double(1ULL << 30));
    params_max = std::max(params_max, params);
    if (pp == 1 && i == 1) break;  // the first rank is the last
    fb_sum += fb_of(pass);
    if (each_rank) rank_fb.push_back(fb_of(pass));
    if (fb_of(pass) > bottleneck || i == 0) bottleneck = fb_of(pass), worst = pass;
  }
  if (oom) return Rejection{7, *oom};
  if (!each_rank && pp > 2) {  // interior ranks hold layers only (uniform)
    const PassCost interior = (static_cast<double>(layers_per_stage) * v) * (model.moe ? res.moe : res.dense);
    fb_sum += (pp - 2) * fb_of(interior);
    if (fb_of(interior) > bottleneck) bottleneck = fb_of(interior), worst = interior;
  }
  const double mean = fb_sum / pp;
  // The schedule's table with uniform passes, at the pipeline's mean pass, then the
  // bottleneck rank's extra work in every microbatch.
  Seconds pipeline_s = rs->makespan_units * mean / 3 + m * (bottleneck - mean);
  if (each_rank && pp > 1 && mean > 0) {
    // Ranks of unlike speed: the correction above assumes one slow rank among equals; the table
    // replayed with each rank's own pass time is what the engine's pipeline does.
    for (double& fb : rank_fb) fb /= mean;
    pipeline_s = replay(*sched, shape, 1.0, 2.0, splits ? 1.0 : 0.0, -1, rank_fb).makespan_s * mean / 3;
  }
  const Seconds busy_s = m * bottleneck;
  // Pipeline transfers on the critical path: through every stage boundary forward
  // and back once (the warm-up and the drain); blocking p2p holds each pass.
  const double hops = stages > 1 ? 2.0 * (stages - 1) : 0;
  const Seconds pp_exposed = hops * p2p_s + (base.overlap_p2p_comm ? 0 : 2.0 * m * v * p2p_s);
  // Data-parallel gradients: rank 0's first chunk in buckets during its last backward
  // (finish = max(B/n + all buckets, B + last bucket)), the rest hidden before it.
  Seconds dp_exposed = 0, zero_gather = 0, embedding_sync = 0;
  const double w = raw.plan.gradient_bytes_per_param;
  const Op reduce = zero >= 1 ? Op::reduce_scatter : Op::all_reduce;
  if (zero < 2 && c.dp * cp > 1) {
    const Bytes bytes = static_cast<Bytes>(rank0_chunk0_params * w);
    if (base.overlap_grad_reduce) {
      const double bucket_params = std::max(40e6, 1e6 * static_cast<double>(dp_group.size()));
      const Bytes bucket = static_cast<Bytes>(bucket_params * w);
      const long n = static_cast<long>((bytes + bucket - 1) / bucket);
      const Bytes last_bucket = bytes - static_cast<Bytes>(n - 1) * bucket;
      const Seconds full = collective_s(reduce, dp_group, bucket, base.nccl_tuner);
      const Seconds tail = collective_s(reduce, dp_group, last_bucket, base.nccl_tuner);
      const Seconds all = (n - 1) * full + tail;
      dp_exposed = std::max({rank0_chunk0_b / n + all - rank0_chunk0_b, tail, 0.0});
    } else {
      dp_exposed = collective_s(reduce, dp_group, static_cast<Bytes>(params_max * w), base.nccl_tuner);
    }
  }
  // Overlapped with the next forward (overlap_param_gather), only the first chunk's gather waits.
  const double gathered_params = base.overlap_param_gather ? params_max / v : params_max;
  if (zero == 1 || zero == 2)
    zero_gather = collective_s(Op::all_gather, dp_group, static_cast<Bytes>(gathered_params * raw.plan.parameter_gather_bytes), base.nccl_tuner);
  if (model.tied_embeddings && stages > 1 && pp > 1) {
    ParallelLayout::Coord lastc;
    lastc.pp = pp - 1;
    embedding_sync = collective_s(Op::all_reduce, std::vector<int>{layout.rank({}), layout.rank(lastc)},
                                  static_cast<Bytes>(raw.embedding_params * w), base.nccl_tuner);
  }
  const double optimizer_params = params_max / (zero >= 1 ? c.dp * cp : 1);
  const Seconds optimizer_s =
      op_time(base.gpu, base.precision, optimizer_op(optimizer_params, base.gradient_reduce_bytes(), base.precision == "fp16", base.optimizer_state_element_bytes()));
  ScreenPrediction pr;
  pr.config = c;
  pr.iteration_s = pipeline_s + pp_exposed + dp_exposed + zero_gather + embedding_sync + optimizer_s;
  pr.tokens_per_s = tokens_per_iteration / pr.iteration_s;
  pr.mfu = flops_per_token * pr.tokens_per_s / gpus / peak_flops;
  pr.memory_bytes = memory;
  const Seconds waits = worst.f_wait + (splits ? worst.bi_wait + worst.w_wait : worst.b_wait);
  pr.exposed_comm_s = m * waits + pp_exposed + dp_exposed + zero_gather + embedding_sync;
  pr.bubble_s = std::max(0.0, pipeline_s - busy_s);
  return pr;
}

}  // namespace clustersim
