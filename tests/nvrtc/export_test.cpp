// `evo export` with NVRTC and no GPU: the committed records' per-regime elites written as a
// package (layout, manifest, kernels as recorded), the package built with CMake, found by a
// consumer through find_package, and its C library's dispatch and refusals checked through the
// Python binding (tests/deploy/test_native.py; no PyTorch needed). Bad command lines exit 1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kTasks = "fp16-d64,fp16-d128-causal,fp8-d64";

// Populations derived from the committed records (so the test does not depend on populations/).
fs::path derived_populations() {
  static const fs::path dir = [] {
    const fs::path d = scratch_dir("export-populations");
    const auto r = run_evo("population rebuild --results-dir " + shell_quote(committed_results()) +
                           " --populations-dir " + shell_quote(d));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return d;
  }();
  return dir;
}

// One export for every test of this file.
const fs::path& exported() {
  static const fs::path out = [] {
    const fs::path o = scratch_dir("export-package") / "pkg";
    // No git on PATH: the committed tree holds every elite's source (variants/ or results/sources/).
    const auto r = run_evo(std::string("export --task ") + kTasks + " --gpu nvidia-h200 --out " + shell_quote(o) +
                               " --populations-dir " + shell_quote(derived_populations()),
                           "PATH=/nonexistent");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("wrote "), std::string::npos) << r.out;
    return o;
  }();
  return out;
}

json population(const std::string& task) {
  return json::parse(read_text(derived_populations() / "nvidia-h200" / (task + ".json")));
}

TEST(ExportCli, LayoutAndManifestFollowThePopulations) {
  const fs::path& pkg = exported();
  for (const char* f : {"CMakeLists.txt", "README.md", "include/evo_attn.h", "src/package.h", "src/plan.cpp",
                        "src/launch.cpp", "src/driver.cpp", "src/api.cpp", "src/package_data.cpp",
                        "cmake/EvoAttnConfig.cmake.in", "python/evo_attn/__init__.py", "python/evo_attn/_native.py",
                        "python/evo_attn/_op.py", "kernels/evo_attn.cuh", "manifest.json"})
    EXPECT_TRUE(fs::is_regular_file(pkg / f)) << f;
  const json m = json::parse(read_text(pkg / "manifest.json"));
  EXPECT_EQ(m["format"], "evo-export-1");
  EXPECT_EQ(m["gpu"], "nvidia-h200");
  EXPECT_EQ(m["arch"], "sm_90a");
  ASSERT_EQ(m["tasks"].size(), 3u);
  for (const auto& t : m["tasks"]) {
    const json table = population(t["task"])["regimes"]["table"];
    for (const auto& row : table) {
      const json& d = t["dispatch"][row["regime"].get<std::string>()];
      const auto k = std::find_if(m["kernels"].begin(), m["kernels"].end(),
                                  [&](const json& x) { return x["name"] == d["kernel"]; });
      ASSERT_NE(k, m["kernels"].end());
      EXPECT_EQ((*k)["candidate_id"], row["kernel"]) << t["task"] << " " << row["regime"];
      EXPECT_EQ(d["choice"], row["choice"]);
    }
  }
  for (const auto& k : m["kernels"]) {
    const std::string cubin = read_text(pkg / k["cubin"].get<std::string>());
    EXPECT_EQ(sha256_hex(cubin), k["cubin_sha256"].get<std::string>());
    EXPECT_EQ(cubin.substr(1, 3), "ELF");
    // The source is the recorded one: the file after the #line is what the records hashed.
    const std::string src = read_text(pkg / k["source"].get<std::string>());
    const size_t line = src.find("#line 1 \"");
    ASSERT_NE(line, std::string::npos);
    EXPECT_EQ(sha256_hex(src.substr(src.find('\n', line) + 1)), k["source_sha256"].get<std::string>()) << k["name"];
    EXPECT_EQ(k["source_origin"].get<std::string>().rfind("git ", 0), std::string::npos) << k["source_origin"];
    EXPECT_FALSE(k["launch"]["threads"].get<int>() == 0);
    // Stages 7 and 8 are TMA kernels; stage 9's split_kv (cp.async, sm_80 and up) ships PTX too.
    if (const int stage = k["stage"].get<int>(); stage == 7 || stage == 8) {
      EXPECT_FALSE(k["tma"].empty()) << "TMA stages export their tensor maps";
      EXPECT_TRUE(k["ptx"].is_null()) << "sm_90a-only kernels ship no portable PTX";
    }
  }
  const std::string data = read_text(pkg / "src" / "package_data.cpp");
  EXPECT_NE(data.find("const Package kPackage = {\"nvidia-h200\", 90, \"sm_90a\", {16, 1024, 128LL}"),
            std::string::npos);
}

TEST(ExportCli, PackageBuildsWithCMakeAndServesFindPackage) {
  const fs::path& pkg = exported();
  auto build = run_shell("cmake -S " + shell_quote(pkg) + " -B " + shell_quote(pkg / "build") +
                         " -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build " + shell_quote(pkg / "build") +
                         " -j 2 2>&1 | tail -5");
  ASSERT_EQ(build.exit_code, 0) << build.out;
  ASSERT_TRUE(fs::exists(pkg / "build" / "libevo_attn.so"));
  // A consumer project: find_package(EvoAttn) from the build tree, a C program, one plan.
  const fs::path app = scratch_dir("export-consumer");
  write_text(app / "CMakeLists.txt",
             "cmake_minimum_required(VERSION 3.18)\nproject(consumer C)\nfind_package(EvoAttn REQUIRED)\n"
             "add_executable(consumer main.c)\ntarget_link_libraries(consumer PRIVATE EvoAttn::evo_attn)\n");
  write_text(app / "main.c",
             "#include <evo_attn.h>\n#include <stdio.h>\n"
             "static evo_attn_tensor t(unsigned long long a, long long h, long long s) {\n"
             "  evo_attn_tensor x = {a, {1, h, s, 64}, {h * s * 64, s * 64, 64, 1}}; return x; }\n"
             "int main(void) {\n  evo_attn_call c = {0};\n  char msg[512];\n  evo_attn_plan p;\n"
             "  c.q = t(1ull << 40, 8, 512); c.k = t(2ull << 40, 8, 512); c.v = t(3ull << 40, 8, 512);\n"
             "  c.o = t(4ull << 40, 8, 512); c.scale = 0.125f; c.q_descale = c.k_descale = c.v_descale = 1;\n"
             "  if (evo_attn_plan_call(&c, &p, msg, sizeof msg)) { puts(msg); return 1; }\n"
             "  printf(\"%s %s %s\\n\", p.task, evo_attn_regime_name(p.regime), evo_attn_kernel_name(p.kernel));\n"
             "  c.q.size[3] = c.k.size[3] = c.v.size[3] = c.o.size[3] = 80;\n  evo_attn_plan_call(&c, &p, msg, sizeof "
             "msg);\n  puts(msg);\n  return 0;\n}\n");
  auto consumer = run_shell("cmake -S " + shell_quote(app) + " -B " + shell_quote(app / "build") +
                            " -DCMAKE_PREFIX_PATH=" + shell_quote(pkg / "build") + " > /dev/null && cmake --build " +
                            shell_quote(app / "build") + " > /dev/null && " + shell_quote(app / "build" / "consumer"));
  ASSERT_EQ(consumer.exit_code, 0) << consumer.out;
  const json m = json::parse(read_text(pkg / "manifest.json"));
  const std::string kernel = m["tasks"][0]["dispatch"]["short"]["kernel"];
  EXPECT_NE(consumer.out.find("fp16-d64 short " + kernel), std::string::npos) << consumer.out;
  EXPECT_NE(consumer.out.find("evo_attn: head_dim: q.size(3) = 80"), std::string::npos) << consumer.out;
  // The C library through the Python binding, without PyTorch.
  auto py = run_shell("EVO_ATTN_LIBRARY=" + shell_quote(pkg / "build" / "libevo_attn.so") + " python3 " +
                      shell_quote(source_root() / "tests" / "deploy" / "test_native.py") + " " + shell_quote(pkg));
  EXPECT_EQ(py.exit_code, 0) << py.out;
  EXPECT_NE(py.out.find("OK"), std::string::npos) << py.out;
}

TEST(ExportCli, BadCommandLinesNameWhatToFix) {
  const fs::path dir = scratch_dir("export-bad");
  const std::string pops = " --populations-dir " + shell_quote(derived_populations());
  auto r = run_evo("export --task fp16-d96 --out " + shell_quote(dir / "a") + pops);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // A task of evo's with no population in the folder (every task has one in the records now).
  write_text(dir / "one" / "nvidia-h200" / "fp16-d64.json", population("fp16-d64").dump(2));
  r = run_evo("export --task bf16-d64 --out " + shell_quote(dir / "a") + " --populations-dir " +
              shell_quote(dir / "one"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--task bf16-d64: no population for nvidia-h200"), std::string::npos) << r.out;
  write_text(dir / "full" / "notes.txt", "mine");
  r = run_evo("export --task fp16-d64 --out " + shell_quote(dir / "full") + pops);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not empty and holds no earlier export"), std::string::npos) << r.out;
  EXPECT_EQ(read_text(dir / "full" / "notes.txt"), "mine");
  // A population written before the regimes existed.
  json old = population("fp16-d64");
  old.erase("regimes");
  write_text(dir / "old" / "nvidia-h200" / "fp16-d64.json", old.dump(2));
  r = run_evo("export --task fp16-d64 --out " + shell_quote(dir / "b") + " --populations-dir " +
              shell_quote(dir / "old"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no regimes table (derive it again from the records: `evo population rebuild`)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run_evo("export --task fp16-d64" + pops).exit_code, 1);
}

}  // namespace
}  // namespace evo::test
