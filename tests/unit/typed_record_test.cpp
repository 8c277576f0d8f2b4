// The typed record (store/typed_record.h): every committed record reads and writes back to the
// same JSON; a newer minor is read with a warning and its unknown fields kept; another major is
// refused.
#include "store/typed_record.h"

#include <gtest/gtest.h>

#include <fstream>

#include "store/json_fields.h"
#include "store/record.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

TEST(TypedRecord, EveryCommittedRecordRoundTrips) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::source_root() / "results")) {
    if (e.path().extension() != ".jsonl") continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const json j = json::parse(line);
      RecordRead r = read_record(j);
      ASSERT_TRUE(r.record) << e.path() << ": " << r.error;
      EXPECT_EQ(write_record(*r.record), j) << e.path();
      if (j["kind"] == "run") {
        EXPECT_EQ(r.record->gpu_key(), j["env"]["gpu_key"].get<std::string>());
        EXPECT_EQ(r.record->timing.has_value(), j.contains("timing"));
      }
      ++n;
    }
  }
  EXPECT_GT(n, 50u) << "results/ holds 81 committed records";
}

json minimal() {
  return {{"schema_version", "1.0"},       {"kind", "run"},   {"candidate_id", "c1"},
          {"variant", "0-baseline/v"},     {"stage", 0},      {"task", "fp16-d64"},
          {"params", json::object()},      {"outcome", "ok"}, {"source_sha256", "ab"},
          {"time", "2026-11-21T00:00:00Z"}};
}

TEST(TypedRecord, NewerMinorKeepsUnknownFields) {
  json j = minimal();
  j["schema_version"] = "1.3";
  j["future_field"] = {{"x", 1}};
  j["timing"] = json::array({{{"shape", "1x1x1x1x1x64"}, {"median_us", 2.5}, {"new_stat", 7}}});
  j["fitness"] = nullptr;
  j["pruned"] = "not a bool";  // an optional field of a foreign type: kept, not typed
  RecordRead r = read_record(j);
  ASSERT_TRUE(r.record) << r.error;
  EXPECT_NE(r.warning.find("newer"), std::string::npos);
  EXPECT_EQ(r.record->schema.minor, 3);
  EXPECT_FALSE(r.record->fitness);
  EXPECT_FALSE(r.record->pruned);
  ASSERT_TRUE(r.record->timing);
  EXPECT_EQ((*r.record->timing)[0].median_us, 2.5);
  EXPECT_EQ((*r.record->timing)[0].extra["new_stat"], 7);
  EXPECT_EQ(write_record(*r.record), j);
}

TEST(TypedRecord, StrictOnMajorAndRequiredFields) {
  json j = minimal();
  j["schema_version"] = "2.0";
  EXPECT_EQ(read_record(j).error, "schema_version 2.0 is not 1.x");
  j = minimal();
  j["outcome"] = "great";
  EXPECT_EQ(read_record(j).error, "unknown outcome 'great'");
  j = minimal();
  j.erase("candidate_id");
  EXPECT_EQ(read_record(j).error, "field 'candidate_id' missing or not a string");
  EXPECT_EQ(validate_record(j), read_record(j).error) << "validate_record is the reader's verdict";
  EXPECT_FALSE(read_record(json::array()).record);
}

TEST(TypedRecord, OneOrderForNewer) {
  json a = minimal(), b = minimal();
  a["run_id"] = "r2";
  b["run_id"] = "r1";
  const Record ra = *read_record(a).record, rb = *read_record(b).record;
  EXPECT_TRUE(ra.newer_than(rb));
  EXPECT_EQ(ra.newer_than(rb), newer_record(a, b));
  b["time"] = "2026-11-22T00:00:00Z";
  const Record rb2 = *read_record(b).record;
  EXPECT_FALSE(ra.newer_than(rb2));
  EXPECT_EQ(ra.newer_than(rb2), newer_record(a, b));
}

}  // namespace
}  // namespace evo
