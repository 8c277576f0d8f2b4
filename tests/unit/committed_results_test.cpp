// The "committed records" copy the docs and export tests read: what git lists, the packed records
// and the kernel sources, never a plain .jsonl a run wrote.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

// On the H200 (2026-11-30) the device's git index was older than its working tree: records packed
// and committed here were in results/ there but not listed, and ExportedLaunch found no population.
TEST(CommittedResults, PackedRecordsAndSourcesCountEvenWhereGitDoesNotListThem) {
  const fs::path repo = test::scratch_dir("committed-results-repo");
  test::write_text(repo / "results" / "a-stage7.jsonl.gz", "tracked");
  const auto git = [&](const std::string& args) {
    return test::run_shell("git -C " + test::shell_quote(repo) + " " + args + " 2>&1");
  };
  ASSERT_EQ(git("init -q").exit_code, 0);
  ASSERT_EQ(git("add results").exit_code, 0);
  ASSERT_EQ(git("-c user.name=t -c user.email=t@t commit -q -m t").exit_code, 0);
  test::write_text(repo / "results" / "b-stage7.jsonl.gz", "packed, not in the index");
  test::write_text(repo / "results" / "c-stage7.jsonl", "a run's own records");
  test::write_text(repo / "results" / "sources" / "abc.cu", "a kernel source");

  const fs::path copy = test::committed_results_of(repo);
  EXPECT_TRUE(fs::exists(copy / "a-stage7.jsonl.gz"));
  EXPECT_TRUE(fs::exists(copy / "b-stage7.jsonl.gz"));
  EXPECT_TRUE(fs::exists(copy / "sources" / "abc.cu"));
  EXPECT_FALSE(fs::exists(copy / "c-stage7.jsonl")) << "a plain .jsonl is a run's, not landed";
}

}  // namespace
}  // namespace evo
