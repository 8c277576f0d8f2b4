// Hostile input to every parser evo runs on files it did not write: variant front matter
// (candidates), records (other machines' logs), populations and gates.json. Each must reject
// with a message that names the input (a usage error or a problems entry), never crash, hang or
// blow the stack. tests/fuzz/ runs the same parsers under libFuzzer; these are the fixed cases.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <typeinfo>

#include "core/errors.h"
#include "core/variant.h"
#include "policy/config.h"
#include "store/population.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

std::string nested(size_t depth, const std::string& open = "[", const std::string& close = "]") {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += open;
  for (size_t i = 0; i < depth; ++i) s += close;
  return s;
}

// Runs `parse`, which must throw evo's usage error (exit 1) whose message names `origin` and
// contains `expected`.
template <typename F>
void expect_usage_error(F&& parse, const std::string& origin, const std::string& expected, const std::string& why) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    parse();
    ADD_FAILURE() << why << ": accepted";
  } catch (const EvoError& e) {
    EXPECT_EQ(e.code(), kExitUsage) << why;
    const std::string m = e.what();
    EXPECT_NE(m.find(origin), std::string::npos)
        << why << ": the message must name " << origin << ": " << m.substr(0, 300);
    EXPECT_NE(m.find(expected), std::string::npos) << why << ": " << m.substr(0, 300);
  } catch (const std::exception& e) {
    ADD_FAILURE() << why << ": escaped as " << typeid(e).name() << ": " << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0) << why << ": too slow";
}

// ---------------------------------------------------------------------------------------------
// Variant front matter (core/variant.h)

const std::string kGoodFront = R"({"summary": "s", "dtypes": ["fp16"], "head_dims": [64]})";
std::string variant_with(const std::string& front) { return "/*evo\n" + front + "\n*/\n__device__ int x;\n"; }

TEST(VariantParser, AcceptsAMinimalFrontMatter) {
  const Variant v = parse_variant(variant_with(kGoodFront), "v.cu");
  EXPECT_EQ(v.summary, "s");
}

TEST(VariantParser, RejectsHostileFrontMatterWithAMessage) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"", "must start with a /*evo", "empty file"},
      {"/*evo {\"summary\": \"s\"", "never closed", "unterminated comment"},
      {"/*evo " + nested(100000) + " */", "must be a JSON object", "100000 nested lists"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"notes\": " + nested(100000) + "} */",
       "field 'notes' must be a string", "deep nesting inside a field"},
      {"/*evo {\"summary\": \"s\", \"x\": " + nested(200000, "{\"a\":", "}") + "} */", "not valid JSON",
       "200000 nested objects, the innermost without a value"},
      {"/*evo {\"summary\": \"\xff\xfe\", \"dtypes\": [\"fp16\"], \"head_dims\": [64]} */", "not valid JSON",
       "invalid UTF-8 in a string"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"params\": {\"" +
           std::string(100000, 'A') + "\": [1]}} */",
       "param name", "a 100 KB param name (std::regex would overflow the stack)"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"params\": {\"A\": " +
           json(std::vector<int>(1000, 1)).dump() + ", \"B\": " + json(std::vector<int>(1000, 2)).dump() +
           ", \"C\": " + json(std::vector<int>(1000, 3)).dump() + "}} */",
       "configs", "a domain of 10^9 configs"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"params\": {\"A\": [1e300]}} */",
       "must be integers", "a float param value"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"params\": {\"A\": []}} */",
       "non-empty list", "an empty domain"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"params\": {\"EVO_DTYPE\": [1]}} */",
       "reserved", "a param overriding the task macros"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp8_e5m2\"], \"head_dims\": [64]} */", "dtypes", "unknown dtype"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [96]} */", "head_dims", "unknown head dim"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"min_sm\": 1e9} */", "min_sm",
       "min_sm"},
      {"/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"schema_version\": \"9.0\"} */",
       "unknown field 'schema_version'", "an unknown field"},
      {"/*evo {\"summary\": \"*/\"} */", "not valid JSON", "*/ inside a string ends the comment"},
      {"/*evo " + std::string(8 << 20, ' ') + "{\"summary\": 1} */", "summary", "8 MiB of blanks"},
  };
  for (const auto& [source, expected, why] : cases)
    expect_usage_error([&source = source] { parse_variant(source, "variants/0-x/hostile.cu"); },
                       "variants/0-x/hostile.cu", expected, why);
}

// ---------------------------------------------------------------------------------------------
// Records (store/records.h): never throw; every bad line is a problem naming file:line.

json good_record() {
  return {{"schema_version", "1.0"},
          {"kind", "run"},
          {"variant", "0-x/v"},
          {"task", "fp16-d64"},
          {"outcome", "ok"},
          {"candidate_id", "0123456789abcdef"},
          {"source_sha256", "00"},
          {"time", "2026-11-21T00:00:00Z"},
          {"stage", 0},
          {"params", json::object()}};
}

RecordSet parse(const std::string& text) {
  RecordSet rs;
  EXPECT_NO_THROW(parse_records_text(text, "results/x.jsonl", rs));
  return rs;
}

void expect_one_problem(const std::string& text, const std::string& expected, const std::string& why) {
  const RecordSet rs = parse(text);
  EXPECT_TRUE(rs.records.empty()) << why;
  ASSERT_EQ(rs.problems.size(), 1u) << why;
  EXPECT_EQ(rs.problems[0].rfind("results/x.jsonl:1: ", 0), 0u) << why << ": " << rs.problems[0].substr(0, 200);
  EXPECT_NE(rs.problems[0].find(expected), std::string::npos) << why << ": " << rs.problems[0].substr(0, 200);
}

TEST(RecordsParser, RejectsHostileLinesAsProblems) {
  json future = good_record();
  future["schema_version"] = "2.0";
  json numeric = good_record();
  numeric["schema_version"] = 1.0;
  json bad_outcome = good_record();
  bad_outcome["outcome"] = "fast";
  json bad_stage = good_record();
  bad_stage["stage"] = "zero";
  json bad_timing = good_record();
  bad_timing["timing"] = "fast";
  json deep = good_record();
  const std::string deep_text = deep.dump().insert(1, "\"deep\": " + nested(100000) + ", ");
  const std::string bad_utf8 = "{\"schema_version\": \"1.0\", \"reason\": \"\xc0\xaf\xff\"}";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {future.dump() + "\n", "schema_version 2.0 is not 1.x", "a future major version"},
      {numeric.dump() + "\n", "missing schema_version", "a numeric schema_version"},
      {bad_outcome.dump() + "\n", "unknown outcome 'fast'", "an unknown outcome"},
      {bad_stage.dump() + "\n", "'stage'", "a string stage"},
      {bad_timing.dump() + "\n", "'timing' is not a list", "timing of the wrong type"},
      {deep_text + "\n", "nested deeper than 64", "100000 nested lists"},
      {nested(5000000) + "\n", "nested deeper than 64", "5 million nested lists"},
      {bad_utf8 + "\n", "not valid JSON", "invalid UTF-8"},
      {"[1, 2, 3]\n", "not a JSON object", "a list"},
      {"\"just a string\"\n", "not a JSON object", "a string"},
      {"{\"a\": 1} {\"b\": 2}\n", "not valid JSON", "two objects on one line"},
      {std::string("{\"schema_version\": \"1.0\"\0}", 26) + "\n", "not valid JSON", "a NUL byte"},
      {"{\"x\": \"" + std::string(17 << 20, 'x') + "\"}\n", "longer than 16 MiB", "a 17 MiB line"},
  };
  for (const auto& [text, expected, why] : cases) expect_one_problem(text, expected, why);
}

TEST(RecordsParser, NewerMinorVersionAndTornLastLineAreWarningsOnly) {
  json minor = good_record();
  minor["schema_version"] = "1.3";
  minor["field_from_the_future"] = {1, 2};
  const std::string text =
      good_record().dump() + "\r\n\n   \n" + minor.dump() + "\n" + good_record().dump().substr(0, 40);
  const RecordSet rs = parse(text);
  EXPECT_EQ(rs.records.size(), 2u);
  EXPECT_TRUE(rs.problems.empty()) << rs.problems.front();
  ASSERT_EQ(rs.warnings.size(), 2u);
  EXPECT_NE(rs.warnings[0].find("schema_version 1.3 is newer"), std::string::npos) << rs.warnings[0];
  EXPECT_NE(rs.warnings[1].find("torn last line"), std::string::npos) << rs.warnings[1];
  // The same torn line anywhere but last is a problem: something wrote over the log.
  const RecordSet mid = parse(good_record().dump().substr(0, 40) + "\n" + good_record().dump() + "\n");
  EXPECT_EQ(mid.problems.size(), 1u);
  EXPECT_EQ(mid.records.size(), 1u);
}

TEST(RecordsParser, ManyLinesAreLinear) {
  std::string text;
  const std::string line = good_record().dump() + "\n";
  for (int i = 0; i < 50000; ++i) text += line;
  const auto t0 = std::chrono::steady_clock::now();
  const RecordSet rs = parse(text);
  EXPECT_EQ(rs.records.size(), 50000u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

// What `evo merge` and `evo population rebuild` do with records that passed: derive populations.
// Fields beyond validate_record's may have any type in a foreign log; names become file paths.
TEST(RecordsParser, HostileButValidRecordsCannotBreakPopulations) {
  auto ok_record = [](const std::string& id) {
    json r = good_record();
    r["candidate_id"] = id;
    r["env"] = {{"gpu_key", "nvidia-h200"}};
    r["fitness"] = {{"geomean_median_us", 10.0}, {"geomean_p90_us", 11.0}, {"complete", true}};
    r["timing"] = {{{"shape", "1x8x8x512x512x64"}, {"median_us", 10.0}, {"p90_us", 11.0}}};
    return r;
  };
  std::vector<json> records;
  auto add = [&](const std::string& id, const std::function<void(json&)>& edit) {
    json r = ok_record(id);
    r["params"] = {{"ID", records.size()}};  // distinct identities
    edit(r);
    records.push_back(r);
  };
  add("a000000000000001", [](json& r) { r["fitness"]["geomean_p90_us"] = "slow"; });
  add("a000000000000002", [](json& r) { r["fitness"]["geomean_p90_us"] = {1, 2}; });
  add("a000000000000003", [](json& r) { r["fitness"]["complete"] = "yes"; });
  add("a000000000000004", [](json& r) { r["compile"] = "str"; });
  add("a000000000000005", [](json& r) { r["compile"] = {{"resources", 5}, {"launch", "x"}}; });
  add("a000000000000006", [](json& r) { r["gates"] = {{"correctness", {{"checks", 7}}}, {"post_timing", "x"}}; });
  add("a000000000000007", [](json& r) { r["timing"] = {1, "two", {{"median_us", "slow"}, {"shape", 3}}}; });
  add("a000000000000008", [](json& r) { r["run_id"] = 12; });
  add("a000000000000009", [](json& r) { r["env"] = "nvidia-h200"; });
  add("a00000000000000a", [](json& r) { r["env"]["gpu_key"] = "../../outside"; });
  add("a00000000000000b", [](json& r) { r["task"] = "../fp16-d64"; });
  add("a00000000000000c", [](json& r) { r["env"]["gpu_key"] = "/etc"; });
  add("a00000000000000d", [](json&) {});  // one ordinary record
  std::map<std::string, Population> pops;
  ASSERT_NO_THROW(pops = derive_populations(records));
  for (const auto& [key, pop] : pops) {
    EXPECT_EQ(key.find(".."), std::string::npos) << key;
    EXPECT_NE(key[0], '/') << key;
    EXPECT_NO_THROW(parse_population(population_json(pop).dump(), key)) << key;
  }
  const Population* ordinary = nullptr;
  for (const auto& [key, pop] : pops)
    if (pop.gpu == "nvidia-h200" && pop.task == "fp16-d64") ordinary = &pop;
  ASSERT_NE(ordinary, nullptr) << "the ordinary records' population is missing";
  // And the writer refuses such names outright.
  const auto dir = test::scratch_dir("parsers-population-names");
  Population pop = *ordinary;
  pop.gpu = "../escape";
  EXPECT_THROW(write_population(dir / "populations", pop), EvoError);
  EXPECT_FALSE(std::filesystem::exists(dir / "escape"));
}

// ---------------------------------------------------------------------------------------------
// Populations (store/population.h)

TEST(PopulationParser, RejectsHostileFilesWithAMessage) {
  const std::string good =
      R"({"schema_version": "1.0", "gpu": "g", "task": "fp16-d64", "stages": {"0": [{"variant": "v", "params": {}, "fitness": {}}]}})";
  EXPECT_NO_THROW(parse_population(good, "populations/g/fp16-d64.json"));
  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"", "not a valid population JSON object", "empty"},
      {nested(1000000), "not a valid population JSON object", "a million nested lists"},
      {nested(1000000, "{\"a\":", "}"), "not a valid population JSON object", "a million nested objects"},
      {R"({"schema_version": "2.0", "gpu": "g", "task": "t", "stages": {}})", "schema_version 2.0 is not supported",
       "a future major version"},
      {R"({"schema_version": "10.0"})", "schema_version 10.0 is not supported", "major 10 is not major 1"},
      {R"({"schema_version": 1})", "missing schema_version", "a numeric version"},
      {R"({"schema_version": "1.0", "gpu": 5, "task": "t", "stages": {}})", "field 'gpu' missing",
       "gpu of the wrong type"},
      {R"({"schema_version": "1.0", "gpu": "g", "task": "t", "stages": []})", "field 'stages' missing",
       "stages as a list"},
      {R"({"schema_version": "1.0", "gpu": "g", "task": "t", "stages": {"0": {}}})", "is not a list",
       "a stage as an object"},
      {R"({"schema_version": "1.0", "gpu": "g", "task": "t", "stages": {"0": [1]}})", "has an elite without",
       "an elite that is a number"},
      {"{\"schema_version\": \"1.0\", \"gpu\": \"\xff\"}", "not a valid population JSON object", "invalid UTF-8"},
      {good + "garbage", "not a valid population JSON object", "trailing garbage"},
  };
  for (const auto& [text, expected, why] : cases)
    expect_usage_error([&text = text] { parse_population(text, "populations/g/fp16-d64.json"); },
                       "populations/g/fp16-d64.json", expected, why);
}

// ---------------------------------------------------------------------------------------------
// gates.json (gates/config.h)

TEST(GatesConfigParser, RejectsHostileFilesWithAMessage) {
  const std::string real = test::read_text(test::source_root() / "gates" / "gates.json");
  EXPECT_NO_THROW(parse_gates_config(real, "gates/gates.json"));
  json g = json::parse(real);
  auto with = [&](const std::function<void(json&)>& edit) {
    json c = g;
    edit(c);
    return c.dump();
  };
  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"", "not valid JSON", "empty"},
      {nested(1000000), "missing field 'schema_version'", "a million nested lists"},
      {"{\"schema_version\": " + nested(1000000) + "}", "wrong type", "a nested version"},
      {with([](json& c) { c["schema_version"] = "2.0"; }), "schema_version 2.0 is not supported",
       "a future major version"},
      {with([](json& c) { c.erase("limits"); }), "missing field 'limits'", "no limits"},
      {with([](json& c) { c["limits"]["compile_s"] = "sixty"; }), "field 'compile_s' has the wrong type",
       "a string limit"},
      {with([](json& c) { c["defaults"]["seeds"] = {1e300}; }), "'seeds' has the wrong type", "a huge seed"},
      {with([](json& c) { c["defaults"]["inputs"] = {"no-such-distribution"}; }),
       "missing field 'no-such-distribution'", "an input distribution that is not defined"},
      {with([](json& c) { c["timing"]["min_samples"] = 2; }), "min_samples must be at least 10", "too few samples"},
      {with([](json& c) { c["shape_sets"]["x"] = json::parse(nested(5000)); }), "wrong type", "a nested shape set"},
      {"{\"schema_version\": \"1.\xff\"}", "not valid JSON", "invalid UTF-8"},
      {with([](json& c) { c["tolerances"]["fp8"]["atol"] = "loose"; }), "field 'atol' has the wrong type",
       "a string fp8 atol"},
  };
  for (const auto& [text, expected, why] : cases)
    expect_usage_error([&text = text] { parse_gates_config(text, "gates/gates.json"); }, "gates/gates.json", expected,
                       why);
}

// fp8 tolerances are optional in gates.json (fp8 tasks are opt-in); a task that needs them and
// finds none is a usage error naming the field, not an exception from a map lookup.
TEST(GatesConfigParser, Fp8ToleranceIsOptionalButNamedWhenMissing) {
  json g = json::parse(test::read_text(test::source_root() / "gates" / "gates.json"));
  ASSERT_TRUE(g["tolerances"].contains("fp8"));
  const GatesConfig real = parse_gates_config(g.dump(), "gates/gates.json");
  EXPECT_GT(real.tolerance(parse_task("fp8-d64")).atol, real.tolerance(parse_task("bf16-d64")).atol);
  g["tolerances"].erase("fp8");
  const GatesConfig without = parse_gates_config(g.dump(), "gates/gates.json");
  EXPECT_NO_THROW(without.tolerance(parse_task("bf16-d64")));
  expect_usage_error([&] { without.tolerance(parse_task("fp8-d64")); }, "tolerances.fp8", "fp8-d64",
                     "no fp8 tolerance");
}

}  // namespace
}  // namespace evo
