// The population file as types (store/population.h, store/regimes.h): every committed population
// reads and writes back byte for byte, is exactly what the committed records derive (what `evo
// population rebuild` writes), and a value no evo writes is refused with the file and the field.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "store/population.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<fs::path> committed_populations() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(test::source_root() / "populations"))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string file_text(const Population& p) { return population_json(p).dump(2) + "\n"; }

TEST(PopulationFile, EveryCommittedPopulationReadsAndWritesBackUnchanged) {
  size_t with_regimes = 0;
  const auto files = committed_populations();
  for (const auto& file : files) {
    const std::string text = test::read_text(file);
    const Population p = read_population(file);
    EXPECT_EQ(file_text(p), text) << file;
    with_regimes += p.regimes.has_value();
  }
  EXPECT_GT(files.size(), 10u) << "populations/ holds 33 committed files";
  EXPECT_GT(with_regimes, 5u) << "each task's default-benchmark file has a regime table";
}

TEST(PopulationFile, CommittedPopulationsAreWhatTheCommittedRecordsDerive) {
  const RecordSet rs = read_records(test::source_root() / "results");
  ASSERT_TRUE(rs.problems.empty()) << rs.problems.front();
  const auto derived = derive_populations(rs.records);
  std::set<fs::path> written;
  for (const auto& [key, pop] : derived) {
    const fs::path file = population_path(test::source_root() / "populations", pop.gpu, pop.task, *pop.benchmark);
    written.insert(file);
    ASSERT_TRUE(fs::exists(file)) << key;
    EXPECT_EQ(file_text(pop), test::read_text(file)) << key << ": `evo population rebuild` would change it";
  }
  const auto files = committed_populations();
  EXPECT_EQ(std::set<fs::path>(files.begin(), files.end()), written);
}

// A task whose every elite was withdrawn derives no population: a rebuild removes its old file
// (and its other benchmarks' files), and nothing else of the folder.
TEST(PopulationFile, ARebuildRemovesTheFilesNoRecordDerives) {
  const fs::path dir = test::scratch_dir("underived-populations");
  fs::create_directories(dir / "nvidia-h200");
  for (const char* name : {"fp8-d64.json", "fp8-d64-causal.json", "fp8-d64-causal@custom-0eebb074.json",
                           "fp8-d64.json.tmp.1.2", "notes.txt"})
    test::write_text(dir / "nvidia-h200" / name, "{}");
  std::map<std::string, Population> derived;
  derived["nvidia-h200/fp8-d64"] = Population{};
  const auto removed = remove_underived_populations(dir, derived);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0].filename(), "fp8-d64-causal.json");
  EXPECT_EQ(removed[1].filename(), "fp8-d64-causal@custom-0eebb074.json");
  for (const char* kept : {"fp8-d64.json", "fp8-d64.json.tmp.1.2", "notes.txt"})
    EXPECT_TRUE(fs::exists(dir / "nvidia-h200" / kept)) << kept;
  EXPECT_TRUE(remove_underived_populations(dir / "absent", derived).empty());
}

// The committed fp16-d64 population with one value changed, and what its reader says of it.
std::string refusal(const std::function<void(json&)>& edit) {
  const fs::path file = test::source_root() / "populations" / "nvidia-h200" / "fp16-d64.json";
  json j = json::parse(test::read_text(file));
  edit(j);
  const std::string origin = "populations/nvidia-h200/fp16-d64.json";
  try {
    parse_population(j.dump(2), origin);
  } catch (const EvoError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), kExitUsage) << m;
    EXPECT_EQ(m.rfind(origin + ": ", 0), 0u) << "the message must start with the file: " << m;
    EXPECT_NE(m.find("evo population rebuild"), std::string::npos) << "and say how to restore it: " << m;
    return m;
  }
  return "accepted";
}

TEST(PopulationFile, ImpossibleValuesAreRefusedNamingTheField) {
  EXPECT_NE(refusal([](json& j) {
              j["stages"]["8"][0]["fitness"]["geomean_median_us"] = -5;
            }).find("field 'stages.8[0].fitness.geomean_median_us' is -5: it must be a finite number > 0"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["stages"]["3"][0]["timing"][0]["median_us"] = -1.5;
            }).find("field 'stages.3[0].timing[0].median_us' is -1.5: it must be a finite number >= 0"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["stages"]["0"][0]["params"] = {{"BLOCK_M", "64"}};
            }).find("field 'stages.0[0].params' is {\"BLOCK_M\":\"64\"}"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) { j["stages"]["x"] = j["stages"]["0"]; }).find("stage 'x' is not a stage number"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["table"][1]["regime"] = "medium";
            }).find("field 'regimes.table[1].regime' is \"medium\": it must be one of decode, short"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["table"][1]["kernel"] = "zz";
            }).find("regimes name kernel zz but do not list it"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) { j["regimes"]["table"].erase(3); }).find("regimes.table must list the 4 regimes"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              std::swap(j["regimes"]["table"][0], j["regimes"]["table"][1]);
            }).find("regimes.table[0] is 'short', not 'decode'"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["kernels"][0]["timing"][0]["median_us"] = -3;
            }).find("field 'regimes.kernels[0].timing[0].median_us' is -3"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["kernels"][0].erase("candidate_id");
            }).find("field 'regimes.kernels[0].candidate_id' missing"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["table"][2]["geomean_median_us"] = 0;
            }).find("field 'regimes.table[2].geomean_median_us' is 0: it must be a finite number > 0"),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["table"][0]["choice"] = "coin flip";
            }).find("field 'regimes.table[0].choice' is \"coin flip\""),
            std::string::npos);
  EXPECT_NE(refusal([](json& j) {
              j["regimes"]["rule"]["short_max_seq_q"] = 4;
            }).find("regimes.rule is missing or malformed"),
            std::string::npos);
}

// A newer minor's fields ride along: read, written back as they came.
TEST(PopulationFile, FieldsOfANewerMinorAreKept) {
  const fs::path file = test::source_root() / "populations" / "nvidia-h200" / "fp16-d64.json";
  json j = json::parse(test::read_text(file));
  j["schema_version"] = "1.4";
  j["future"] = {{"x", 1}};
  j["stages"]["8"][0]["future_elite_field"] = "kept";
  j["regimes"]["kernels"][0]["future_kernel_field"] = 7;
  j["regimes"]["table"][0]["future_row_field"] = json::array({1, 2});
  std::string warning;
  const Population p = parse_population(j.dump(2), "p.json", &warning);
  EXPECT_NE(warning.find("newer"), std::string::npos);
  EXPECT_EQ(population_json(p), j);
}

}  // namespace
}  // namespace evo
