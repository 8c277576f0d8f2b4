// Records, populations, atomic writes, locks, output checks, ptxas and cubin parsing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <thread>

#include "compile/cubin.h"
#include "compile/ptxas_report.h"
#include "compile/resources.h"
#include "compile/source_policy.h"
#include "core/errors.h"
#include "gates/correctness.h"
#include "gpu/worker_protocol.h"
#include "store/atomic_file.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

json store_record(const std::string& id, const std::string& variant, int stage, double fitness,
                  const std::string& outcome = "ok", const std::string& time = "2026-11-21T00:00:00Z") {
  json r = {
      {"schema_version", "1.0"},
      {"kind", "run"},
      {"run_id", "r1"},
      {"time", time},
      {"candidate_id", id},
      {"variant", variant},
      {"stage", stage},
      {"parent", nullptr},
      {"source_path", "variants/x.cu"},
      {"source_sha256", "sha-" + id},  // one candidate per id
      {"params", {{"BLOCK_M", 64}}},
      {"task", "fp16-d64"},
      {"outcome", outcome},
      {"reason", ""},
      {"env", {{"gpu", "NVIDIA H200"}, {"gpu_key", "nvidia-h200"}}},
      {"timing", json::array({{{"shape", "1x8x8x512x512x64"}, {"median_us", fitness}, {"p90_us", fitness * 1.01}}})}};
  r["fitness"] =
      outcome == "ok"
          ? json{{"geomean_median_us", fitness}, {"geomean_p90_us", fitness * 1.01}, {"shapes", 1}, {"complete", true}}
          : json(nullptr);
  return r;
}

TEST(Records, ValidateAndReportBadLines) {
  RecordSet rs;
  const std::string good = store_record("a", "0-x/v", 0, 10).dump();
  parse_records_text(good + "\n{not json}\n" + json{{"schema_version", "2.0"}}.dump() + "\n" + good.substr(0, 40),
                     "f.jsonl", rs);
  EXPECT_EQ(rs.records.size(), 1u);
  ASSERT_EQ(rs.problems.size(), 2u);
  EXPECT_NE(rs.problems[0].find("f.jsonl:2"), std::string::npos);
  EXPECT_NE(rs.problems[1].find("not 1.x"), std::string::npos);
  ASSERT_EQ(rs.warnings.size(), 1u);  // the torn last line
  EXPECT_NE(rs.warnings[0].find("torn"), std::string::npos);
}

// Packed records (scripts/pack_results.sh): a folder of *.jsonl and *.jsonl.gz reads as one, in
// file-name order; a cut-off archive is an error that names it, never records silently lost.
TEST(Records, PackedFilesReadLikePlainOnes) {
  auto dir = test::scratch_dir("packed");
  const std::string a = store_record("a", "0-x/v", 0, 10).dump() + "\n",
                    b = store_record("b", "0-x/w", 0, 9).dump() + "\n";
  test::write_text(dir / "1-first.jsonl", a);
  std::string packed_b;
  {
    gzFile out = gzopen((dir / "2-second.jsonl.gz").c_str(), "wb9");
    ASSERT_NE(out, nullptr);
    for (int i = 0; i < 200; ++i) ASSERT_EQ(gzwrite(out, b.data(), unsigned(b.size())), int(b.size()));
    ASSERT_EQ(gzclose(out), Z_OK);
    packed_b = test::read_text(dir / "2-second.jsonl.gz");
  }
  test::write_text(dir / "notes.txt", "not records");
  EXPECT_TRUE(is_records_file("x/2-second.jsonl.gz"));
  EXPECT_FALSE(is_records_file("x/notes.txt"));
  EXPECT_FALSE(is_records_file("x/peers.json.gz"));
  RecordSet rs = read_records(dir);
  EXPECT_TRUE(rs.problems.empty());
  ASSERT_EQ(rs.records.size(), 201u);
  EXPECT_EQ(rs.records.front()["candidate_id"], "a");
  EXPECT_EQ(rs.records.back()["candidate_id"], "b");
  EXPECT_LT(packed_b.size(), b.size() * 200 / 20);  // what packing is for
  // The same archive cut in half: an error naming it, not 100 records quietly missing.
  test::write_text(dir / "2-second.jsonl.gz", packed_b.substr(0, packed_b.size() / 2));
  try {
    read_records(dir);
    FAIL() << "a cut-off archive read without complaint";
  } catch (const EvoError& e) {
    EXPECT_NE(std::string(e.what()).find("2-second.jsonl.gz"), std::string::npos) << e.what();
  }
}

TEST(Population, TopThreeLatestOkOnly) {
  std::vector<json> recs{store_record("a", "0-x/v", 0, 30), store_record("b", "0-x/v", 0, 10),
                         store_record("c", "0-x/v", 0, 20), store_record("d", "0-x/v", 0, 5, "correctness"),
                         store_record("e", "0-x/v", 0, 40), store_record("f", "1-y/w", 1, 7)};
  // A newer record of "b" that failed replaces its older success.
  recs.push_back(store_record("b", "0-x/v", 0, 10, "crash", "2026-11-22T00:00:00Z"));
  auto pops = derive_populations(recs);
  ASSERT_EQ(pops.size(), 1u);
  const Population& p = pops.at("nvidia-h200/fp16-d64");
  auto s0 = stage_elites(p, 0);
  ASSERT_EQ(s0.size(), 3u);
  EXPECT_EQ(s0[0].candidate_id, "c");
  EXPECT_EQ(s0[1].candidate_id, "a");
  EXPECT_EQ(s0[2].candidate_id, "e");
  EXPECT_EQ(stage_elites(p, 1).size(), 1u);
  // Pure function: the same records in another order give the same bytes.
  std::reverse(recs.begin(), recs.end());
  EXPECT_EQ(population_json(derive_populations(recs).at("nvidia-h200/fp16-d64")).dump(), population_json(p).dump());
}

// A sanitizer report keeps a candidate out until a later sanitized run passes: a later run
// without --sanitize (or an evo gate re-measure) is ok but cannot clear it.
TEST(Population, ASanitizerReportOutlastsLaterUnsanitizedRuns) {
  auto with_sanitizer = [](json r, bool pass) {
    r["gates"] = {{"sanitizer", {{"pass", pass}}}};
    if (!pass) {
      r["outcome"] = "sanitizer";
      r["fitness"] = nullptr;
    }
    return r;
  };
  const json reported = with_sanitizer(store_record("a", "0-x/v", 0, 10, "ok", "2026-11-21T01:00:00Z"), false);
  const json later_plain = store_record("a", "0-x/v", 0, 10, "ok", "2026-11-21T02:00:00Z");
  const json other = store_record("b", "0-x/v", 0, 20);
  auto ids = [](const std::vector<json>& recs) {
    std::vector<std::string> out;
    for (const auto& e : stage_elites(derive_populations(recs).at("nvidia-h200/fp16-d64"), 0))
      out.push_back(e.candidate_id.value_or(""));
    return out;
  };
  EXPECT_EQ(ids({reported, later_plain, other}), std::vector<std::string>{"b"});
  // Order of the lines does not matter, only time.
  EXPECT_EQ(ids({later_plain, other, reported}), std::vector<std::string>{"b"});
  // A later sanitized pass clears it; the latest record (plain, ok) is the one ranked.
  const json cleared = with_sanitizer(store_record("a", "0-x/v", 0, 12, "ok", "2026-11-21T01:30:00Z"), true);
  EXPECT_EQ(ids({reported, cleared, later_plain, other}), (std::vector<std::string>{"a", "b"}));
  // Never sanitized: ranked as before.
  EXPECT_EQ(ids({later_plain, other}), (std::vector<std::string>{"a", "b"}));
}

// A record with correctness checks of the given gate sets ("small" alone: a reduced gate, as
// `evo eval --quick` and `evo evolve`'s screen run) under the given benchmark label.
json gated(json r, const std::vector<std::string>& sets, const std::string& benchmark) {
  json checks = json::array();
  for (const auto& set : sets) checks.push_back({{"case", set + "/1x8x8x512x512x64/s0/normal"}, {"pass", true}});
  r["gates"] = {{"correctness", {{"pass", r["outcome"] == "ok"}, {"checks", checks}}}};
  r["benchmark"] = benchmark;
  return r;
}

// The same, and its code passed the deep tier too (what a regime needs to ship it).
json deep_gated(json r, const std::vector<std::string>& sets, const std::string& benchmark) {
  r = gated(std::move(r), sets, benchmark);
  r["gates"]["deep"] = {{"pass", true}, {"checks", {{{"case", "deep/1/1x8x8x512x512x64/s0/normal"}, {"pass", true}}}}};
  return r;
}

// Red-team finding: a screen's ok (small gate, benchmark "screen-...") outlived the full gate's
// correctness failure of the same code and made it a regime kernel that `evo export` ships.
TEST(Population, AKernelShownWrongLeavesEveryBenchmarkSetUntilAFullGatePasses) {
  const std::vector<std::string> full = {"small", "mission", "ragged"};
  const json screen = gated(store_record("x", "0-x/v", 0, 5, "ok", "2026-11-21T01:00:00Z"), {"small"}, "screen-abc");
  // Any positive time: a record with a zero time is refused at read (store/record_values.h).
  const json failed = gated(store_record("x", "0-x/v", 0, 5, "correctness", "2026-11-21T02:00:00Z"), full, "default");
  const json elite = deep_gated(store_record("y", "0-x/v", 0, 10), full, "default");
  auto regime_kernels = [](const std::map<std::string, Population>& pops) {
    std::vector<std::string> out;
    for (const auto& k : pops.at("nvidia-h200/fp16-d64").regimes->kernels) out.push_back(k.candidate_id);
    return out;
  };
  auto pops = derive_populations({screen, failed, elite});
  EXPECT_EQ(pops.count("nvidia-h200/fp16-d64@screen-abc"), 0u) << "x is wrong: no population of any set holds it";
  EXPECT_EQ(regime_kernels(pops), std::vector<std::string>{"y"});
  // A later full gate that passes (a fixed gate bug, say) brings it back, with its new times.
  const json passed = deep_gated(store_record("x", "0-x/v", 0, 6, "ok", "2026-11-21T03:00:00Z"), full, "default");
  pops = derive_populations({screen, failed, elite, passed});
  EXPECT_EQ(stage_elites(pops.at("nvidia-h200/fp16-d64"), 0)[0].candidate_id, "x");
  EXPECT_EQ(regime_kernels(pops), std::vector<std::string>{"x"});
  // A later screen's ok is no verdict: it cannot clear the failure.
  const json rescreened =
      gated(store_record("x", "0-x/v", 0, 5, "ok", "2026-11-21T04:00:00Z"), {"small"}, "screen-abc");
  pops = derive_populations({screen, failed, elite, rescreened});
  EXPECT_EQ(pops.count("nvidia-h200/fp16-d64@screen-abc"), 0u);
}

// Only records that passed the full gate compete for a regime: a quick look (`evo eval --quick`,
// the small gate alone) that timed a shape faster than the elite picks no exported kernel.
TEST(Population, RegimeKernelsComeFromFullGateRecordsOnly) {
  const std::vector<std::string> full = {"small", "mission", "ragged"};
  const json quick = gated(store_record("q", "0-x/v", 0, 5), {"small"}, "custom-0eebb074");
  const json elite = deep_gated(store_record("y", "0-x/v", 0, 10), full, "default");
  const auto pops = derive_populations({quick, elite});
  std::vector<std::string> kernels;
  for (const auto& k : pops.at("nvidia-h200/fp16-d64").regimes->kernels) kernels.push_back(k.candidate_id);
  EXPECT_EQ(kernels, std::vector<std::string>{"y"});
  EXPECT_EQ(pops.count("nvidia-h200/fp16-d64@custom-0eebb074"), 1u) << "its own benchmark set still ranks it";
}

// Issue 29: what ships must have passed the deep tier. A faster kernel that passed the full gate
// but never the deep tier ranks in its stage, yet no regime dispatches to it, nor is it the
// default; one deep pass of the same code (any benchmark set) makes it shippable; with no
// deep-gated kernel at all the table has none and `evo export` refuses the task.
TEST(Population, OnlyDeepGatedKernelsShip) {
  const std::vector<std::string> full = {"small", "mission", "ragged"};
  const json fast = gated(store_record("f", "0-x/v", 0, 5), full, "default");
  const json slow = deep_gated(store_record("s", "0-x/v", 0, 10), full, "default");
  auto shipped = [](const Population& p) {
    std::vector<std::string> out;
    for (const auto& k : p.regimes->kernels) out.push_back(k.candidate_id);
    return out;
  };
  auto pops = derive_populations({fast, slow});
  const Population& pop = pops.at("nvidia-h200/fp16-d64");
  EXPECT_EQ(stage_elites(pop, 0)[0].candidate_id, "f") << "it still ranks first in its stage";
  EXPECT_EQ(shipped(pop), std::vector<std::string>{"s"});
  EXPECT_EQ(pop.regimes->default_kernel, "s");
  // The deep tier passed once, on another benchmark set (a remeasure): now it ships.
  const json regated =
      deep_gated(store_record("f", "0-x/v", 0, 5, "ok", "2026-11-21T03:00:00Z"), full, "custom-0eebb074");
  pops = derive_populations({fast, slow, regated});
  EXPECT_EQ(shipped(pops.at("nvidia-h200/fp16-d64")), std::vector<std::string>{"f"});
  // No deep-gated kernel at all: no regime has a kernel.
  pops = derive_populations({fast});
  EXPECT_TRUE(shipped(pops.at("nvidia-h200/fp16-d64")).empty());
  EXPECT_FALSE(pops.at("nvidia-h200/fp16-d64").regimes->default_kernel.has_value());
  for (const auto& row : pops.at("nvidia-h200/fp16-d64").regimes->table) EXPECT_FALSE(row.kernel.has_value());
}

// A refresh rewrites only the populations that changed: the same text leaves the file alone.
TEST(Population, TheSameTextIsNotWrittenAgain) {
  auto dir = test::scratch_dir("pop-unchanged");
  auto pops = derive_populations({store_record("a", "0-x/v", 0, 3)});
  write_population(dir, pops.begin()->second);
  const auto file = dir / "nvidia-h200" / "fp16-d64.json";
  const auto old_time = std::filesystem::file_time_type::clock::now() - std::chrono::hours(24);
  std::filesystem::last_write_time(file, old_time);
  write_population(dir, pops.begin()->second);
  EXPECT_EQ(std::filesystem::last_write_time(file), old_time) << "an unchanged population was written again";
  pops = derive_populations({store_record("a", "0-x/v", 0, 3), store_record("b", "0-x/v", 0, 2)});
  write_population(dir, pops.begin()->second);
  EXPECT_NE(std::filesystem::last_write_time(file), old_time);
  EXPECT_EQ(population_json(read_population(file)), population_json(pops.begin()->second));
}

TEST(Population, WriteReadAndRefuseBadFiles) {
  auto dir = test::scratch_dir("pop");
  auto pops = derive_populations({store_record("a", "0-x/v", 0, 3)});
  write_population(dir, pops.begin()->second);
  const auto file = dir / "nvidia-h200" / "fp16-d64.json";
  const Population back = read_population(file);
  EXPECT_EQ(population_json(back), population_json(pops.begin()->second));
  test::write_text(file, "{\"schema_version\": \"2.0\", \"gpu\": \"g\", \"task\": \"t\", \"stages\": {}}");
  try {
    read_population(file);
    FAIL() << "future major accepted";
  } catch (const EvoError& e) {
    EXPECT_NE(std::string(e.what()).find("population rebuild"), std::string::npos);
  }
  test::write_text(file, "{\"schema_version\": \"1.7\", \"gpu\": \"g\", \"task\": \"t\", \"stages\": {}}");
  std::string warning;
  read_population(file, &warning);
  EXPECT_NE(warning.find("newer"), std::string::npos);
  test::write_text(file, "{\"schema_ver");
  EXPECT_THROW(read_population(file), EvoError);
}

TEST(AtomicFile, ReplacesWholeAndAppendsDurably) {
  auto dir = test::scratch_dir("atomic");
  write_file_atomic(dir / "f", "one");
  write_file_atomic(dir / "f", "two");
  EXPECT_EQ(test::read_text(dir / "f"), "two");
  size_t leftovers = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) leftovers += e.path().filename() != "f";
  EXPECT_EQ(leftovers, 0u);
  // A torn line left by a dead writer (never reported written) is cut off before the next
  // record, so it cannot stay behind as a bad line in the middle of the log.
  test::write_text(dir / "r.jsonl", "{\"a\":1}\n{\"torn\":");
  append_line_durable(dir / "r.jsonl", "{\"ok\":1}");
  EXPECT_EQ(test::read_text(dir / "r.jsonl"), "{\"a\":1}\n{\"ok\":1}\n");
  // Torn as the only content, and torn longer than one read chunk.
  test::write_text(dir / "r.jsonl", "{\"torn\": \"" + std::string(10000, 'x'));
  append_line_durable(dir / "r.jsonl", "{\"ok\":2}");
  EXPECT_EQ(test::read_text(dir / "r.jsonl"), "{\"ok\":2}\n");
  // A complete record that only lacks its newline (edited by hand) is kept.
  test::write_text(dir / "r.jsonl", "{\"a\":1}\n{\"b\":2}");
  append_line_durable(dir / "r.jsonl", "{\"ok\":3}");
  EXPECT_EQ(test::read_text(dir / "r.jsonl"), "{\"a\":1}\n{\"b\":2}\n{\"ok\":3}\n");
}

TEST(AtomicFile, ConcurrentAppendersLoseNothing) {
  auto file = test::scratch_dir("appenders") / "r.jsonl";
  constexpr int kProcs = 8, kLines = 200;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < kLines; ++i) append_line_durable(file, std::string(100 + p, char('a' + p)));
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT_EQ(st, 0);
  }
  std::string text = test::read_text(file);
  size_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(lines, size_t(kProcs * kLines));
  // Every line is whole: one writer's characters only, at that writer's length.
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.size(), size_t(100 + (line[0] - 'a')));
    EXPECT_EQ(line.find_first_not_of(line[0]), std::string::npos);
    start = end + 1;
  }
}

TEST(OutputCheck, ClassifiesUnwrittenNanAndTolerance) {
  const Tolerance tol{1e-3, 1e-3, 1e-3};
  std::vector<float> ref{0.5f, -0.25f, 1.0f, 0.125f};
  std::string ref_bytes(reinterpret_cast<const char*>(ref.data()), ref.size() * 4);
  auto half = [](std::vector<uint16_t> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
  };
  // fp16 bits of 0.5, -0.25, 1.0, 0.125
  auto exact = check_output(half({0x3800, 0xB400, 0x3C00, 0x3000}), ref_bytes, DType::fp16, tol);
  EXPECT_TRUE(exact.pass) << exact.reason;
  auto unwritten = check_output(half({0x3800, kPoisonBits, 0x3C00, 0x3000}), ref_bytes, DType::fp16, tol);
  EXPECT_FALSE(unwritten.pass);
  EXPECT_EQ(unwritten.unwritten, 1u);
  auto nan = check_output(half({0x3800, 0x7E00, 0x3C00, 0x3000}), ref_bytes, DType::fp16, tol);
  EXPECT_EQ(nan.nonfinite, 1u);
  auto off = check_output(half({0x3800, 0xB400, 0x3C03, 0x3000}), ref_bytes, DType::fp16, tol);  // 1 + 3·2^-10
  EXPECT_FALSE(off.pass);
  EXPECT_EQ(off.bad, 1u);
  EXPECT_FLOAT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_FLOAT_EQ(half_bits_to_float(0x0001), 5.9604645e-8f);  // smallest subnormal
}

TEST(PtxasReport, ParsesEntryResources) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'evo_attn_fwd' for 'sm_90a'\n"
      "ptxas info    : Function properties for evo_attn_fwd\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 1280 bytes cmem[0]\n";
  auto r = parse_ptxas_report(log);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->registers, 168);
  EXPECT_EQ(r->stack_bytes, 16);
  EXPECT_EQ(r->spill_stores, 8);
  EXPECT_EQ(r->spill_loads, 12);
  EXPECT_EQ(r->static_smem, 1024);
  EXPECT_FALSE(r->wgmma_serialized);
  EXPECT_FALSE(parse_ptxas_report("no report"));
  auto w = parse_ptxas_report(log + "ptxas warning : (C7515) wgmma.mma_async instructions are serialized due to ...\n");
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->wgmma_serialized);
}

TEST(ResourceGate, RejectsSpillsAndOverCaps) {
  ResourceCaps caps{255, 232448, 1024, 0, 0};
  LaunchGeometry g{128, 65536, 64, 1, 0, 1, 0, 0, 0};
  PtxasResources ok{128, 0, 0, 0, 0, 1, false};
  EXPECT_FALSE(check_resources(ok, g, caps));
  auto spill = ok;
  spill.spill_stores = 4;
  EXPECT_NE(check_resources(spill, g, caps)->find("spill"), std::string::npos);
  auto big = g;
  big.smem_bytes = 240000;
  EXPECT_NE(check_resources(ok, big, caps)->find("shared memory"), std::string::npos);
  auto ser = ok;
  ser.wgmma_serialized = true;
  EXPECT_TRUE(check_resources(ser, g, caps));
  auto odd = g;
  odd.threads = 100;
  EXPECT_TRUE(check_resources(ok, odd, caps));
}

TEST(SourcePolicy, OnlyEvoHeaders) {
  SourcePolicy pol;
  EXPECT_FALSE(check_source("#include \"evo_attn.cuh\"\n#include <mma.h>\n", pol));
  // The shared device primitives beside evo_attn.cuh (variants/common) are evo's too.
  EXPECT_FALSE(check_source("#include \"evo_mma.cuh\"\n#include \"evo_split_kv.cuh\"\n", pol));
  EXPECT_TRUE(check_source("#include \"evo_host_launch.h\"\n", pol)) << "host code is not for kernels";
  for (const char* bad :
       {"#include \"/etc/passwd\"\n", "#  include </etc/passwd>\n", "#define P \"/etc/passwd\"\n#include P\n",
        "%:include \"/etc/passwd\"\n", "#inc\\\nlude \"/etc/passwd\"\n", "#if __has_include(\"/etc/x\")\n#endif\n",
        "#include_next <x.h>\n", "#embed \"/etc/passwd\"\n"})
    EXPECT_TRUE(check_source(bad, pol)) << bad;
  EXPECT_TRUE(check_source(std::string("int x;\0", 7), pol));
  pol.max_bytes = 10;
  EXPECT_TRUE(check_source(std::string(11, 'x'), pol));
}

TEST(SanitizeLog, ValidUtf8AndCapped) {
  std::string s = sanitize_log("ok \xff\xfe bad \xc3\xa9 \x01", 1000);
  EXPECT_EQ(s, "ok \xEF\xBF\xBD\xEF\xBF\xBD bad \xc3\xa9 ");
  EXPECT_LE(sanitize_log(std::string(5000, 'a'), 100).size(), 120u);
}

}  // namespace
}  // namespace evo
