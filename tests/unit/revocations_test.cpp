// results/revoked.json (store/revocations.h): a strict reader, the params condition, and a
// directory's reading that withdraws revoked records from the populations, the regime tables and
// COMPARE.md while a record of another source stays.
#include <gtest/gtest.h>

#include <set>

#include "core/errors.h"
#include "report/compare.h"
#include "store/population.h"
#include "store/records.h"
#include "store/revocations.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kRevokedSha(64, 'a');  // a stand-in for an unfenced source
const std::string kKeptSha(64, 'b');

json entry() {
  return {{"variant", "9-decode/split_kv_tma"},
          {"source_sha256", {kRevokedSha}},
          {"reason", "arrives on the empty barrier after ldmatrix with no proxy fence"},
          {"fixed_by", "9b50034"},
          {"evidence", "lab/notes/h200-20261129-tma-regimes.md"}};
}

std::string file_with(const json& e) { return json{{"schema", 1}, {"revoked", {e}}}.dump(); }

// The usage error's message for a revoked.json text, or "" when it parses.
std::string error_of(const std::string& text) {
  std::string message;
  const int code = test::exit_code_of([&] { parse_revocations(text, "results/revoked.json"); }, &message);
  EXPECT_EQ(code, code == 0 ? 0 : int(kExitUsage));
  return message;
}

TEST(Revocations, AWellFormedFileParses) {
  json e = entry();
  e["params"] = {{"Q_REGS", 1}, {"PERSISTENT", 1}};
  const auto list = parse_revocations(file_with(e), "results/revoked.json");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].variant, "9-decode/split_kv_tma");
  EXPECT_EQ(list[0].source_sha256, std::vector<std::string>{kRevokedSha});
  EXPECT_EQ(list[0].params.size(), 2u);
  EXPECT_EQ(list[0].fixed_by, "9b50034");
}

TEST(Revocations, ABadFileNamesTheFileAndTheField) {
  auto without = [](const char* key) {
    json e = entry();
    e.erase(key);
    return file_with(e);
  };
  auto with = [](const char* key, const json& value) {
    json e = entry();
    e[key] = value;
    return file_with(e);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {without("reason"), "results/revoked.json: field 'revoked[0].reason' missing"},
      {without("source_sha256"), "field 'revoked[0].source_sha256' missing"},
      {with("source_sha256", json::array()), "field 'revoked[0].source_sha256' is []"},
      {with("source_sha256", {kRevokedSha, "10bdfc3f"}), "field 'revoked[0].source_sha256[1]' is \"10bdfc3f\""},
      {with("source_sha256", {std::string(64, 'A')}), "field 'revoked[0].source_sha256[0]'"},
      {with("params", {{"Q_REGS", "1"}}), "field 'revoked[0].params'"},
      {with("fixed_by", "HEAD"), "field 'revoked[0].fixed_by' is \"HEAD\""},
      {with("evidence", "/etc/passwd"), "field 'revoked[0].evidence'"},
      {with("reason", "two\nlines"), "field 'revoked[0].reason'"},
      {with("param", {{"Q_REGS", 1}}), "field 'revoked[0].param' is {\"Q_REGS\":1}: it must be absent"},
      {json{{"schema", 2}, {"revoked", json::array()}}.dump(),
       "results/revoked.json: field 'schema' is 2: it must be 1"},
      {json{{"revoked", json::array()}}.dump(), "field 'schema' missing"},
      {json{{"schema", 1}}.dump(), "field 'revoked' missing"},
      {"{\"schema\": 1,", "results/revoked.json: not valid JSON"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string message = error_of(text);
    EXPECT_NE(message.find(expected), std::string::npos) << "expected: " << expected << "\ngot: " << message;
  }
}

json record(const std::string& sha, const json& params) {
  return {{"variant", "7-tma-ws/tma_ws_fp8"}, {"source_sha256", sha}, {"params", params}};
}

TEST(Revocations, EveryParamOfTheConditionMustBeInTheRecordWithThatValue) {
  json e = entry();
  e["variant"] = "7-tma-ws/tma_ws_fp8";
  e["params"] = {{"Q_REGS", 1}, {"PERSISTENT", 1}};
  const Revocation r = parse_revocations(file_with(e), "revoked.json").at(0);
  EXPECT_TRUE(r.matches(record(kRevokedSha, {{"PERSISTENT", 1}, {"Q_REGS", 1}, {"STAGES", 4}})));
  EXPECT_FALSE(r.matches(record(kRevokedSha, {{"PERSISTENT", 1}, {"Q_REGS", 0}})));  // Q read by wgmma
  EXPECT_FALSE(r.matches(record(kRevokedSha, {{"Q_REGS", 1}})));  // a source before PERSISTENT existed
  EXPECT_FALSE(r.matches(record(kKeptSha, {{"PERSISTENT", 1}, {"Q_REGS", 1}})));
  json other_variant = record(kRevokedSha, {{"PERSISTENT", 1}, {"Q_REGS", 1}});
  other_variant["variant"] = "7-tma-ws/tma_ws";
  EXPECT_FALSE(r.matches(other_variant));
  // Without a condition every configuration of the source is withdrawn.
  e.erase("params");
  EXPECT_TRUE(parse_revocations(file_with(e), "revoked.json").at(0).matches(record(kRevokedSha, json::object())));
}

// A results dir with two records identical but for their source (a deep-gated full-gate record
// of the committed logs, copied), and revoked.json withdrawing the first source or none.
fs::path results_with_two_sources(const std::string& name, bool revoke) {
  json base;
  for (const json& r :
       test::read_jsonl(test::source_root() / "results" / "20261129T043325Z-nvidia-h200-remeasure.jsonl"))
    if (r["variant"] == "9-decode/split_kv_tma" && r["task"] == "bf16-d64") base = r;
  if (base.is_null()) throw std::runtime_error("the committed remeasure log has no bf16-d64 split_kv_tma record");
  base["benchmark"] = "default";  // the default set's population has the regime table
  json revoked = base, kept = base;
  revoked["source_sha256"] = kRevokedSha;
  revoked["candidate_id"] = "revoked0000000000";
  kept["source_sha256"] = kKeptSha;
  kept["candidate_id"] = "kept000000000000";
  // The revoked one is faster: without the revocation it is the default kernel.
  for (auto& t : kept["timing"])
    for (const char* k : {"median_us", "p90_us"}) t[k] = t[k].get<double>() * 1.5;
  for (const char* k : {"geomean_median_us", "geomean_p90_us"})
    kept["fitness"][k] = kept["fitness"][k].get<double>() * 1.5;
  const fs::path dir = test::scratch_dir(name);
  test::write_text(dir / "runs.jsonl", revoked.dump() + "\n" + kept.dump() + "\n");
  if (revoke) test::write_text(dir / kRevocationsFile, file_with(entry()));
  return dir;
}

// The candidate ids of a population's elites and regime-table kernels.
std::set<std::string> candidates_in(const Population& p) {
  std::set<std::string> out;
  for (const auto& [stage, elites] : p.stages)
    for (const Elite& e : elites) out.insert(e.candidate_id.value_or(""));
  if (p.regimes)
    for (const RegimeKernel& k : p.regimes->kernels) out.insert(k.candidate_id);
  return out;
}

TEST(Revocations, ARevokedRecordLeavesThePopulationAndTheRegimeTable) {
  const RecordSet all = read_records(results_with_two_sources("revocations-none", false));
  ASSERT_TRUE(all.problems.empty()) << all.problems.front();
  EXPECT_TRUE(all.withdrawn.empty());
  const auto before = derive_populations(all.records);
  ASSERT_EQ(before.count("nvidia-h200/bf16-d64"), 1u);
  const Population& p0 = before.at("nvidia-h200/bf16-d64");
  EXPECT_EQ(candidates_in(p0), (std::set<std::string>{"revoked0000000000", "kept000000000000"}));
  ASSERT_TRUE(p0.regimes.has_value());
  EXPECT_EQ(p0.regimes->default_kernel.value_or(""), "revoked0000000000");

  const RecordSet set = read_records(results_with_two_sources("revocations-one", true));
  ASSERT_EQ(set.withdrawn.size(), 1u);
  ASSERT_EQ(set.withdrawn[0].records.size(), 1u);
  EXPECT_EQ(set.withdrawn[0].records[0]["candidate_id"], "revoked0000000000");
  EXPECT_EQ(set.withdrawn[0].records[0]["task"], "bf16-d64");
  ASSERT_EQ(set.records.size(), 1u);
  const auto after = derive_populations(set.records);
  const Population& p1 = after.at("nvidia-h200/bf16-d64");
  EXPECT_EQ(candidates_in(p1), std::set<std::string>{"kept000000000000"});
  ASSERT_TRUE(p1.regimes.has_value());
  EXPECT_EQ(p1.regimes->default_kernel.value_or(""), "kept000000000000");

  // A single file is read as it is: the log carries no revocations.
  EXPECT_EQ(read_records(results_with_two_sources("revocations-file", true) / "runs.jsonl").records.size(), 2u);
}

TEST(Revocations, CompareListsWhatEachRevocationWithdrew) {
  const fs::path dir = results_with_two_sources("revocations-compare", true);
  const std::string md = render_markdown(build_comparison(load_compare_input(dir), {}));
  EXPECT_NE(md.find("## Revoked sources\n"), std::string::npos);
  EXPECT_NE(md.find("| 9-decode/split_kv_tma | aaaaaaaaaaaa | any | arrives on the empty barrier after ldmatrix "
                    "with no proxy fence | 9b50034 | lab/notes/h200-20261129-tma-regimes.md | 1 | bf16-d64 |"),
            std::string::npos)
      << md.substr(0, 3000);
  EXPECT_NE(md.find("from 1 run records"), std::string::npos);
  EXPECT_EQ(md.find("revoked0000000000"), std::string::npos);
  const std::string plain = render_markdown(
      build_comparison(load_compare_input(results_with_two_sources("revocations-compare-none", false)), {}));
  EXPECT_EQ(plain.find("Revoked sources"), std::string::npos);
}

// The committed list reads, names evidence that exists, and withdraws records of the logs.
TEST(Revocations, TheCommittedListIsWellFormedAndWithdrawsRecords) {
  const fs::path file = test::source_root() / "results" / kRevocationsFile;
  ASSERT_TRUE(fs::exists(file));
  const auto list = read_revocations(file);
  ASSERT_GE(list.size(), 2u);
  for (const Revocation& r : list) EXPECT_TRUE(fs::exists(test::source_root() / r.evidence)) << r.evidence;
  const RecordSet set = read_records(test::committed_results());
  ASSERT_EQ(set.withdrawn.size(), list.size());
  for (const Withdrawal& w : set.withdrawn) EXPECT_FALSE(w.records.empty()) << w.revocation.variant;
}

}  // namespace
}  // namespace evo
