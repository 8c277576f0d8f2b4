// The parent <-> worker protocol's one encoder and decoder per direction (gpu/worker_protocol.h
// for jobs, gpu/worker_events.h for events): a job survives the trip to the worker field by
// field, and each event the worker sends has the wire form the parent and older logs read.
#include "gpu/worker_protocol.h"

#include <gtest/gtest.h>

#include "gpu/worker_events.h"

namespace evo {
namespace {

using nlohmann::json;

CaseSpec sample_case(const std::string& id, unsigned seed) {
  CaseSpec c;
  c.id = id;
  c.shape = parse_shape("2x8x2x256x512x128:bshd", 128);
  c.shape.set = "sampled";
  c.seed = seed;
  c.inputs = "outliers";
  c.qk_std = 1.5, c.v_std = 0.5, c.q_mean = 0.25, c.outlier_every = 97, c.outlier_scale = 30, c.k_sink = 4,
  c.scale = 0.07, c.v_mean = 256;
  c.layout = "packed_qkv";
  c.two_streams = true;
  c.streams_share = "kv";    // hacker round 6: the second problem reads the first's K and V
  c.massive_sampled = true;  // hacker round 21: normal's massive channels in a sampled case
  c.shared_prefix = 3;       // hacker round 22: odd batches repeat the batch before's first 3 rows
  c.out_path = "/w/" + id + ".out";
  return c;
}

TEST(WorkerJobs, EncodeThenDecodeKeepsEveryField) {
  WorkerJob j;
  j.mode = "candidate";
  j.device = 1;
  j.task = parse_task("bf16-d128-causal");
  j.support_cubin = "/c/support.cubin";
  j.cubin = "/c/cand.cubin";
  j.launch = LaunchGeometry{384, 165120, 128, 2, 1, 3, 0, 0, 0};
  j.cases = {sample_case("g0", 7)};
  j.bench = {{"b0", sample_case("t0", 8), sample_case("f0", 9)}};
  j.timing = TimingConfig{25, 10, 200, 0.005, 3000, 40, 50, 1.5};
  j.timing.full_check_rows = 4096;
  j.prune_us = 12.5;
  j.dump_inputs = true;
  j.reference_kernel = "tiled";

  const WorkerJob back = worker_job_from_json(json::parse(to_json(j).dump()));
  EXPECT_EQ(back.mode, j.mode);
  EXPECT_EQ(back.device, 1);
  EXPECT_EQ(back.task.name(), "bf16-d128-causal");
  EXPECT_EQ(back.support_cubin, j.support_cubin);
  EXPECT_EQ(back.cubin, j.cubin);
  EXPECT_EQ(back.launch.threads, 384u);
  EXPECT_EQ(back.launch.smem_bytes, 165120u);
  EXPECT_EQ(back.launch.rows_per_cta, 128u);
  EXPECT_EQ(back.launch.cluster_x, 2u);
  EXPECT_EQ(back.launch.persistent, 1u);
  EXPECT_EQ(back.launch.abi_version, 3u);
  ASSERT_EQ(back.cases.size(), 1u);
  const CaseSpec& c = back.cases[0];
  EXPECT_EQ(c.shape.dims(), j.cases[0].shape.dims());
  EXPECT_EQ(c.shape.set, "sampled");
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.inputs, "outliers");
  EXPECT_EQ(c.qk_std, 1.5);
  EXPECT_EQ(c.v_std, 0.5);
  EXPECT_EQ(c.q_mean, 0.25);
  EXPECT_EQ(c.outlier_every, 97);
  EXPECT_EQ(c.outlier_scale, 30);
  EXPECT_EQ(c.k_sink, 4);
  EXPECT_EQ(c.v_mean, 256);  // V's common offset (gates.json v_offset) reaches the worker
  EXPECT_EQ(c.scale, 0.07);
  EXPECT_EQ(c.layout, "packed_qkv");
  EXPECT_TRUE(c.two_streams);
  EXPECT_EQ(c.streams_share, "kv");
  EXPECT_TRUE(c.massive_sampled);
  EXPECT_EQ(c.shared_prefix, 3);
  EXPECT_EQ(c.out_path, "/w/g0.out");
  ASSERT_EQ(back.bench.size(), 1u);
  EXPECT_EQ(back.bench[0].id, "b0");
  EXPECT_EQ(back.bench[0].timed.seed, 8u);
  EXPECT_EQ(back.bench[0].fresh.out_path, "/w/f0.out");
  EXPECT_EQ(back.timing.warmup_ms, 25);
  EXPECT_EQ(back.timing.min_samples, 10);
  EXPECT_EQ(back.timing.max_samples, 200);
  EXPECT_EQ(back.timing.target_rse, 0.005);
  EXPECT_EQ(back.timing.shape_budget_ms, 3000);
  EXPECT_EQ(back.timing.launch_bound_us, 40);
  EXPECT_EQ(back.timing.graph_launches, 50);
  EXPECT_EQ(back.timing.prune_factor, 1.5);
  EXPECT_EQ(back.timing.full_check_rows, 4096);
  EXPECT_EQ(back.prune_us, 12.5);
  EXPECT_TRUE(back.dump_inputs);
  EXPECT_EQ(back.reference_kernel, "tiled");
  json without = to_json(j);
  without.erase("reference_kernel");  // a job written before the field: the rowwise reference
  EXPECT_EQ(worker_job_from_json(without).reference_kernel, "rowwise");
  EXPECT_EQ(to_json(back), to_json(j)) << "decode -> encode gives the same job file";
}

TEST(WorkerJobs, JobWithoutAFieldDoesNotDecode) {
  WorkerJob j;
  j.mode = "reference";
  j.task = parse_task("fp16-d64");
  json text = to_json(j);
  text.erase("cubin");
  EXPECT_THROW(worker_job_from_json(text), std::exception);
}

// The worker's constructors give exactly the objects the worker used to write by hand: the
// parent's decoder and the committed logs read this form.
TEST(WorkerEvents, ConstructorsGiveTheWireForm) {
  auto wire = [](const WorkerEvent& e) { return json::parse(encode_worker_event(e)); };
  EXPECT_EQ(wire(phase_event("init")), json({{"event", "phase"}, {"phase", "init"}}));
  EXPECT_EQ(wire(phase_event("gate", "small/0")), json({{"event", "phase"}, {"phase", "gate"}, {"case", "small/0"}}));
  EXPECT_EQ(wire(phase_event("timing", "", "b0")), json({{"event", "phase"}, {"phase", "timing"}, {"bench", "b0"}}));
  EXPECT_EQ(wire(case_done_event("c", "/o")), json({{"event", "case_done"}, {"case", "c"}, {"out", "/o"}}));
  EXPECT_EQ(wire(case_done_event("c", "/o", false, true, true)), json({{"event", "case_done"},
                                                                       {"case", "c"},
                                                                       {"out", "/o"},
                                                                       {"deterministic", false},
                                                                       {"inputs_intact", true},
                                                                       {"guards_intact", true}}));
  // A split kernel's case (hacker round 7): whether its tile counters read 0 after each launch.
  EXPECT_EQ(wire(case_done_event("c", "/o", true, true, true, false)), json({{"event", "case_done"},
                                                                             {"case", "c"},
                                                                             {"out", "/o"},
                                                                             {"deterministic", true},
                                                                             {"inputs_intact", true},
                                                                             {"guards_intact", true},
                                                                             {"counters_zero", false}}));
  EXPECT_EQ(
      wire(case_done_event("c", "/o", std::nullopt, false, true)),
      json({{"event", "case_done"}, {"case", "c"}, {"out", "/o"}, {"inputs_intact", false}, {"guards_intact", true}}));
  // A case checked on the GPU (gpu/device_check_worker.cpp): no output file, its facts instead.
  WorkerEvent on_device = case_done_event("huge/0", "", true, true, true);
  on_device.device_check = DeviceCheckFacts{};
  on_device.device_check->n = 1ull << 32;
  EXPECT_EQ(wire(on_device), json({{"event", "case_done"},
                                   {"case", "huge/0"},
                                   {"deterministic", true},
                                   {"inputs_intact", true},
                                   {"guards_intact", true},
                                   {"device_check", to_json(*on_device.device_check)}}));
  EXPECT_TRUE(decode_worker_event(encode_worker_event(on_device)).event);
  // A benchmark shape's fully checked launch (gpu/timing_loop.h): counts, no file.
  FullCheck drawn{3, "drawn", "large_v", 12.5, true, DeviceCheckFacts{}};
  drawn.facts.n = 4096;
  EXPECT_EQ(wire(post_done_event("b", drawn, false)), json({{"event", "post_done"},
                                                            {"bench", "b"},
                                                            {"sample", 3},
                                                            {"why", "drawn"},
                                                            {"us", 12.5},
                                                            {"inputs_intact", true},
                                                            {"guards_intact", false},
                                                            {"device_check", to_json(drawn.facts)}}));
  WorkerEvent timing = timing_event("b");
  timing.fields = {{"stats", {{"median_us", 3.0}}}, {"warmup_launches", 4}};
  timing.pruned = true;
  EXPECT_EQ(wire(timing), json({{"event", "timing"},
                                {"bench", "b"},
                                {"pruned", true},
                                {"stats", {{"median_us", 3.0}}},
                                {"warmup_launches", 4}}));
  EXPECT_EQ(wire(device_event({{"name", "NVIDIA H200"}, {"cc", 90}})),
            json({{"event", "device"}, {"name", "NVIDIA H200"}, {"cc", 90}}));
  EXPECT_EQ(wire(worker_event(WorkerEventKind::await)), json({{"event", "await"}}));
  EXPECT_EQ(wire(worker_event(WorkerEventKind::done)), json({{"event", "done"}}));
  EXPECT_EQ(wire(error_event("load", "cuModuleLoadData: bad image")),
            json({{"event", "error"}, {"outcome", "load"}, {"reason", "cuModuleLoadData: bad image"}}));
  // And each decodes: the parent accepts everything the worker's constructors make.
  for (const WorkerEvent& e : {phase_event("load"), case_done_event("c", "/o", true, true, true),
                               post_done_event("b", drawn, true), timing, worker_event(WorkerEventKind::done)})
    EXPECT_TRUE(decode_worker_event(encode_worker_event(e)).event) << encode_worker_event(e);
}

}  // namespace
}  // namespace evo
