// `evo population rebuild` and `evo merge` at once on one results folder serialize on its lock
// (results/.lock): whichever finishes last derived its populations from every record, so they
// equal a clean rebuild's. Without the lock a rebuild that read the records before the merge
// appended could write its older populations last (issue 32: 1 stale result in 12 trials).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// `n` records of the gate fixture's first record, each its own candidate with its own fitness;
// `faster` ones beat every record of the slower kind, so a merge of them changes every elite.
std::string records_text(size_t n, const std::string& run, bool faster) {
  const json base = read_jsonl(source_root() / "tests" / "fixtures" / "gate" / "unchanged.jsonl").front();
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    json r = base;
    r["run_id"] = run;
    r["candidate_id"] = fmt::format("{}{:012x}", faster ? "f0" : "50", i);
    r["source_sha256"] = run + std::to_string(i);  // one candidate per record
    const double f = (faster ? 100.0 : 400.0) + double(i % 97);
    r["fitness"]["geomean_median_us"] = f;
    r["fitness"]["geomean_p90_us"] = f * 1.01;
    text += r.dump() + "\n";
  }
  return text;
}

std::string tree_text(const fs::path& dir) {
  std::string out;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) out += fs::relative(f, dir).string() + "\n" + read_text(f);
  return out;
}

TEST(StoreLock, ConcurrentRebuildAndMergeLeaveThePopulationsOfACleanRebuild) {
  const fs::path dir = scratch_dir("store-lock");
  write_text(dir / "incoming.jsonl", records_text(400, "run-new", true));
  const std::string evo = EVO_BINARY;
  for (int trial = 0; trial < 12; ++trial) {
    const fs::path t = dir / std::to_string(trial);
    write_text(t / "results" / "base.jsonl", records_text(3000, "run-old", false));
    const std::string dirs =
        " --results-dir " + shell_quote(t / "results") + " --populations-dir " + shell_quote(t / "pops");
    // The rebuild starts first; the merge a moment later, while the rebuild is reading.
    const auto both =
        run_shell(fmt::format("{0} population rebuild {1} > {2}/rebuild.log 2>&1 & sleep 0.0{3}; "
                              "{0} merge {4} {1} > {2}/merge.log 2>&1; m=$?; wait $!; r=$?; "
                              "echo merge=$m rebuild=$r",
                              evo, dirs, shell_quote(t), trial % 10, shell_quote(dir / "incoming.jsonl")));
    ASSERT_NE(both.out.find("merge=0 rebuild=0"), std::string::npos) << both.out;
    const auto clean = run_evo("population rebuild --results-dir " + shell_quote(t / "results") +
                               " --populations-dir " + shell_quote(t / "clean"));
    ASSERT_EQ(clean.exit_code, 0) << clean.out;
    ASSERT_EQ(tree_text(t / "pops"), tree_text(t / "clean")) << "trial " << trial << ": stale populations";
    EXPECT_FALSE(fs::exists(t / "pops" / "nvidia-h200" / "fp16-d64.json.tmp")) << trial;
  }
  // In a git checkout (a copy without .git, as the GPU host's fresh copy, has nothing to ask).
  const auto ignored = run_shell("git -C " + shell_quote(source_root()) +
                                 " rev-parse --git-dir >/dev/null 2>&1 || { echo yes; exit; }; git -C " +
                                 shell_quote(source_root()) + " check-ignore -q results/.lock && echo yes");
  EXPECT_NE(ignored.out.find("yes"), std::string::npos) << "the lock file must not be committed";
}

}  // namespace
}  // namespace evo::test
