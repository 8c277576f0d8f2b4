// The ABI floor (variants/common: evo_launch.h, evo_host_launch.h, evo_regime.h): the rules evo's
// worker and the exported package both compile instead of keeping copies. Each test fails when
// the two sides part: the regime rule's table, the TMA map arguments on BHSD, BSHD, GQA and
// size-1 dims, the parameters both hosts build for one call, and a package made as `evo export`
// makes it (deploy/ and the floor copied, package_data.cpp generated) built with CMake and asked
// for its dispatch through its C API.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "core/regime.h"
#include "core/task.h"
#include "export/package_source.h"
#include "gpu/problem_call.h"
#include "package.h"  // deploy/src: the package's side, against the same floor
#include "support/test_support.h"

namespace evo {
namespace {

// The rule's bounds as a population might have derived them, and the default ones.
const RegimeRule kDefault;
const RegimeRule kCustom{4, 512, 64};

TEST(AbiFloor, RegimeRuleTable) {
  struct Row {
    long long batch, heads_q, seq_q;
    Regime by_default, by_custom;
  } rows[] = {
      {1, 1, 1, Regime::decode, Regime::decode},
      {64, 32, 4, Regime::decode, Regime::decode},
      {64, 32, 5, Regime::decode, Regime::batched_short},
      {1, 8, 16, Regime::decode, Regime::short_seq},
      {1, 8, 17, Regime::short_seq, Regime::short_seq},
      {8, 8, 17, Regime::short_seq, Regime::batched_short},  // B*Hq 64
      {16, 8, 512, Regime::batched_short, Regime::batched_short},
      {1, 127, 1024, Regime::short_seq, Regime::long_seq},
      {1, 128, 1024, Regime::batched_short, Regime::long_seq},
      {1, 128, 1025, Regime::long_seq, Regime::long_seq},
      {4096, 128, 100000, Regime::long_seq, Regime::long_seq},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(regime_of(kDefault, r.batch, r.heads_q, r.seq_q), r.by_default)
        << r.batch << "x" << r.heads_q << "x" << r.seq_q;
    EXPECT_EQ(regime_of(kCustom, r.batch, r.heads_q, r.seq_q), r.by_custom)
        << r.batch << "x" << r.heads_q << "x" << r.seq_q;
  }
  // evo's names are the floor's, the ones the package's evo_attn_regime_name returns.
  const char* names[] = {"decode", "short", "batched-short", "long"};
  for (int i = 0; i < kRegimes; ++i) {
    EXPECT_EQ(int(kAllRegimes[size_t(i)]), i);
    EXPECT_STREQ(regime_name(kAllRegimes[size_t(i)]), names[i]);
    EXPECT_STREQ(evo_regime_name(i), names[i]);
    EXPECT_EQ(parse_regime(names[i]), kAllRegimes[size_t(i)]);
  }
  EXPECT_EQ(evo_regime_name(kRegimes), nullptr);
  EXPECT_EQ(kDefault.decode_max_seq_q, 16);
  EXPECT_EQ(kDefault.short_max_seq_q, 1024);
  EXPECT_EQ(kDefault.batched_min_batch_heads, 128);
}

EvoTensor bhsd(long long b, long long h, long long s, long long d) {
  return EvoTensor{1ull << 40, {b, h, s, d}, {h * s * d, s * d, d}};
}
EvoTensor bshd(long long b, long long h, long long s, long long d) {
  return EvoTensor{1ull << 40, {b, h, s, d}, {s * h * d, d, h * d}};
}

void expect_args(const EvoTmaArgs& a, CUtensorMapDataType type, std::array<cuuint64_t, 4> dims,
                 std::array<cuuint64_t, 3> strides, std::array<cuuint32_t, 2> box) {
  EXPECT_EQ(a.type, type);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.dims[i], dims[size_t(i)]) << "dim " << i;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.strides[i], strides[size_t(i)]) << "stride " << i;
  EXPECT_EQ(a.box[0], box[0]);
  EXPECT_EQ(a.box[1], box[1]);
  EXPECT_EQ(a.box[2], 1u);
  EXPECT_EQ(a.box[3], 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.elem_strides[i], 1u);
}

TEST(AbiFloor, TmaArgumentsOnBhsdBshdGqaAndSize1Dims) {
  const EvoTmaSpec q{EVO_TMA_Q, 128, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_128B, 0};
  const EvoTmaSpec k{EVO_TMA_K, 64, 128, EVO_TMA_SWIZZLE_64B, EVO_TMA_L2_256B, 0};
  const EvoTmaSpec o{EVO_TMA_O, 128, 64, EVO_TMA_SWIZZLE_NONE, EVO_TMA_L2_NONE, 0};
  // BHSD fp16: dims (d, s, h, b), byte strides of s, h, b.
  EvoTmaArgs a = evo_tma_args(q, bhsd(2, 8, 300, 64), EVO_HOST_FP16);
  expect_args(a, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, {64, 300, 8, 2}, {128, 300 * 128, 8 * 300 * 128}, {64, 128});
  EXPECT_EQ(a.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(a.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  // BSHD (token-major): the head stride is one row, the sequence stride all heads.
  a = evo_tma_args(q, bshd(2, 8, 300, 64), EVO_HOST_BF16);
  expect_args(a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, {64, 300, 8, 2}, {8 * 128, 128, 300 * 8 * 128}, {64, 128});
  // GQA: K has its own (fewer) heads and length.
  a = evo_tma_args(k, bhsd(2, 2, 777, 128), EVO_HOST_BF16);
  expect_args(a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, {128, 777, 2, 2}, {256, 777 * 256, 2 * 777 * 256}, {128, 64});
  EXPECT_EQ(a.swizzle, CU_TENSOR_MAP_SWIZZLE_64B);
  // Size-1 dims (decode: one query, one batch, MQA's one KV head) take the head dim as stride,
  // whatever the caller gave (0, an odd number): TMA checks strides it never steps over.
  EvoTensor one = bshd(1, 8, 1, 64);
  one.stride[0] = 0;
  one.stride[2] = 3;
  a = evo_tma_args(q, one, EVO_HOST_FP16);
  expect_args(a, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, {64, 1, 8, 1}, {128, 128, 128}, {64, 128});
  EvoTensor mqa = bhsd(4, 1, 4096, 128);
  mqa.stride[1] = 7;
  a = evo_tma_args(k, mqa, EVO_HOST_FP8);
  expect_args(a, CU_TENSOR_MAP_DATA_TYPE_UINT8, {128, 4096, 1, 4}, {128, 128, 4096 * 128}, {128, 64});
  // fp8 tasks: e4m3 inputs move as bytes, the output is bf16 (and batch 1 takes the head dim's stride).
  a = evo_tma_args(o, bhsd(1, 4, 100, 64), EVO_HOST_FP8);
  expect_args(a, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, {64, 100, 4, 1}, {128, 100 * 128, 128}, {64, 128});
  EXPECT_EQ(evo_tma_element(EVO_HOST_FP8, EVO_TMA_V).bytes, 1u);
}

TEST(AbiFloor, TmaSpecsOutsideWhatTmaAcceptsAreNamed) {
  EXPECT_EQ(evo_tma_spec_problem({EVO_TMA_V, 256, 256, 3, 3, 0}), nullptr);
  EXPECT_STREQ(evo_tma_spec_problem({5, 64, 64, 0, 0, 0}), "the tensor is not EVO_TMA_Q/K/V/O");
  EXPECT_STREQ(evo_tma_spec_problem({EVO_TMA_Q, 0, 64, 0, 0, 0}), "box_rows is outside 1..256");
  EXPECT_STREQ(evo_tma_spec_problem({EVO_TMA_Q, 64, 4, 0, 0, 0}), "box_cols is outside 8..256");
  EXPECT_STREQ(evo_tma_spec_problem({EVO_TMA_Q, 64, 64, 4, 0, 0}), "swizzle is not an EVO_TMA_SWIZZLE_* mode");
  EXPECT_STREQ(evo_tma_spec_problem({EVO_TMA_Q, 64, 64, 0, 4, 0}), "l2_promotion is not an EVO_TMA_L2_* mode");
}

TEST(AbiFloor, DtypeNumbersAgreeOnEverySide) {
  // The floor's EvoDtype, evo's DType, the package's evo_attn_dtype and the kernels' EVO_DTYPE_*.
  EXPECT_EQ(parse_task("fp16-d64").dtype_code(), EVO_HOST_FP16);
  EXPECT_EQ(parse_task("bf16-d64").dtype_code(), EVO_HOST_BF16);
  EXPECT_EQ(parse_task("fp8-d64").dtype_code(), EVO_HOST_FP8);
  EXPECT_EQ(int(EVO_ATTN_FP16), EVO_HOST_FP16);
  EXPECT_EQ(int(EVO_ATTN_BF16), EVO_HOST_BF16);
  EXPECT_EQ(int(EVO_ATTN_FP8_E4M3), EVO_HOST_FP8);
  const std::string cuh = test::read_text(test::source_root() / "variants" / "common" / "evo_attn.cuh");
  EXPECT_NE(cuh.find("#define EVO_DTYPE_FP16 0\n"), std::string::npos);
  EXPECT_NE(cuh.find("#define EVO_DTYPE_BF16 1\n"), std::string::npos);
  EXPECT_NE(cuh.find("#define EVO_DTYPE_FP8 2\n"), std::string::npos);
}

// One call as the worker holds it (a Problem's tensors) and as the package receives it.
struct BothSides {
  worker_device::Problem problem{parse_task("fp8-d128")};
  evo_attn_call call{};
};

void one_call(bool bshd_q, int batch, int seq_q, BothSides& s) {
  const int hq = 8, hkv = 1, skv = 333, d = 128;
  auto desc = [](CUdeviceptr data, EvoTensor t) {
    return worker_device::TensorDesc{
        data, {t.stride[0], t.stride[1], t.stride[2]}, int(t.size[0]), int(t.size[1]), int(t.size[2]), int(t.size[3])};
  };
  auto tensor = [](CUdeviceptr data, EvoTensor t) {
    return evo_attn_tensor{
        data, {t.size[0], t.size[1], t.size[2], t.size[3]}, {t.stride[0], t.stride[1], t.stride[2], 1}};
  };
  const EvoTensor q = bshd_q ? bshd(batch, hq, seq_q, d) : bhsd(batch, hq, seq_q, d);
  const EvoTensor kv = bhsd(batch, hkv, skv, d), o = bhsd(batch, hq, seq_q, d);
  const CUdeviceptr base = 1ull << 40, gap = 1ull << 32;
  s.problem.dq = desc(base, q);
  s.problem.dk = desc(base + gap, kv);
  s.problem.dv = desc(base + 2 * gap, kv);
  s.problem.dout = desc(base + 3 * gap, o);
  s.problem.scale = 0.0883883476f;
  s.problem.descale[0] = 0.5f;
  s.problem.descale[1] = 0.25f;
  s.problem.descale[2] = 2.0f;
  s.call.q = tensor(base, q);
  s.call.k = tensor(base + gap, kv);
  s.call.v = tensor(base + 2 * gap, kv);
  s.call.o = tensor(base + 3 * gap, o);
  s.call.dtype = EVO_ATTN_FP8_E4M3;
  s.call.out_dtype = EVO_ATTN_BF16;
  s.call.scale = 0.0883883476f;
  s.call.q_descale = 0.5f;
  s.call.k_descale = 0.25f;
  s.call.v_descale = 2.0f;
}

void expect_same_params(const EvoAttnParams& w, const EvoAttnParams& p) {
  EXPECT_EQ(w.q, p.q);
  EXPECT_EQ(w.k, p.k);
  EXPECT_EQ(w.v, p.v);
  EXPECT_EQ(w.o, p.o);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(w.q_stride[i], p.q_stride[i]) << i;
    EXPECT_EQ(w.k_stride[i], p.k_stride[i]) << i;
    EXPECT_EQ(w.v_stride[i], p.v_stride[i]) << i;
    EXPECT_EQ(w.o_stride[i], p.o_stride[i]) << i;
  }
  const int wi[] = {w.batch, w.heads_q, w.heads_kv, w.seq_q, w.seq_kv, w.head_dim, w.causal, w.num_splits};
  const int pi[] = {p.batch, p.heads_q, p.heads_kv, p.seq_q, p.seq_kv, p.head_dim, p.causal, p.num_splits};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(wi[i], pi[i]) << "int field " << i;
  const float wf[] = {w.softmax_scale, w.softmax_scale_log2, w.q_descale, w.k_descale, w.v_descale};
  const float pf[] = {p.softmax_scale, p.softmax_scale_log2, p.q_descale, p.k_descale, p.v_descale};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(std::memcmp(&wf[i], &pf[i], sizeof(float)), 0) << "float field " << i;
}

TEST(AbiFloor, WorkerAndPackageBuildTheSameParamsAndShape) {
  for (bool bshd_q : {false, true})
    for (int batch : {1, 3})
      for (int seq_q : {1, 200}) {
        BothSides s;
        one_call(bshd_q, batch, seq_q, s);
        const EvoCall worker = worker_device::evo_call(s.problem, false);
        const EvoCall package = evo_attn::call_of(s.call);
        SCOPED_TRACE(testing::Message() << "bshd " << bshd_q << ", batch " << batch << ", seq_q " << seq_q);
        expect_same_params(evo_call_params(worker), evo_call_params(package));
        const EvoShape a = evo_call_shape(worker), b = evo_call_shape(package);
        EXPECT_EQ(std::memcmp(&a, &b, sizeof(a)), 0);
        // The TMA maps' arguments of every tensor, as each side would encode them.
        for (unsigned t = EVO_TMA_Q; t <= EVO_TMA_O; ++t) {
          const EvoTmaSpec spec{t, 64, 128, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B, 0};
          const EvoTmaArgs x = evo_tma_args(spec, worker.tensor[t - 1], parse_task("fp8-d128").dtype_code());
          const EvoTmaArgs y = evo_tma_args(spec, package.tensor[t - 1], s.call.dtype);
          EXPECT_EQ(std::memcmp(&x, &y, sizeof(x)), 0) << "tensor " << t;
          EXPECT_EQ(worker.tensor[t - 1].data, package.tensor[t - 1].data);
        }
      }
  // A size-1 dim's stride is the head dim's on both sides: what the kernels multiply by 0.
  BothSides s;
  one_call(true, 1, 1, s);
  EXPECT_EQ(evo_call_params(worker_device::evo_call(s.problem, false)).q_stride[0], 128);
  EXPECT_EQ(evo_call_params(evo_attn::call_of(s.call)).k_stride[1], 128);
}

// A split workspace reused by launches of changing shapes, simulated byte by byte: a launch
// needs its tile counters at 0 and leaves them so, and dirties everything from its partials'
// offset on. Eager launches run at once; a captured one (clear and launch) runs at each replay.
struct SimulatedWorkspace {
  std::vector<char> dirty;
  EvoWorkspaceUse use;
  bool misread = false;  // a launch found a counter an earlier launch left non-zero
  explicit SimulatedWorkspace(long long bytes) : dirty(size_t(bytes), 0), use(evo_workspace_fresh(bytes)) {}
  struct Launch {
    long long tiles;
    int splits;
    long long clear;
  };
  // capture: the id of the capture the launch is recorded into, 0 for an eager launch.
  Launch enqueue(long long tiles, int splits, unsigned long long capture, bool follow_rule = true) {
    const long long clear = evo_workspace_clear_bytes(use, tiles, splits, 16, 128, capture);
    return {tiles, splits, follow_rule ? clear : 0};
  }
  void run(const Launch& l) {
    std::fill(dirty.begin(), dirty.begin() + l.clear, 0);
    for (long long b = 0; b < l.tiles * 4; ++b) misread |= dirty[size_t(b)] != 0;
    // Only the first bytes can ever be counters (tiles * 4): the simulated buffer stops there.
    const EvoWorkspace w = evo_workspace_layout(l.tiles, l.splits, 16, 128);
    std::fill(dirty.begin() + w.ml_offset, dirty.begin() + std::min<long long>(w.bytes, dirty.size()), 1);
  }
};

TEST(AbiFloor, AReusedSplitWorkspaceClearsTheCountersAnEarlierLaunchDirtied) {
  const long long bytes = 1 << 20;
  // The decode sequence that wrote NaN through the exported op on the H200: few tiles with many
  // splits, then more tiles than the first launch's counters cover (their counters on its partials).
  {
    SimulatedWorkspace without(bytes);
    without.run(without.enqueue(4, 16, 0, false));
    without.run(without.enqueue(66, 4, 0, false));
    EXPECT_TRUE(without.misread) << "the simulation must see the hazard the rule removes";
  }
  SimulatedWorkspace ws(bytes);
  long long cleared = 0;
  const long long tiles[] = {4, 66, 8, 512, 2, 1000, 65, 64, 3000, 1, 129};
  for (long long t : tiles)
    for (int splits : {16, 1, 3}) {
      const auto l = ws.enqueue(t, splits, 0);
      cleared += l.clear;
      ws.run(l);
    }
  EXPECT_FALSE(ws.misread);
  EXPECT_GT(cleared, 0);
  // Once the counters a shape needs are clean, repeating it clears nothing: the eager op keeps
  // its one launch per call.
  ws.run(ws.enqueue(4000, 2, 0));
  const auto again = ws.enqueue(4000, 2, 0);
  EXPECT_EQ(again.clear, 0);
  ws.run(again);
  // A captured launch clears inside the graph every time; replays between eager launches of
  // other shapes never leave counters dirty for either.
  const auto graph = ws.enqueue(200, 4, 1);
  EXPECT_GT(graph.clear, 0);
  for (long long t : {2ll, 300ll, 300ll, 7ll, 300ll}) {
    ws.run(graph);
    ws.run(ws.enqueue(t, 8, 0));
  }
  EXPECT_FALSE(ws.misread);
  // One split: no workspace, nothing cleared or dirtied.
  EXPECT_EQ(ws.enqueue(100000, 1, 0).clear, 0);
}

// A graph of many split launches (a decode step's layers, or calls of several shapes) clears at
// its first launch only, and again only where its own order dirtied a later launch's counters:
// one memset node a graph, not one a layer. Replays of two graphs between eager launches of
// other shapes never find a dirty counter.
TEST(AbiFloor, ACapturedGraphClearsOnceWhereItsOwnOrderLeavesTheCountersClean) {
  SimulatedWorkspace ws(1 << 20);
  ws.run(ws.enqueue(900, 3, 0));  // an eager launch left partials low in the buffer
  std::vector<SimulatedWorkspace::Launch> layers;
  for (int layer = 0; layer < 32; ++layer) layers.push_back(ws.enqueue(64, 16, 7));
  EXPECT_GT(layers[0].clear, 0) << "a replay may follow anything: the first launch clears";
  for (int layer = 1; layer < 32; ++layer) EXPECT_EQ(layers[size_t(layer)].clear, 0) << layer;
  // A second capture: a small shape, then one with more tiles than its counters cover.
  const auto small = ws.enqueue(4, 16, 8);
  const auto large = ws.enqueue(66, 4, 8);
  EXPECT_GT(small.clear, 0);
  EXPECT_GT(large.clear, 0) << "the small launch's partials lie on the large one's counters";
  for (long long eager : {2ll, 3000ll, 66ll, 1ll}) {
    for (const auto& l : layers) ws.run(l);
    ws.run(ws.enqueue(eager, 8, 0));
    ws.run(small);
    ws.run(large);
    ws.run(ws.enqueue(eager, 2, 0));
  }
  EXPECT_FALSE(ws.misread);
  // Without the first launch's clear, a replay after the eager launches misreads.
  SimulatedWorkspace bare(1 << 20);
  bare.run(bare.enqueue(4, 16, 0));
  auto first = bare.enqueue(66, 4, 9);
  first.clear = 0;
  bare.run(first);
  EXPECT_TRUE(bare.misread) << "the simulation must see the hazard the first clear removes";
}

// A package as `evo export` lays it out, with a package_data.cpp for two tasks whose regimes
// dispatch to four kernels (no real cubin: nothing is launched) and a rule of its own bounds.
std::filesystem::path write_package(const RegimeRule& rule) {
  const auto dir = test::scratch_dir("abi-floor-package");
  for (const auto& [rel, data] : package_runtime_files(test::source_root())) test::write_text(dir / rel, data);
  PackageData d;
  d.gpu = "nvidia-h200";
  d.rule = rule;
  for (int i = 0; i < 4; ++i) {
    PackageKernelData k;
    k.name = "k" + std::to_string(i);
    k.label = "label " + std::to_string(i);
    k.candidate_id = "c" + std::to_string(i);
    k.cubin = "not a cubin";
    k.launch = EvoLaunch{128, 1000, 64, 1, 0, EVO_ABI_VERSION, 0, 0, 0};
    k.tma = {EvoTmaSpec{EVO_TMA_Q, 64, 64, 3, 2, 0}, {}, {}, {}};
    d.kernels.push_back(k);
  }
  d.tasks.push_back({parse_task("fp16-d64"), {0, 1, 2, 3}});
  d.tasks.push_back({parse_task("bf16-d128-causal"), {3, 2, 1, 0}});
  test::write_text(dir / "src" / "package_data.cpp", package_data_source(d));
  return dir;
}

TEST(AbiFloor, ExportedPackageBuildsAgainstTheFloorAndDispatchesByItsRule) {
  const auto pkg = write_package(kCustom);
  // Every header the runtime includes is in the package: its own, or the floor's copy in kernels/.
  for (const char* h : {"evo_launch.h", "evo_host_launch.h", "evo_regime.h"})
    EXPECT_TRUE(std::filesystem::is_regular_file(pkg / "kernels" / h)) << h;
  const auto build =
      test::run_shell("cmake -S " + test::shell_quote(pkg) + " -B " + test::shell_quote(pkg / "build") +
                      " -DCMAKE_BUILD_TYPE=Release -DEVO_ATTN_TORCH_OP=OFF > /dev/null && cmake --build " +
                      test::shell_quote(pkg / "build") + " -j 2 2>&1 | tail -20");
  ASSERT_EQ(build.exit_code, 0) << build.out;
  void* lib = dlopen((pkg / "build" / "libevo_attn.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using PlanCall = int (*)(const evo_attn_call*, evo_attn_plan*, char*, size_t);
  using RegimeName = const char* (*)(int);
  auto plan_call = reinterpret_cast<PlanCall>(dlsym(lib, "evo_attn_plan_call"));
  auto regime_name_of = reinterpret_cast<RegimeName>(dlsym(lib, "evo_attn_regime_name"));
  ASSERT_TRUE(plan_call && regime_name_of);
  for (int i = 0; i < kRegimes; ++i) EXPECT_STREQ(regime_name_of(i), regime_name(Regime(i)));
  // Calls across the rule's bounds: the package picks evo's regime, and its kernel from the table.
  for (long long batch : {1, 2, 40})
    for (long long heads : {1, 8, 32})
      for (long long seq : {1, 4, 5, 100, 512, 513, 2000}) {
        evo_attn_call c{};
        const uint64_t gap = 1ull << 36;
        evo_attn_tensor* tensors[4] = {&c.q, &c.k, &c.v, &c.o};
        for (int t = 0; t < 4; ++t) {
          *tensors[t] = {
              (1ull << 40) + uint64_t(t) * gap, {batch, heads, seq, 64}, {heads * seq * 64, seq * 64, 64, 1}};
        }
        c.dtype = c.out_dtype = EVO_ATTN_FP16;
        c.scale = 0.125f;
        c.q_descale = c.k_descale = c.v_descale = 1.0f;
        evo_attn_plan p{};
        char message[512] = {};
        ASSERT_EQ(plan_call(&c, &p, message, sizeof(message)), EVO_ATTN_OK) << message;
        const int want = int(regime_of(kCustom, batch, heads, seq));
        EXPECT_EQ(p.regime, want) << batch << "x" << heads << "x" << seq;
        EXPECT_EQ(p.kernel, want);  // fp16-d64 dispatches regime i to kernel i
        EXPECT_EQ(p.tiles, (seq + 63) / 64 * heads * batch);
      }
  dlclose(lib);
}

}  // namespace
}  // namespace evo
