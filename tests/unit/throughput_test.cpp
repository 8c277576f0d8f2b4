// What a candidate's evaluation spends on the host, without a GPU: SHA-256 (the worker hashes
// every input before and after each launch; the SHA-NI path must agree with the standard),
// scratch outputs written without fsync yet never torn, whole-file reads, and the per-phase
// clock the worker and the parent keep for every record.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "core/paths.h"
#include "core/sha256.h"
#include "run/eval_phases.h"
#include "store/atomic_file.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

TEST(Sha256, StandardVectorsIncludingOnesLongerThanABlock) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, AnySplitOfTheInputGivesTheSameDigest) {
  std::mt19937 rng(5);
  std::string data(100000, '\0');
  for (char& c : data) c = char(rng());
  const std::string whole = sha256_hex(data);
  for (size_t step : {1u, 7u, 63u, 64u, 65u, 1000u, 4096u}) {
    Sha256 h;
    for (size_t at = 0; at < data.size(); at += step) h.update(std::string_view(data).substr(at, step));
    EXPECT_EQ(h.hex(), whole) << "updates of " << step << " bytes";
  }
  data[54321] ^= 1;
  EXPECT_NE(sha256_hex(data), whole);
}

TEST(ScratchFile, ReplacesWholeAndReadsBackExactly) {
  const fs::path dir = test::scratch_dir("scratch-file");
  std::string big(3u << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 131u);
  write_scratch_file(dir / "sub" / "out.bin", big);
  EXPECT_EQ(read_file(dir / "sub" / "out.bin"), big);
  write_scratch_file(dir / "sub" / "out.bin", "short");
  EXPECT_EQ(read_file(dir / "sub" / "out.bin"), "short");
}

TEST(ScratchFile, AMissingFileIsAnErrorNamingIt) {
  try {
    read_file("/nonexistent/evo/out.bin");
    FAIL() << "read a missing file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/evo/out.bin"), std::string::npos);
  }
}

TEST(EvalPhases, TimesEachGateCaseFromItsAnnouncementToItsEnd) {
  EvalPhases p;
  auto event = [](WorkerEventKind kind, const std::string& phase, const std::string& id) {
    WorkerEvent e;
    e.kind = kind;
    e.phase = phase;
    e.case_id = id;
    return e;
  };
  p.on_event(event(WorkerEventKind::phase, "gate", "sampled/3/1x2x2x64x64x64"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.on_event(event(WorkerEventKind::case_done, "", "sampled/3/1x2x2x64x64x64"));
  p.on_event(event(WorkerEventKind::phase, "gate", "sampled/4/1x2x2x64x64x64"));
  p.on_event(event(WorkerEventKind::case_done, "", "sampled/9/other"));  // not the announced case
  p.on_event(event(WorkerEventKind::phase, "timing", "bench/1"));
  const auto s = p.case_seconds("sampled/3/1x2x2x64x64x64");
  ASSERT_TRUE(s.has_value());
  EXPECT_GE(*s, 0.02);
  EXPECT_LT(*s, 60.0);
  EXPECT_FALSE(p.case_seconds("sampled/4/1x2x2x64x64x64").has_value());
  EXPECT_FALSE(p.case_seconds("sampled/9/other").has_value());
}

TEST(EvalPhases, KeepsTheWorkersNumbersOnlyAndAveragesThem) {
  EvalPhases p;
  WorkerEvent phase;
  phase.kind = WorkerEventKind::phase;
  p.on_event(phase);
  WorkerEvent done;
  done.kind = WorkerEventKind::done;
  done.fields = {{"event", "done"},
                 {"clock", {{"init_s", 0.5}, {"hash_s", 1.25}, {"evil_s", "rm -rf"}, {"neg_s", -3.0}}}};
  p.on_event(done);
  const PhaseDetail d = p.detail();
  ASSERT_TRUE(d.count("process_start_s"));
  EXPECT_TRUE(d.at("process_start_s").has_value());
  EXPECT_EQ(d.at("worker_init_s"), 0.5);
  EXPECT_EQ(d.at("worker_hash_s"), 1.25);
  EXPECT_FALSE(d.count("worker_evil_s"));
  EXPECT_FALSE(d.count("worker_neg_s"));
  EXPECT_EQ(d.at("parent_read_s"), 0.0);
  auto with_phases = [](std::optional<PhaseDetail> detail) {
    Record r;
    r.phases = RecordPhases{};
    r.phases->gpu_s = 1.0;
    r.phases->detail = std::move(detail);
    return r;
  };
  std::vector<Record> records{
      with_phases(PhaseDetail{{"worker_hash_s", 1.0}, {"parent_read_s", 0.5}, {"record_s", 0.1}}),
      with_phases(PhaseDetail{{"worker_hash_s", 3.0}, {"parent_read_s", 0.5}, {"process_start_s", std::nullopt}}),
      with_phases(std::nullopt),  // no detail (a compile failure): not counted
      Record{}};
  EXPECT_EQ(phase_means(records), "per candidate, mean s over 2: hash 2.000, parent_read 0.500, record 0.050");
  EXPECT_EQ(phase_means({}), "");
}

}  // namespace
}  // namespace evo
