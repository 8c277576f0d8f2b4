// The FP32 GPU reference against a CPU double-precision reference on small shapes, over the
// same inputs (dumped by the reference worker; fp8: e4m3 codes and descales, decoded here):
// relative L2 below 1e-6.
#include "run/reference.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>

#include "cli/context.h"
#include "compile/compiler.h"
#include "core/paths.h"
#include "gates/correctness.h"
#include "gpu/device_query.h"
#include "run/plan.h"
#include "support/support_source.h"
#include "support/test_support.h"

namespace evo {
namespace {

std::vector<double> load_half(const std::string& bytes, DType dt) {
  std::vector<double> out(bytes.size() / 2);
  const auto* p = reinterpret_cast<const uint16_t*>(bytes.data());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = dt == DType::fp16 ? half_bits_to_float(p[i]) : bf16_bits_to_float(p[i]);
  return out;
}

// e4m3 (OCP FP8: bias 7, no infinities, S.1111.111 is NaN) decoded on the host, independently of
// the device's conversion.
double e4m3_value(uint8_t x) {
  const int e = (x >> 3) & 15, m = x & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : (e == 15 && m == 7 ? NAN : std::ldexp(1 + m / 8.0, e - 7));
  return x & 0x80 ? -mag : mag;
}

// Tensor `which` (0 q, 1 k, 2 v) as dumped beside a reference: the values the reference must see
// (fp8: each e4m3 code times the tensor's descale from <out>.descale).
std::vector<double> load_input(const std::string& out_path, int which, const Task& task) {
  const std::string bytes = test::read_text(out_path + "." + "qkv"[which]);
  if (task.dtype != DType::fp8) return load_half(bytes, task.dtype);
  const std::string ds = test::read_text(out_path + ".descale");
  EXPECT_EQ(ds.size(), 3 * sizeof(float));
  float descale[3] = {1, 1, 1};
  std::memcpy(descale, ds.data(), std::min(ds.size(), sizeof(descale)));
  std::vector<double> out(bytes.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = e4m3_value(uint8_t(bytes[i])) * double(descale[which]);
  return out;
}

// Plain softmax(QKᵀ·scale)·V in double, logical BHSD inputs.
std::vector<double> cpu_attention(const Shape& s, bool causal, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v, double scale = 0) {
  const int D = s.head_dim, g = s.heads_q / s.heads_kv;
  std::vector<double> o(size_t(s.batch) * s.heads_q * s.seq_q * D);
  if (scale == 0) scale = 1.0 / std::sqrt(double(D));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads_q; ++h)
      for (int i = 0; i < s.seq_q; ++i) {
        const double* qi = &q[((size_t(b) * s.heads_q + h) * s.seq_q + i) * D];
        const size_t kv = (size_t(b) * s.heads_kv + h / g) * s.seq_kv;
        const int n = causal ? std::min(i + 1, s.seq_kv) : s.seq_kv;
        std::vector<double> p(static_cast<size_t>(n));
        double m = -INFINITY, l = 0;
        for (int j = 0; j < n; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += qi[d] * k[(kv + j) * D + d];
          p[size_t(j)] = dot * scale;
          m = std::max(m, p[size_t(j)]);
        }
        for (auto& x : p) l += (x = std::exp(x - m));
        double* oi = &o[((size_t(b) * s.heads_q + h) * s.seq_q + i) * D];
        for (int j = 0; j < n; ++j)
          for (int d = 0; d < D; ++d) oi[d] += p[size_t(j)] / l * v[(kv + j) * D + d];
      }
  return o;
}

// The support kernels built for the GPU that is here (a cubin runs only on its own major
// architecture), cached in `cache`.
std::filesystem::path support_for_this_gpu(const Context& ctx, const std::filesystem::path& cache) {
  Compiler compiler(ctx.root, cache, ctx.gates);
  const GpuInfo gpu = query_gpu(0);
  return compiler.compile_support(gpu.cc >= 90 ? "sm_90a" : "sm_" + std::to_string(gpu.cc));
}

// Each case's reference and its inputs (beside it) through a dedicated worker job, in `dir`; the
// cases as run, with their output paths.
std::vector<CaseSpec> dump_references(const Task& task, const std::vector<CaseSpec>& cases,
                                      const std::filesystem::path& support, const std::filesystem::path& dir,
                                      const std::string& reference_kernel = "rowwise", bool dump_inputs = true) {
  WorkerJob job;
  job.mode = "reference";
  job.task = task;
  job.support_cubin = support.string();
  job.dump_inputs = dump_inputs;
  job.reference_kernel = reference_kernel;
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseSpec c = cases[i];
    c.out_path = (dir / ("case" + std::to_string(i))).string();
    job.cases.push_back(c);
  }
  const auto job_file = dir / "job.json";
  test::write_text(job_file, to_json(job).dump());
  auto r = test::run_evo("__worker " + job_file.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"done\""), std::string::npos) << r.out;
  return r.exit_code == 0 ? job.cases : std::vector<CaseSpec>{};
}

TEST(GpuReference, MatchesCpuDoublePrecision) {
  EVO_REQUIRE_GPU();
  Context ctx = Context::load();
  const auto cache = test::scratch_dir("reference-cache");
  const auto support = support_for_this_gpu(ctx, cache);
  ReferenceStore store(cache, support, "test", ctx.gates.limits, 0);
  for (const std::string task_name :
       {"fp16-d64", "bf16-d128-causal", "fp16-d128-causal", "fp8-d64", "fp8-d128-causal"}) {
    const Task task = parse_task(task_name);
    EvalPlan plan = make_plan(ctx.gates, {task, {"small", "1x4x2x100x77xD:bshd"}, {}, {0, 1}, false, std::nullopt});
    ASSERT_FALSE(plan.gate_cases.empty());
    const auto dir = test::scratch_dir("ref-" + task_name);
    const std::vector<CaseSpec> cases = dump_references(task, plan.gate_cases, support, dir);
    ASSERT_FALSE(cases.empty()) << task_name;
    for (const auto& c : cases) {
      auto q = load_input(c.out_path, 0, task);
      auto k = load_input(c.out_path, 1, task);
      auto v = load_input(c.out_path, 2, task);
      const std::string gpu = test::read_text(c.out_path);
      auto ref = cpu_attention(c.shape, task.causal, q, k, v);
      ASSERT_EQ(gpu.size(), ref.size() * 4) << c.id;
      const auto* g = reinterpret_cast<const float*>(gpu.data());
      double e2 = 0, r2 = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        e2 += (g[i] - ref[i]) * (g[i] - ref[i]);
        r2 += ref[i] * ref[i];
      }
      const double rel = std::sqrt(e2 / r2);
      EXPECT_LT(rel, 1e-6) << task_name << " " << c.id;
      // Inputs are never degenerate: no all-zero tensor, Q differs from K.
      EXPECT_NE(q, k) << c.id;
      double qn = 0;
      for (double x : q) qn += x * x;
      EXPECT_GT(qn, 0.1 * double(q.size())) << c.id;
      // fp8: scaled to e4m3's range per tensor, so the largest code is near 448 (0x7E), and
      // the descales are amax / 448, far from 1 (a kernel that ignores one is caught).
      if (task.dtype == DType::fp8) {
        const std::string qb = test::read_text(c.out_path + ".q");
        int top = 0;
        for (char x : qb) top = std::max(top, int(uint8_t(x) & 0x7F));
        EXPECT_GE(top, 0x7C) << c.id << ": Q's largest |code| should be near 448";
        for (double x : q) EXPECT_TRUE(std::isfinite(x)) << c.id;
      }
    }
  }
}

// A long row of nearly equal weights (softmax scale 1.18e-5 over 33 088 keys: every weight within
// about 6e-4 of 1), the deep case on which an exact kernel read as biased by +2.28e-4 (H200,
// 2026-12-01): the reference's FP32 sums rounded every addend past 16 384 keys to 1. With its sums
// in double its bias against the CPU's is under 1e-5 and its relative L2 under 1e-6.
TEST(GpuReference, KeepsItsSumsOnALongRowOfNearlyEqualWeights) {
  EVO_REQUIRE_GPU();
  Context ctx = Context::load();
  const auto support = support_for_this_gpu(ctx, test::scratch_dir("reference-cache-long"));
  const Task task = parse_task("fp16-d128");
  EvalPlan plan = make_plan(ctx.gates, {task, {"1x4x1x8x33088xD"}, {}, {0}, false, std::nullopt});
  ASSERT_FALSE(plan.gate_cases.empty());
  CaseSpec c = plan.gate_cases.front();  // normal inputs
  c.scale = 1.18e-5;
  const auto cases = dump_references(task, {c}, support, test::scratch_dir("ref-long-row"));
  ASSERT_EQ(cases.size(), 1u);
  const CaseSpec& run = cases.front();
  const auto ref = cpu_attention(run.shape, false, load_input(run.out_path, 0, task), load_input(run.out_path, 1, task),
                                 load_input(run.out_path, 2, task), run.scale);
  const std::string bytes = test::read_text(run.out_path);
  ASSERT_EQ(bytes.size(), ref.size() * 4);
  const auto* g = reinterpret_cast<const float*>(bytes.data());
  double e2 = 0, r2 = 0, signed_err = 0, abs_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = g[i] - ref[i];
    e2 += e * e;
    r2 += ref[i] * ref[i];
    signed_err += ref[i] > 0 ? e : -e;
    abs_ref += std::abs(ref[i]);
  }
  EXPECT_LT(std::abs(signed_err / abs_ref), 1e-5) << "the FP32 sums gave about +2.5e-4 of |ref| low";
  EXPECT_LT(std::sqrt(e2 / r2), 1e-6);
}

// The tiled reference (gates.json limits.reference_kernel "tiled") makes every number with the
// rowwise one's operations in its order, so their outputs must be equal bit for bit: over the
// fixed gate sets and the cheap tier's sampled cases at gate seed 2025 (every layout, strides,
// GQA, MQA, scales, value kinds) for both head dims, all three dtypes and both masks, and shapes
// at the tiles' edges (rows not a multiple of 16, keys not of 32, one key, one row over 8k keys,
// causal with more rows than keys).
TEST(GpuReference, TheTiledReferenceIsTheRowwiseBitForBit) {
  EVO_REQUIRE_GPU();
  Context ctx = Context::load();
  const auto support = support_for_this_gpu(ctx, test::scratch_dir("reference-cache-tiled"));
  const std::vector<std::string> edges{"small",          "1x4x2x100x77xD:bshd", "2x8x2x1x8192xD",
                                       "1x4x4x300x77xD", "1x2x1x33x1xD",        "3x6x3x17x31xD"};
  for (const std::string task_name : {"fp16-d64", "bf16-d128-causal", "fp8-d128", "fp16-d128-causal", "bf16-d64"}) {
    const Task task = parse_task(task_name);
    EvalPlan plan = make_plan(ctx.gates, {task, edges, {}, {0}, false, 2025u, false});
    std::vector<CaseSpec> cases;
    for (const CaseSpec& c : plan.gate_cases)  // outputs of at most 4M floats: the files stay small
      if (c.shape.elements(c.shape.heads_q, c.shape.seq_q) <= (int64_t(1) << 22)) cases.push_back(c);
    ASSERT_GT(cases.size(), 40u) << task_name;
    const auto t0 = std::chrono::steady_clock::now();
    const auto rowwise =
        dump_references(task, cases, support, test::scratch_dir("ref-rowwise-" + task_name), "rowwise", false);
    const auto t1 = std::chrono::steady_clock::now();
    const auto tiled =
        dump_references(task, cases, support, test::scratch_dir("ref-tiled-" + task_name), "tiled", false);
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_EQ(rowwise.size(), cases.size()) << task_name;
    ASSERT_EQ(tiled.size(), cases.size()) << task_name;
    std::cout << fmt::format("{}: {} cases, rowwise job {:.2f} s, tiled job {:.2f} s\n", task_name, cases.size(),
                             std::chrono::duration<double>(t1 - t0).count(),
                             std::chrono::duration<double>(t2 - t1).count());
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string a = test::read_text(rowwise[i].out_path), b = test::read_text(tiled[i].out_path);
      ASSERT_EQ(a.size(), b.size()) << cases[i].id;
      if (a == b) continue;
      size_t first = 0;
      while (first + 4 <= a.size() && a.compare(first, 4, b, first, 4) == 0) first += 4;
      ADD_FAILURE() << task_name << " " << cases[i].id << ": first differing output element " << first / 4;
    }
  }
}

}  // namespace
}  // namespace evo
