#include "gpu/worker_protocol.h"

#include <algorithm>
#include <stdexcept>

#include "gpu/value_fill.h"

namespace evo {

using nlohmann::json;

json shape_json(const Shape& s) {
  return {{"batch", s.batch},
          {"heads_q", s.heads_q},
          {"heads_kv", s.heads_kv},
          {"seq_q", s.seq_q},
          {"seq_kv", s.seq_kv},
          {"head_dim", s.head_dim},
          {"layout", s.layout == Layout::bshd ? "bshd" : "bhsd"},
          {"set", s.set}};
}

Shape shape_from_json(const json& j) {
  Shape s;
  s.batch = j.at("batch");
  s.heads_q = j.at("heads_q");
  s.heads_kv = j.at("heads_kv");
  s.seq_q = j.at("seq_q");
  s.seq_kv = j.at("seq_kv");
  s.head_dim = j.at("head_dim");
  s.layout = j.at("layout") == "bshd" ? Layout::bshd : Layout::bhsd;
  s.set = j.value("set", "");
  return s;
}

namespace {
json case_json(const CaseSpec& c) {
  return {{"id", c.id},
          {"shape", shape_json(c.shape)},
          {"seed", c.seed},
          {"inputs", c.inputs},
          {"qk_std", c.qk_std},
          {"v_std", c.v_std},
          {"out", c.out_path},
          {"q_mean", c.q_mean},
          {"outlier_every", c.outlier_every},
          {"outlier_scale", c.outlier_scale},
          {"k_sink", c.k_sink},
          {"v_mean", c.v_mean},
          {"scale", c.scale},
          {"layout", c.layout},
          {"junk", c.junk},
          {"massive_sampled", c.massive_sampled},
          {"shared_prefix", c.shared_prefix},
          {"values", c.values},
          {"two_streams", c.two_streams},
          {"streams_share", c.streams_share},
          {"device_check", {{"on", c.device_check.on}, {"atol", c.device_check.atol}, {"rtol", c.device_check.rtol}}}};
}
CaseSpec case_from_json(const json& j) {
  CaseSpec c;
  c.id = j.at("id");
  c.shape = shape_from_json(j.at("shape"));
  c.seed = j.at("seed");
  c.inputs = j.at("inputs");
  c.qk_std = j.at("qk_std");
  c.v_std = j.at("v_std");
  c.out_path = j.at("out");
  c.q_mean = j.value("q_mean", 0.0);
  c.outlier_every = j.value("outlier_every", 0.0);
  c.outlier_scale = j.value("outlier_scale", 1.0);
  c.k_sink = j.value("k_sink", 0.0);
  c.v_mean = j.value("v_mean", 0.0);
  c.scale = j.value("scale", 0.0);
  c.layout = j.value("layout", "");
  c.junk = j.value("junk", "");
  c.massive_sampled = j.value("massive_sampled", false);
  c.shared_prefix = j.value("shared_prefix", 0);
  if (c.shared_prefix < 0) throw std::invalid_argument("shared_prefix must be 0 or a row count");
  c.values = j.value("values", "");
  if (!c.values.empty() && !known_value_kind(c.values))
    throw std::invalid_argument("case " + c.id + ": unknown value kind '" + c.values + "'");
  c.two_streams = j.value("two_streams", false);
  c.streams_share = j.value("streams_share", "");
  if (c.streams_share != "" && c.streams_share != "q" && c.streams_share != "kv")
    throw std::invalid_argument("case " + c.id + ": streams_share is q, kv or empty, not '" + c.streams_share + "'");
  if (j.contains("device_check"))
    c.device_check = {j["device_check"].at("on"), j["device_check"].at("atol"), j["device_check"].at("rtol")};
  return c;
}
}  // namespace

json to_json(const WorkerJob& w) {
  json cases = json::array(), bench = json::array();
  for (const auto& c : w.cases) cases.push_back(case_json(c));
  for (const auto& b : w.bench)
    bench.push_back({{"id", b.id}, {"timed", case_json(b.timed)}, {"fresh", case_json(b.fresh)}});
  const auto& t = w.timing;
  return {{"mode", w.mode},
          {"device", w.device},
          {"task", w.task.name()},
          {"support_cubin", w.support_cubin},
          {"cubin", w.cubin},
          {"launch",
           {{"threads", w.launch.threads},
            {"smem_bytes", w.launch.smem_bytes},
            {"rows_per_cta", w.launch.rows_per_cta},
            {"cluster_x", w.launch.cluster_x},
            {"persistent", w.launch.persistent},
            {"abi_version", w.launch.abi_version},
            {"kv_splits_max", w.launch.kv_splits_max},
            {"kv_block", w.launch.kv_block},
            {"pack_gqa", w.launch.pack_gqa}}},
          {"cases", cases},
          {"bench", bench},
          {"timing",
           {{"warmup_ms", t.warmup_ms},
            {"min_samples", t.min_samples},
            {"max_samples", t.max_samples},
            {"target_rse", t.target_rse},
            {"shape_budget_ms", t.shape_budget_ms},
            {"launch_bound_us", t.launch_bound_us},
            {"graph_launches", t.graph_launches},
            {"prune_factor", t.prune_factor},
            {"rows_per_sample", t.rows_per_sample},
            {"repeat_probes", t.repeat_probes},
            {"isolation_pause_ms", t.isolation_pause_ms},
            {"full_check_rows", t.full_check_rows}}},
          {"prune_us", w.prune_us},
          {"dump_inputs", w.dump_inputs},
          {"reference_kernel", w.reference_kernel}};
}

WorkerJob worker_job_from_json(const json& j) {
  WorkerJob w;
  w.mode = j.at("mode");
  w.device = j.at("device");
  w.task = parse_task(j.at("task"));
  w.support_cubin = j.at("support_cubin");
  w.cubin = j.at("cubin");
  const json& l = j.at("launch");
  w.launch = {l.at("threads"),        l.at("smem_bytes"),  l.at("rows_per_cta"),         l.at("cluster_x"),
              l.at("persistent"),     l.at("abi_version"), l.value("kv_splits_max", 0u), l.value("kv_block", 0u),
              l.value("pack_gqa", 0u)};
  for (const auto& c : j.at("cases")) w.cases.push_back(case_from_json(c));
  for (const auto& b : j.at("bench"))
    w.bench.push_back({b.at("id"), case_from_json(b.at("timed")), case_from_json(b.at("fresh"))});
  const json& t = j.at("timing");
  w.timing = {t.at("warmup_ms"),       t.at("min_samples"),     t.at("max_samples"),    t.at("target_rse"),
              t.at("shape_budget_ms"), t.at("launch_bound_us"), t.at("graph_launches"), t.at("prune_factor")};
  w.timing.rows_per_sample = t.at("rows_per_sample");
  w.timing.repeat_probes = t.at("repeat_probes");
  w.timing.isolation_pause_ms = t.at("isolation_pause_ms");
  w.timing.full_check_rows = t.at("full_check_rows");
  w.prune_us = j.at("prune_us");
  w.dump_inputs = j.at("dump_inputs");
  w.reference_kernel = j.value("reference_kernel", std::string("rowwise"));
  return w;
}

}  // namespace evo
