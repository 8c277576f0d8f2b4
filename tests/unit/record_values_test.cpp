// Impossible values in a record (issue 32): refused by the one reader with file:line and the
// field, and so by every command that reads records: merge, rebuild, compare, gate --replay.
#include <gtest/gtest.h>

#include "store/records.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The first record of the gate fixture `unchanged.jsonl`: a real record, timed on three shapes.
json fixture_record() { return read_jsonl(source_root() / "tests" / "fixtures" / "gate" / "unchanged.jsonl").front(); }

std::string problem_of(const std::string& line) {
  RecordSet rs;
  parse_records_text(fixture_record().dump() + "\n" + line + "\n", "results/x.jsonl", rs);
  EXPECT_EQ(rs.records.size(), rs.problems.empty() ? 2u : 1u);
  return rs.problems.empty() ? "" : rs.problems.front();
}

TEST(RecordValues, TheFixtureRecordIsPossible) { EXPECT_EQ(problem_of(fixture_record().dump()), ""); }

TEST(RecordValues, NegativeNonFiniteOrStringTimesAreRefusedWithFileLineAndField) {
  struct Case {
    const char* what;
    std::function<void(json&)> damage;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"negative fitness", [](json& r) { r["fitness"]["geomean_median_us"] = -5; }, "fitness.geomean_median_us"},
      {"zero fitness", [](json& r) { r["fitness"]["geomean_p90_us"] = 0; }, "fitness.geomean_p90_us"},
      {"string fitness", [](json& r) { r["fitness"]["geomean_median_us"] = "fast"; }, "fitness.geomean_median_us"},
      {"negative median", [](json& r) { r["timing"][1]["median_us"] = -1; }, "timing[1].median_us"},
      {"string p90", [](json& r) { r["timing"][0]["p90_us"] = "18"; }, "timing[0].p90_us"},
      {"negative tflops", [](json& r) { r["timing"][0]["tflops"] = -3.5; }, "timing[0].tflops"},
      {"negative count", [](json& r) { r["timing"][0]["n"] = -60; }, "timing[0].n"},
      {"timing entry not an object", [](json& r) { r["timing"][2] = 17; }, "timing[2]"},
      {"negative gpu seconds", [](json& r) { r["gpu_seconds"] = -1.0; }, "gpu_seconds"},
      {"string phase", [](json& r) { r["phases"]["gpu_s"] = "1 s"; }, "phases.gpu_s"},
  };
  for (const auto& c : cases) {
    json r = fixture_record();
    c.damage(r);
    const std::string p = problem_of(r.dump());
    EXPECT_NE(p.find("results/x.jsonl:2: field '" + std::string(c.field) + "'"), std::string::npos)
        << c.what << ": " << p;
  }
}

// JSON has no infinity; 1e999 overflows a double. Whichever of the two readers sees it first,
// the line is refused with file:line, never read as an infinitely slow (or fast) kernel.
TEST(RecordValues, AnOverflowingTimeIsRefused) {
  std::string line = fixture_record().dump();
  const std::string key = "\"geomean_median_us\":";
  const size_t at = line.find(key) + key.size();
  line.replace(at, line.find(',', at) - at, "1e999");
  EXPECT_NE(problem_of(line).find("results/x.jsonl:2: "), std::string::npos) << problem_of(line);
}

TEST(RecordValues, AnUnknownOutcomeIsRefused) {
  json r = fixture_record();
  r["outcome"] = "great";
  EXPECT_NE(problem_of(r.dump()).find("results/x.jsonl:2: unknown outcome 'great'"), std::string::npos);
}

TEST(RecordValues, IntegrityGainsMayBeNegative) {
  json r = fixture_record();
  r["timing"][0]["integrity"] = {{"repeat_probes", {{"gain_us", -38.0}, {"pass", true}}}};
  EXPECT_EQ(problem_of(r.dump()), "");
}

// A results folder with the fixture record and one with fitness -5 µs, which would rank first.
fs::path results_with_impossible_record(const std::string& name) {
  const fs::path dir = scratch_dir(name);
  json bad = fixture_record();
  bad["candidate_id"] = "badbadbadbadbad0";
  bad["fitness"]["geomean_median_us"] = -5;
  write_text(dir / "results" / "r.jsonl", fixture_record().dump() + "\n" + bad.dump() + "\n");
  return dir;
}

TEST(RecordValuesCli, MergeAndRebuildSkipTheLineNameItAndExit1) {
  const fs::path dir = results_with_impossible_record("values-merge");
  const std::string pops = " --populations-dir " + shell_quote(dir / "pops");
  auto r = run_evo("merge " + shell_quote(dir / "results" / "r.jsonl") + " --results-dir " +
                   shell_quote(dir / "merged") + pops);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("r.jsonl:2: field 'fitness.geomean_median_us' is -5"), std::string::npos) << r.out;
  EXPECT_EQ(read_text(dir / "merged" / "merged.jsonl").find("badbadbadbadbad0"), std::string::npos);
  r = run_evo("population rebuild --results-dir " + shell_quote(dir / "results") + pops);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("r.jsonl:2: field 'fitness.geomean_median_us'"), std::string::npos) << r.out;
  const std::string pop = read_text(dir / "pops" / "nvidia-h200" / "fp16-d64.json");
  EXPECT_NE(pop.find("b64be7dd4a88eef3"), std::string::npos) << pop;
  EXPECT_EQ(pop.find("badbadbadbadbad0"), std::string::npos) << "an impossible record must never rank:\n" << pop;
}

TEST(RecordValuesCli, CompareStopsWithExit1) {
  const fs::path dir = results_with_impossible_record("values-compare");
  const auto r = run_evo("compare --results " + shell_quote(dir / "results") + " --out -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("r.jsonl:2: field 'fitness.geomean_median_us'"), std::string::npos) << r.out;
}

TEST(RecordValuesCli, GateReplayRefusesANegativeMedianInsteadOfCallingItAmbiguous) {
  const fs::path dir = scratch_dir("values-gate");
  std::vector<json> records = read_jsonl(source_root() / "tests" / "fixtures" / "gate" / "unchanged.jsonl");
  records[0]["timing"][0]["median_us"] = -1;
  std::string text;
  for (const auto& r : records) text += r.dump() + "\n";
  write_text(dir / "r.jsonl", text);
  const auto r =
      run_evo("gate --baseline " + shell_quote(source_root() / "tests" / "fixtures" / "gate" / "baseline.json") +
              " --replay " + shell_quote(dir / "r.jsonl"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("r.jsonl:1: field 'timing[0].median_us' is -1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("AMBIGUOUS"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace evo::test
