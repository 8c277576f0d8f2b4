// The records a process's sessions follow (store/record_follower.h, run/session.h FollowedRecords):
// each record parsed once, however many evaluations refresh the populations, and always what
// read_records reads.
#include <gtest/gtest.h>
#include <zlib.h>

#include "core/paths.h"
#include "run/session.h"
#include "store/atomic_file.h"
#include "store/population.h"
#include "store/population_refresh.h"
#include "store/record_follower.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using test::write_text;

json run_record(int i, double us, const std::string& outcome = "ok") {
  const std::string id = "c" + std::to_string(i);
  return {{"schema_version", "1.0"},
          {"kind", "run"},
          {"run_id", "r1"},
          {"time", "2026-11-30T00:00:00Z"},
          {"candidate_id", id},
          {"variant", "7-tma-ws/v"},
          {"stage", 7},
          {"parent", nullptr},
          {"source_path", "variants/x.cu"},
          {"source_sha256", std::string(63, 'a') + std::to_string(i % 10)},
          {"params", {{"BLOCK_M", i}}},
          {"task", "fp8-d128"},
          {"outcome", outcome},
          {"reason", ""},
          {"env", {{"gpu", "NVIDIA H200"}, {"gpu_key", "nvidia-h200"}}},
          {"timing", json::array({{{"shape", "1x8x8x512x512x128"}, {"median_us", us}, {"p90_us", us}}})},
          {"fitness", outcome == "ok"
                          ? json{{"geomean_median_us", us}, {"geomean_p90_us", us}, {"shapes", 1}, {"complete", true}}
                          : json(nullptr)}};
}

// The candidate ids of what read_records gives, typed, and of what the follower holds.
std::vector<std::string> read_ids(const fs::path& dir) {
  std::vector<std::string> out;
  for (const json& j : read_records(dir).records)
    if (const RecordRead r = read_record(j); r.record) out.push_back(r.record->candidate_id);
  return out;
}
std::vector<std::string> followed_ids(RecordFollower& f) {
  f.refresh();
  std::vector<std::string> out;
  for (const Record* r : f.records()) out.push_back(r->candidate_id);
  return out;
}

void append_raw(const fs::path& p, const std::string& text) {
  FILE* out = std::fopen(p.c_str(), "ab");
  ASSERT_NE(out, nullptr);
  std::fputs(text.c_str(), out);
  std::fclose(out);
}

// The populations files of a folder, by path, as text.
std::map<std::string, std::string> population_files(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".json") out[fs::relative(e.path(), dir).string()] = read_file(e.path());
  return out;
}

// The evolve symptom (2026-11-30): every evaluation re-read and re-parsed the whole folder, so the
// parent's time per screen grew with the run. Here 40 evaluations over 400 records parse 40 lines,
// refreshed as Session::refresh_populations refreshes: from the process's follower of the folder,
// one however the folder is named and whichever session (one per GPU, or evolve's history) asks.
TEST(RecordFollower, EachEvaluationParsesOnlyItsOwnRecord) {
  const fs::path root = test::scratch_dir("follower-count"), results = root / "results";
  fs::create_directories(results);
  for (int i = 0; i < 400; ++i) append_record(results / (i < 200 ? "a.jsonl" : "b.jsonl"), run_record(i, 500 - i));
  const auto refresh = [&](const fs::path& dir) {  // the session's refresh, and what it has parsed since
    FollowedRecords records(dir);
    const size_t lines = records->lines_parsed(), bytes = records->bytes_read();
    refresh_populations(*records, root / "populations", "nvidia-h200");
    return std::pair{records->lines_parsed() - lines, records->bytes_read() - bytes};
  };
  EXPECT_EQ(refresh(results).first, 400u);
  const fs::path same[] = {results, results / ".", root / "x" / ".." / "results" / ""};
  for (int i = 400; i < 440; ++i) {
    const std::string line = run_record(i, 1000.0 / (i - 390)).dump();
    append_record(results / "c.jsonl", json::parse(line));
    const auto [lines, bytes] = refresh(same[i % 3]);
    EXPECT_EQ(lines, 1u) << "evaluation " << i;
    EXPECT_LE(bytes, line.size() + 1) << "evaluation " << i;
  }
  // What the session derived from the whole folder each time: the same files.
  const fs::path whole = root / "populations-whole";
  for (const auto& [key, pop] : derive_populations(read_records(results).records)) write_population(whole, pop);
  EXPECT_EQ(population_files(root / "populations"), population_files(whole));
  const FollowedRecords records(results);
  EXPECT_EQ(derive_typed_populations(records->records()).at("nvidia-h200/fp8-d128").stages.at(7).front().candidate_id,
            "c439");
  EXPECT_EQ(records->lines_parsed(), 440u);
}

TEST(RecordFollower, HoldsWhatReadRecordsReadsWhateverHappensToTheFiles) {
  const fs::path results = test::scratch_dir("follower-same") / "results";
  fs::create_directories(results);
  RecordFollower f(results);
  EXPECT_TRUE(followed_ids(f).empty());
  for (int i = 0; i < 5; ++i) append_record(results / "a.jsonl", run_record(i, 10));
  EXPECT_EQ(followed_ids(f), read_ids(results));
  // An append in flight: half a line is no record yet; the whole line is one, read once.
  const std::string line = run_record(5, 9).dump();
  append_raw(results / "a.jsonl", line.substr(0, 50));
  EXPECT_EQ(followed_ids(f), read_ids(results));
  EXPECT_EQ(f.records().size(), 5u);
  append_raw(results / "a.jsonl", line.substr(50) + "\n");
  EXPECT_EQ(followed_ids(f), read_ids(results));
  // A last line that is a record without its '\n' counts now, and once when a writer ends it.
  append_raw(results / "b.jsonl", run_record(6, 8).dump());
  EXPECT_EQ(followed_ids(f), read_ids(results));
  append_record(results / "b.jsonl", run_record(7, 7));
  EXPECT_EQ(followed_ids(f), read_ids(results));
  EXPECT_EQ(f.records().size(), 8u);
  // Bad lines are left out, as read_records leaves them out.
  append_raw(results / "b.jsonl", "{not json}\n" + json{{"kind", "run"}}.dump() + "\n");
  EXPECT_EQ(followed_ids(f), read_ids(results));
  // A file replaced (another inode), one rewritten in place shorter and one longer, one removed.
  write_file_atomic(results / "a.jsonl", run_record(20, 5).dump() + "\n");
  EXPECT_EQ(followed_ids(f), read_ids(results));
  write_text(results / "b.jsonl", run_record(21, 5).dump() + "\n");
  EXPECT_EQ(followed_ids(f), read_ids(results));
  write_text(results / "b.jsonl", run_record(22, 5).dump() + "\n" + run_record(23, 5).dump() + "\n");
  EXPECT_EQ(followed_ids(f), read_ids(results));
  fs::remove(results / "a.jsonl");
  EXPECT_EQ(followed_ids(f), read_ids(results));
  // A packed file, and a file in between the others by name.
  const std::string packed = run_record(30, 4).dump() + "\n" + run_record(31, 4).dump() + "\n";
  gzFile gz = gzopen((results / "0.jsonl.gz").c_str(), "wb");
  gzwrite(gz, packed.data(), unsigned(packed.size()));
  gzclose(gz);
  append_record(results / "a0.jsonl", run_record(32, 3));
  EXPECT_EQ(followed_ids(f), read_ids(results));
  EXPECT_EQ(f.records().size(), 5u);
}

TEST(RecordFollower, RevocationsWithdrawAsTheyChange) {
  const fs::path results = test::scratch_dir("follower-revoked") / "results";
  fs::create_directories(results);
  for (int i = 0; i < 4; ++i) append_record(results / "a.jsonl", run_record(i, 10));
  RecordFollower f(results);
  EXPECT_EQ(followed_ids(f).size(), 4u);
  const json entry = {{"variant", "7-tma-ws/v"},
                      {"source_sha256", {std::string(63, 'a') + "1"}},
                      {"reason", "wrong"},
                      {"fixed_by", "abcdef1"},
                      {"evidence", "docs/x.md"}};
  write_text(results / kRevocationsFile, json{{"schema", 1}, {"revoked", {entry}}}.dump());
  EXPECT_EQ(followed_ids(f), read_ids(results));
  EXPECT_EQ(f.records().size(), 3u);
  append_record(results / "a.jsonl", run_record(11, 10));  // the same source: withdrawn on arrival
  EXPECT_EQ(followed_ids(f), read_ids(results));
  EXPECT_EQ(f.records().size(), 3u);
  // A bad revoked.json is an error at every look, as read_records makes it; gone, all count again.
  write_text(results / kRevocationsFile, "{");
  EXPECT_NE(test::exit_code_of([&] { f.refresh(); }), 0);
  EXPECT_NE(test::exit_code_of([&] { f.refresh(); }), 0);
  fs::remove(results / kRevocationsFile);
  EXPECT_EQ(followed_ids(f), read_ids(results));
  EXPECT_EQ(f.records().size(), 5u);
}

}  // namespace
}  // namespace evo
