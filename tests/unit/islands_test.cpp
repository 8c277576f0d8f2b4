// `evo evolve --island i/N` without a GPU: parsing (flags and the Slurm variables), which
// records an island imports at a migration (other islands' elites of earlier generations only,
// once they got there), the wait for an island that is behind, and the parents it breeds from.
#include "evolve/islands.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "core/errors.h"
#include "store/atomic_file.h"
#include "store/records.h"
#include "store/typed_record.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(Islands, FlagOrSlurmArrayNamesTheIslandAndTheGroup) {
  const Island a = resolve_island("1/3", "g", 2, 60, 7, env_of({}));
  EXPECT_TRUE(a.active());
  EXPECT_EQ(a.text(), "1/3");
  EXPECT_EQ(a.run_id(), "ev-g-island1of3");
  EXPECT_TRUE(a.migrates_at(2));
  EXPECT_TRUE(a.migrates_at(4));
  EXPECT_FALSE(a.migrates_at(0));
  EXPECT_FALSE(a.migrates_at(3));
  const Island s = resolve_island("", "", 1, 60, 7,
                                  env_of({{"SLURM_ARRAY_TASK_ID", "5"},
                                          {"SLURM_ARRAY_TASK_MIN", "4"},
                                          {"SLURM_ARRAY_TASK_COUNT", "2"},
                                          {"SLURM_ARRAY_JOB_ID", "991"}}));
  EXPECT_EQ(s.text(), "1/2");
  EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID");
  EXPECT_EQ(s.group, "slurm991");
  EXPECT_EQ(resolve_island("0/2", "", 1, 60, 7, env_of({})).group, "seed7");
  EXPECT_FALSE(resolve_island("", "", 1, 60, 7, env_of({})).active());
  // Islands of one seed draw differently; the same island draws the same again.
  EXPECT_EQ(a.seed(7), resolve_island("1/3", "other", 0, 1, 7, env_of({})).seed(7));
  EXPECT_NE(a.seed(7), resolve_island("0/3", "g", 0, 1, 7, env_of({})).seed(7));
  EXPECT_EQ(resolve_island("0/3", "g", 0, 1, 7, env_of({})).seed(7), 7u);
}

TEST(Islands, BadIslandsAreOneLineUsageErrors) {
  std::string msg;
  EXPECT_EQ(test::exit_code_of([&] { resolve_island("3/2", "", 1, 60, 0, env_of({})); }, &msg), kExitUsage);
  EXPECT_EQ(msg, "--island 3/2: the index must be below the count (0-based: 0/2 to 1/2)");
  EXPECT_EQ(test::exit_code_of([&] { resolve_island("two/4", "", 1, 60, 0, env_of({})); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("--island two/4: write i/N, island i"), std::string::npos) << msg;
  EXPECT_EQ(test::exit_code_of([&] { resolve_island("0/2", "a b", 1, 60, 0, env_of({})); }, &msg), kExitUsage);
  EXPECT_NE(msg.find("--island-group a b"), std::string::npos) << msg;
  EXPECT_EQ(test::exit_code_of([&] { resolve_island("0/2", "", -1, 60, 0, env_of({})); }), kExitUsage);
  EXPECT_EQ(test::exit_code_of([&] { resolve_island("0/2", "", 1, -1, 0, env_of({})); }), kExitUsage);
  EXPECT_EQ(test::exit_code_of([&] {
              resolve_island("", "", 1, 60, 0, env_of({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "2"}}));
            }),
            kExitEnvironment);
}

json island_record(const std::string& id, const std::string& run, int generation, double fitness_us,
                   const std::string& phase = "full", const std::string& gpu = "nvidia-h200") {
  return {{"schema_version", "1.0"},
          {"kind", "run"},
          {"candidate_id", id},
          {"variant", "3-wmma-pv/mma_pv"},
          {"task", "fp16-d64"},
          {"stage", 3},
          {"params", {{"BLOCK_M", 64}}},
          {"source_sha256", "ab"},
          {"time", "2026-11-23T00:00:00Z"},
          {"outcome", "ok"},
          {"benchmark", "default"},
          {"env", {{"gpu_key", gpu}}},
          {"fitness", {{"geomean_median_us", fitness_us}}},
          {"evolve", {{"run", run}, {"generation", generation}, {"phase", phase}}}};
}

void trace_line(const fs::path& results, const std::string& run, const json& line) {
  append_line_durable(results / "evolve" / (run + ".trace.jsonl"), line.dump());
}

std::vector<std::string> ids(const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.candidate_id);
  return out;
}

Record typed(const json& record) { return *read_record(record).record; }

TEST(Islands, ImportsTheOtherIslandsElitesOfEarlierGenerationsOnly) {
  const fs::path results = test::scratch_dir("islands-migrate");
  const Island me = resolve_island("1/3", "g", 1, 5, 0, env_of({}));
  const std::string a = me.run_id(0), c = me.run_id(2);
  for (const json& r :
       {island_record("a1", a, 0, 10), island_record("a2", a, 0, 12), island_record("a3", a, 1, 11),
        island_record("a4", a, 1, 13), island_record("a5", a, 2, 1),  // generation 2: not yet, at generation 2
        island_record("aq", a, 0, 2, "screen"),                       // a quick screen is no fitness
        island_record("ah", a, 0, 3, "full", "nvidia-h100"),          // another GPU model
        island_record("c1", c, 0, 20), island_record("m1", me.run_id(), 0, 5),  // my own
        island_record("x1", "ev-other-island0of3", 0, 4)})                      // another search
    append_record(results / "records.jsonl", r);
  trace_line(results, a, {{"run", a}, {"generation", 2}});
  trace_line(results, c, {{"run", c}, {"generation", 1}});
  const MigrationScope scope{results, "fp16-d64", "default", "nvidia-h200", 3};
  const Migration m = migrate(me, 2, scope);
  EXPECT_TRUE(m.late.empty());
  // Island 0's best three of generations 0-1 and island 2's one, best first.
  EXPECT_EQ(ids(m.migrants), (std::vector<std::string>{"a1", "a3", "a2", "c1"}));
  EXPECT_EQ(m.trace()["imported"][0]["from"], a);
  // Nothing was lost: every record is still there.
  EXPECT_EQ(read_records(results).records.size(), 10u);
  EXPECT_TRUE(me.in_group(typed(island_record("z", c, 0, 1))));
  EXPECT_FALSE(me.in_group(typed(island_record("z", "ev-other-island0of3", 0, 1))));
  EXPECT_FALSE(me.in_group(typed(island_record("z", "ev-g-island0of4", 0, 1))));
}

TEST(Islands, WaitsForAnIslandThatIsBehindThenSaysSo) {
  const fs::path results = test::scratch_dir("islands-wait");
  Island me = resolve_island("0/2", "w", 1, 0.5, 0, env_of({}));
  const std::string other = me.run_id(1);
  append_record(results / "r.jsonl", island_record("b1", other, 0, 10));
  const MigrationScope scope{results, "fp16-d64", "default", "", 3};
  const auto t0 = std::chrono::steady_clock::now();
  Migration m = migrate(me, 1, scope);  // island 1 has no trace yet: waits 0.5 s, then imports what is there
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.45);
  ASSERT_EQ(m.late.size(), 1u);
  EXPECT_NE(m.late[0].find("island 1 had reached generation -1 of 0"), std::string::npos) << m.late[0];
  EXPECT_EQ(ids(m.migrants), std::vector<std::string>{"b1"});
  // Once its trace shows the generation (a torn last line is skipped), no wait.
  test::write_text(results / "evolve" / (other + ".trace.jsonl"),
                   json{{"run", other}, {"generation", 0}}.dump() + "\n{\"gen");
  EXPECT_EQ(island_progress(results / "evolve" / (other + ".trace.jsonl")), 0);
  me.wait_s = 30;
  m = migrate(me, 1, scope);
  EXPECT_TRUE(m.late.empty());
  // A finished island is never waited for, whatever generation is asked.
  trace_line(results, other, {{"run", other}, {"finished", true}});
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_TRUE(migrate(me, 9, scope).late.empty());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 5.0);
}

TEST(Islands, ParentsAreBaselineOwnAndMigrantsBestFirstOnce) {
  const std::vector<Record> baseline{typed(island_record("p1", "", 0, 30)), typed(island_record("p2", "", 0, 31)),
                                     typed(island_record("p3", "", 0, 32)), typed(island_record("p4", "", 0, 33))};
  const std::vector<Record> own{typed(island_record("o1", "me", 0, 25)), typed(island_record("o2", "me", 0, 40))};
  const std::vector<Record> migrants{typed(island_record("m1", "them", 0, 20)),
                                     typed(island_record("p1", "them", 0, 30))};
  EXPECT_EQ(ids(island_ranked(baseline, own, migrants, 1)), (std::vector<std::string>{"m1", "o1", "p1", "p2", "p3"}));
}

}  // namespace
}  // namespace evo
