// What the compile cache keeps and what a cubin says it runs, on real NVRTC output: the SASS
// technique counts live in the cache entry (a warm compile runs no nvdisasm), and
// compile.code_sha256 is the same for sources that differ only in text, not in code.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "evolve/novelty.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

using nlohmann::json;

std::vector<json> records(const std::string& out) {
  std::vector<json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') v.push_back(json::parse(line));
  return v;
}

TEST(CompileCache, KeepsTheTechniqueCountsSoAWarmCompileRunsNoDisassembler) {
  const std::string args =
      "compile --stage 7 --task fp16-d128 --sample 1 --json --cache-dir " + shell_quote(scratch_dir("cache-technique"));
  const auto cold = run_evo(args);
  ASSERT_EQ(cold.exit_code, 0) << cold.out.substr(0, 2000);
  // Stage 7 requires technique counts: without a disassembler only the cache can give them.
  const auto warm = run_evo(args, "EVO_NVDISASM=/nonexistent/nvdisasm");
  ASSERT_EQ(warm.exit_code, 0) << warm.out.substr(0, 2000);
  const auto a = records(cold.out), b = records(warm.out);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]["outcome"] != "ok") continue;
    EXPECT_TRUE(b[i]["compile"]["cached"].get<bool>());
    EXPECT_EQ(b[i]["outcome"], "ok") << b[i]["reason"];
    EXPECT_EQ(b[i]["compile"]["technique"], a[i]["compile"]["technique"]);
    EXPECT_GT(b[i]["compile"]["technique"]["UTMALDG"].get<long>(), 0);
    EXPECT_EQ(b[i]["compile"]["code_sha256"], a[i]["compile"]["code_sha256"]);
  }
}

TEST(CodeIdentity, ARecordFromBeforeTheHashIsKnownByItsCachedCubin) {
  const auto cache = scratch_dir("code-identity-backfill");
  const auto r = run_evo("compile --stage 5 --task fp16-d64 --sample 1 --json --cache-dir " + shell_quote(cache));
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  const json compiled = records(r.out).at(0)["compile"];
  // A record written before compile.code_sha256 existed: only its cache key.
  auto old_record = [](const std::string& id, const std::string& key) {
    Record r;
    r.kind = "run";
    r.task = "fp16-d64";
    r.candidate_id = id;
    r.compile = RecordCompile{};
    r.compile->cache_key = key;
    return r;
  };
  const Record old = old_record("measured-long-ago", compiled["cache_key"]);
  NoveltyFilter with_cache(source_root(), "fp16-d64", cache), without(source_root(), "fp16-d64");
  with_cache.add_records({old, old_record("escapes", "../../etc/passwd")});
  without.add_records({old});
  EXPECT_EQ(with_cache.same_code(compiled["code_sha256"]), "measured-long-ago");
  EXPECT_FALSE(without.same_code(compiled["code_sha256"]));
}

TEST(CodeIdentity, SameCodeUnderAnotherTextAndFileHasOneHash) {
  const std::string swizzle = read_text(source_root() / "variants" / "5-swizzle" / "swizzle.cu");
  const size_t body = swizzle.find("#include \"evo_attn.cuh\"");
  ASSERT_NE(body, std::string::npos);
  // Comments and blank lines move every line of the kernel; the file has another name.
  std::string moved = swizzle;
  moved.insert(body, "// an explanation\n\n\n// of nothing\n");
  std::string other = swizzle;  // other first values: BLOCK_M=128 NWARPS=8, another configuration
  other.replace(other.find("\"BLOCK_M\": [64, 128]"), 20, "\"BLOCK_M\": [128, 64]");
  other.replace(other.find("\"NWARPS\": [4, 8]"), 17, "\"NWARPS\": [8, 4]");
  const auto root = make_repo("code-identity", {{"variants/5-swizzle/swizzle.cu", swizzle},
                                                {"variants/5-swizzle/moved.cu", moved},
                                                {"variants/5-swizzle/other.cu", other}});
  const auto r = run_evo("compile --stage 5 --task fp16-d64 --sample 1 --json --cache-dir " +
                             shell_quote(scratch_dir("code-identity-cache")),
                         "EVO_ROOT=" + root.string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  std::map<std::string, json> by;
  for (const auto& j : records(r.out)) by[j["variant"]] = j["compile"];
  ASSERT_EQ(by.size(), 3u) << r.out.substr(0, 2000);
  const json &a = by["5-swizzle/swizzle"], &b = by["5-swizzle/moved"], &c = by["5-swizzle/other"];
  EXPECT_NE(a["cache_key"], b["cache_key"]) << "another source text";
  EXPECT_EQ(a["code_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(a["code_sha256"], b["code_sha256"]) << "the same code: only debug line info differs";
  EXPECT_EQ(c["code_sha256"].get<std::string>().size(), 64u) << "BLOCK_M=128 NWARPS=8 compiles";
  EXPECT_NE(a["code_sha256"], c["code_sha256"]) << "another configuration is other code";
}

}  // namespace
}  // namespace evo::test
