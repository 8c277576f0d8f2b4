// `evo gate` end to end on replay fixtures (tests/fixtures/gate/make_fixtures.py says what each
// holds): the real binary, its exit codes, its table and its JUnit XML.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return source_root() / "tests" / "fixtures" / "gate" / name; }

CliResult gate(const std::string& replay, const std::string& extra = "") {
  return run_evo("gate --baseline " + shell_quote(fixture("baseline.json")) + " --replay " +
                 shell_quote(fixture(replay)) + (extra.empty() ? "" : " " + extra));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

TEST(GateCli, UnchangedRunPasses) {
  const auto r = gate("unchanged.jsonl");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "SAME"), 5u + 1u) << r.out;  // five rows and the summary line
  EXPECT_NE(r.out.find("gate: 5 SAME"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SLOW"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("AMBIGUOUS"), std::string::npos) << r.out;
}

TEST(GateCli, TenPercentSlowdownOnOneShapeExits4) {
  const auto r = gate("slow.jsonl");
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("1 SLOW"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SLOW: fp16-d64 8x32x32x2048x2048x64"), std::string::npos) << r.out;
}

TEST(GateCli, WrongOutputExits3EvenWithASlowdown) {
  const auto r = gate("wrong.jsonl");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("BROKEN"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outcome correctness"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SLOW"), std::string::npos) << "the slowdown is still reported:\n" << r.out;
}

TEST(GateCli, NoisyRunIsAmbiguousAndLoud) {
  const auto r = gate("noisy.jsonl");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 AMBIGUOUS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("This is NOT a pass"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("5 SAME"), std::string::npos) << "the noisy shape must not count as SAME:\n" << r.out;
}

TEST(GateCli, NoisyRunFailsUnderStrict) {
  const auto r = gate("noisy.jsonl", "--strict");
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("AMBIGUOUS"), std::string::npos) << r.out;
}

TEST(GateCli, FasterRunPassesAsFast) {
  const auto r = gate("faster.jsonl");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 FAST"), std::string::npos) << r.out;
}

TEST(GateCli, RecordsOfAnotherGpuAreMissingAndExit1) {
  const auto r = gate("other-gpu.jsonl");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("MISSING"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvidia-h100-80gb-hbm3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--write-baseline"), std::string::npos) << "says how to refresh the baseline:\n" << r.out;
}

TEST(GateCli, TaskFilterLimitsTheChecks) {
  auto r = gate("slow.jsonl", "--task fp16-d128");
  EXPECT_EQ(r.exit_code, 0) << "the slowdown is in fp16-d64:\n" << r.out;
  EXPECT_NE(r.out.find("gate: 2 SAME"), std::string::npos) << r.out;
  r = gate("slow.jsonl", "--task bf16-d64");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no entries for it"), std::string::npos) << r.out;
}

TEST(GateCli, WriteBaselineReproducesTheCommittedFixture) {
  const fs::path out = scratch_dir("gate-write") / "baseline.json";
  const auto r =
      run_evo("gate --write-baseline " + shell_quote(out) + " --replay " + shell_quote(fixture("base.jsonl")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_text(out), read_text(fixture("baseline.json")))
      << "regenerate with the command in tests/fixtures/gate/make_fixtures.py and review the diff";
  const auto again = run_evo("gate --baseline " + shell_quote(out) + " --replay " + shell_quote(fixture("base.jsonl")));
  EXPECT_EQ(again.exit_code, 0) << "a run against its own baseline is SAME:\n" << again.out;
}

TEST(GateCli, JunitHasOneTestcasePerTaskAndShape) {
  const fs::path dir = scratch_dir("gate-junit");
  auto r = gate("slow.jsonl", "--junit " + shell_quote(dir / "slow.xml"));
  EXPECT_EQ(r.exit_code, 4) << r.out;
  std::string xml = read_text(dir / "slow.xml");
  EXPECT_EQ(count(xml, "<testcase "), 5u) << xml;
  EXPECT_NE(xml.find("tests=\"5\" failures=\"1\" errors=\"0\" skipped=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"SLOW\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("classname=\"evo.gate.fp16-d64\" name=\"8x32x32x2048x2048x64\""), std::string::npos) << xml;

  r = gate("noisy.jsonl", "--junit " + shell_quote(dir / "noisy.xml"));
  xml = read_text(dir / "noisy.xml");
  EXPECT_NE(xml.find("skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"AMBIGUOUS"), std::string::npos) << xml;

  r = gate("noisy.jsonl", "--strict --junit " + shell_quote(dir / "strict.xml"));
  xml = read_text(dir / "strict.xml");
  EXPECT_NE(xml.find("<failure type=\"AMBIGUOUS\""), std::string::npos) << xml;

  r = gate("wrong.jsonl", "--junit " + shell_quote(dir / "wrong.xml"));
  xml = read_text(dir / "wrong.xml");
  EXPECT_NE(xml.find("<failure type=\"CORRECTNESS\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("&gt; atol"), std::string::npos) << "reasons are XML-escaped:\n" << xml;
}

TEST(GateCli, BadBaselineExits1NamingFileAndField) {
  const fs::path dir = scratch_dir("gate-bad");
  std::string text = read_text(fixture("baseline.json"));
  const std::string key = "\"median_us\"";
  text.replace(text.find(key), key.size(), "\"median\"");
  write_text(dir / "bad.json", text);
  auto r = run_evo("gate --baseline " + shell_quote(dir / "bad.json") + " --replay " +
                   shell_quote(fixture("unchanged.jsonl")));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("bad.json: entries[0].median_us"), std::string::npos) << r.out;

  write_text(dir / "torn.json", "{\"schema_version\": \"1.0\", \"kind\": \"gate-baseline\"");
  r = run_evo("gate --baseline " + shell_quote(dir / "torn.json") + " --replay " +
              shell_quote(fixture("unchanged.jsonl")));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("torn.json: not a JSON object"), std::string::npos) << r.out;

  r = run_evo("gate --baseline " + shell_quote(dir / "absent.json") + " --replay " +
              shell_quote(fixture("unchanged.jsonl")));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("absent.json"), std::string::npos) << r.out;
}

TEST(GateCli, BadReplayExits1NamingFileAndLine) {
  const fs::path dir = scratch_dir("gate-bad-replay");
  write_text(dir / "r.jsonl", read_text(fixture("unchanged.jsonl")) + "{\"schema_version\": \"1.0\"}\n");
  const auto r =
      run_evo("gate --baseline " + shell_quote(fixture("baseline.json")) + " --replay " + shell_quote(dir / "r.jsonl"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("r.jsonl:3"), std::string::npos) << r.out;
}

TEST(GateCli, NeedsABaselineOrAFileToWrite) {
  auto r = run_evo("gate --replay " + shell_quote(fixture("unchanged.jsonl")));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--baseline"), std::string::npos) << r.out;
  r = run_evo("gate --baseline a.json --write-baseline b.json");
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

TEST(GateCli, WithoutReplayAndWithoutGpuExits2) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present: measuring would run for real";
  const fs::path dir = scratch_dir("gate-nogpu");
  const auto r = run_evo("gate --baseline " + shell_quote(fixture("baseline.json")) + " --record " +
                         shell_quote(dir / "r.jsonl") + " --cache-dir " + shell_quote(dir / "cache"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

}  // namespace
}  // namespace evo::test
