// The typed record (store/typed_record.h): every committed record reads and writes back to the
// same JSON; a newer minor is read with a warning and its unknown fields kept; another major is
// refused.
#include "store/typed_record.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "store/json_fields.h"
#include "store/record.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

TEST(TypedRecord, EveryCommittedRecordRoundTrips) {
  size_t n = 0, sanitized = 0, sampled = 0, detailed = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::source_root() / "results")) {
    if (!is_records_file(e.path())) continue;
    std::istringstream in(read_records_file(e.path()));
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
      // The typed parts see what the JSON holds: an object is typed, null stays null.
      const RecordGates gates = r.record->gates.value_or(RecordGates{});
      const json jg = j.value("gates", json::object());
      EXPECT_EQ(gates.sanitizer.has_value(), jg.contains("sanitizer") && jg["sanitizer"].is_object()) << e.path();
      EXPECT_EQ(gates.sampled.has_value(), jg.contains("sampled") && jg["sampled"].is_object()) << e.path();
      sanitized += gates.sanitizer && gates.sanitizer->tools && !gates.sanitizer->tools->empty();
      sampled += gates.sampled && gates.sampled->seed;
      detailed += r.record->phases && r.record->phases->detail;
      ++n;
    }
  }
  EXPECT_GT(n, 50u) << "results/ holds 81 committed records";
  EXPECT_GT(sanitized, 0u) << "results/ holds records of evo run --sanitize";
  EXPECT_GT(sampled, 0u) << "results/ holds records of the sampled gate";
  EXPECT_GT(detailed, 0u) << "results/ holds records with phases.detail";
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

// The sanitizer report, the sampled gate's summary, the gate seed and the phase detail are typed;
// what they do not know (a tool's new field, a foreign detail value) rides along untouched.
TEST(TypedRecord, GatesSanitizerSampledAndPhasesAreTyped) {
  json j = minimal();
  j["gate_seed"] = 1511791795u;
  j["gates"] = {{"sampled", {{"seed", 1511791795u}, {"cases", 12}, {"run", 12}, {"passed", 11}}},
                {"deep",
                 {{"pass", false},
                  {"checks",
                   {{{"case", "deep/frontier/65535x1x1x1x64x64/s0/outlier_rows"},
                     {"pass", false},
                     {"max_abs", 0.5},
                     {"reason", "beyond atol"}}}}}},
                {"sanitizer",
                 {{"pass", false},
                  {"cases", {"sanitize/small/a", "sanitize/small/b"}},
                  {"tools",
                   {{{"tool", "memcheck"},
                     {"pass", true},
                     {"errors", 0},
                     {"hazards", 0},
                     {"seconds", 0.44},
                     {"exit", "exit 0"},
                     {"summary", "ERROR SUMMARY: 0 errors"},
                     {"first", ""}},
                    {{"tool", "racecheck"},
                     {"pass", false},
                     {"errors", 4},
                     {"hazards", 4},
                     {"seconds", 1.23},
                     {"exit", "exit 86"},
                     {"summary", "RACECHECK SUMMARY: 4 hazards"},
                     {"first", "Error: Race"},
                     {"log", "head\n[…]\ntail"},
                     {"new_field", {1, 2}}}}}}}};
  j["phases"] = {{"compile_s", 0.01},
                 {"gpu_s", 3.2},
                 {"sanitizer_s", 1.67},
                 {"deep_gate_s", 12.5},
                 {"detail", {{"process_start_s", nullptr}, {"worker_init_s", 0.31}, {"record_s", 0.002}}}};
  const RecordRead r = read_record(j);
  ASSERT_TRUE(r.record) << r.error;
  const Record& rec = *r.record;
  EXPECT_EQ(rec.gate_seed, 1511791795);
  ASSERT_TRUE(rec.gates && rec.gates->sampled && rec.gates->sanitizer);
  EXPECT_EQ(rec.gates->sampled->seed, 1511791795);
  EXPECT_EQ(rec.gates->sampled->cases, 12);
  EXPECT_EQ(rec.gates->sampled->passed, 11);
  const SanitizerReport& san = *rec.gates->sanitizer;
  EXPECT_FALSE(san.passed());
  ASSERT_TRUE(san.cases && san.tools);
  EXPECT_EQ(san.cases->size(), 2u);
  ASSERT_EQ(san.tools->size(), 2u);
  const SanitizerToolRun& race = (*san.tools)[1];
  EXPECT_EQ(race.tool, "racecheck");
  EXPECT_EQ(race.pass, false);
  EXPECT_EQ(race.hazards, 4);
  EXPECT_EQ(race.seconds, 1.23);
  EXPECT_EQ(race.log, "head\n[…]\ntail");
  EXPECT_EQ(race.extra["new_field"], json({1, 2}));
  EXPECT_FALSE((*san.tools)[0].log);
  ASSERT_TRUE(rec.phases && rec.phases->detail);
  EXPECT_EQ(rec.phases->sanitizer_s, 1.67);
  EXPECT_EQ(rec.phases->deep_gate_s, 12.5);  // a would-be elite's deep tier (run/evaluator.cpp)
  ASSERT_TRUE(rec.gates->deep && rec.gates->deep->checks);
  EXPECT_EQ(rec.gates->deep->pass, false);
  ASSERT_EQ(rec.gates->deep->checks->size(), 1u);
  EXPECT_EQ((*rec.gates->deep->checks)[0].case_id, "deep/frontier/65535x1x1x1x64x64/s0/outlier_rows");
  EXPECT_EQ(rec.phases->detail->at("worker_init_s"), 0.31);
  EXPECT_FALSE(rec.phases->detail->at("process_start_s").has_value());
  EXPECT_TRUE(rec.gates->extra.empty()) << rec.gates->extra.dump();
  EXPECT_TRUE(rec.phases->extra.empty()) << rec.phases->extra.dump();
  // read -> write -> read loses nothing
  const json written = write_record(rec);
  EXPECT_EQ(written, j);
  EXPECT_EQ(write_record(*read_record(written).record), j);
}

TEST(TypedRecord, NullOrForeignGatePartsStayAsTheyCame) {
  json j = minimal();
  j["gate_seed"] = nullptr;
  j["gates"] = {{"sanitizer", nullptr}, {"sampled", nullptr}, {"future_gate", {{"pass", true}}}};
  RecordRead r = read_record(j);
  ASSERT_TRUE(r.record) << r.error;
  EXPECT_FALSE(r.record->gate_seed);
  EXPECT_FALSE(r.record->gates->sanitizer);
  EXPECT_FALSE(r.record->gates->sampled);
  EXPECT_EQ(write_record(*r.record), j);
  // A report set in code is written over the record's null, and reads back as itself.
  Record rec = *r.record;
  rec.gates->sanitizer = SanitizerReport{};
  rec.gates->sanitizer->pass = true;
  rec.gates->sampled = SampledGateSummary{};
  rec.gates->sampled->seed = 7;
  const json written = write_record(rec);
  EXPECT_EQ(written["gates"]["sanitizer"], json({{"pass", true}}));
  EXPECT_EQ(written["gates"]["sampled"], json({{"seed", 7}}));
  const Record back = *read_record(written).record;
  EXPECT_TRUE(back.gates->sanitizer->passed());
  EXPECT_EQ(back.gates->sampled->seed, 7);
}

TEST(TypedRecord, EveryOutcomeReadsAndWritesBack) {
  for (size_t i = 0; i < kOutcomeCount; ++i) {
    json j = minimal();
    j["outcome"] = std::string(to_string(Outcome(i)));
    const RecordRead r = read_record(j);
    ASSERT_TRUE(r.record) << j["outcome"] << ": " << r.error;
    EXPECT_EQ(r.record->outcome, Outcome(i));
    EXPECT_EQ(write_record(*r.record), j);
  }
  json j = minimal();
  j["outcome"] = "integrity";
  EXPECT_EQ(read_record(j).record->outcome, Outcome::integrity);
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

// Record.params is a ParamSet: integer tunables, in the record's (sorted) key order; a value
// that is no integer (a string, a fraction) is refused with the field named, as a time is.
TEST(TypedRecord, ParamsAreIntegerTunables) {
  json j = minimal();
  j["params"] = {{"NWARPS", 8}, {"BLOCK_M", 128}};
  const RecordRead r = read_record(j);
  ASSERT_TRUE(r.record) << r.error;
  EXPECT_EQ(r.record->params, (ParamSet{{"BLOCK_M", 128}, {"NWARPS", 8}}));
  EXPECT_EQ(write_record(*r.record).dump(), j.dump());
  for (const json& bad : {json{{"BLOCK_M", 1.5}}, json{{"BLOCK_M", "64"}}, json{{"BLOCK_M", json::array({64})}}}) {
    j["params"] = bad;
    EXPECT_EQ(read_record(j).error.rfind("field 'params' is " + bad.dump(), 0), 0u) << read_record(j).error;
  }
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
