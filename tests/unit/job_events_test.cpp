// run/job_events.h: a well-formed worker event is believed only when it is about the job the
// parent sent (its cases, its benchmarks, the output files it named).
#include "run/job_events.h"

#include <gtest/gtest.h>

namespace evo {
namespace {

WorkerJob two_case_job() {
  WorkerJob job;
  job.mode = "candidate";
  CaseSpec a, b;
  a.id = "small/0";
  a.out_path = "/w/gate0.out";
  b.id = "small/1";
  b.out_path = "/w/gate1.out";
  job.cases = {a, b};
  BenchSpec bench;
  bench.id = "mission/0";
  bench.fresh.id = "mission/0/fresh";
  job.bench = {bench};
  return job;
}

WorkerEvent event(WorkerEventKind kind, const std::string& id, const std::string& out) {
  WorkerEvent e;
  e.kind = kind;
  (kind == WorkerEventKind::case_done ? e.case_id : e.bench) = id;
  e.out = out;
  return e;
}

// A benchmark's check: counts from the GPU (gpu/timing_loop.h), never a file.
WorkerEvent checked_on_gpu(const std::string& bench) {
  WorkerEvent e = event(WorkerEventKind::post_done, bench, "");
  e.device_check = DeviceCheckFacts{};
  return e;
}

TEST(JobEvents, EventsAboutTheJobAreBelieved) {
  const WorkerJob job = two_case_job();
  EXPECT_FALSE(foreign_event(job, event(WorkerEventKind::case_done, "small/1", "/w/gate1.out")));
  EXPECT_FALSE(foreign_event(job, event(WorkerEventKind::timing, "mission/0", "")));
  EXPECT_FALSE(foreign_event(job, checked_on_gpu("mission/0")));
  EXPECT_FALSE(foreign_event(job, event(WorkerEventKind::phase, "anything", "")));
}

TEST(JobEvents, UnknownCasesAndForeignFilesAreNamed) {
  const WorkerJob job = two_case_job();
  auto why = foreign_event(job, event(WorkerEventKind::case_done, "huge/9", "/w/gate0.out"));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "case_done for unknown case 'huge/9'");
  why = foreign_event(job, event(WorkerEventKind::case_done, "small/0", "/w/gate1.out"));  // another case's file
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "case small/0: output in a file it was not given");
  why = foreign_event(job, event(WorkerEventKind::case_done, "small/0", "/etc/passwd"));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "case small/0: output in a file it was not given");
  why = foreign_event(job, event(WorkerEventKind::case_done, "mission/0/fresh", "/w/post2.out"));  // post_done's case
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "case mission/0/fresh: output in a file it was not given");
  why = foreign_event(job, event(WorkerEventKind::timing, "mission/7", ""));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "timing for unknown benchmark 'mission/7'");
  why = foreign_event(job, checked_on_gpu("mission/7"));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "post_done for unknown benchmark 'mission/7'");
  why = foreign_event(job, event(WorkerEventKind::post_done, "mission/0", "/w/gate0.out"));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "benchmark mission/0: no GPU check in its post_done");
  WorkerEvent both = checked_on_gpu("mission/0");
  both.out = "/w/gate0.out";
  why = foreign_event(job, both);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "benchmark mission/0: an output file it was not given");
}

TEST(JobEvents, AHostileIdIsCutInTheReason) {
  const WorkerJob job = two_case_job();
  auto why = foreign_event(job, event(WorkerEventKind::case_done, std::string(10000, 'x'), "/w/gate0.out"));
  ASSERT_TRUE(why);
  EXPECT_LT(why->size(), 120u);
}

}  // namespace
}  // namespace evo
