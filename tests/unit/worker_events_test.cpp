// The worker protocol seen from the parent (gpu/worker_events.h, run/worker_client.h): every
// event decodes to a type or to a reason; a worker that sends a line that does not decode gets
// a crash verdict and is killed, and the parent goes on.
#include "gpu/worker_events.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "run/job_events.h"
#include "run/worker_client.h"
#include "support/test_support.h"

namespace evo {
namespace {

TEST(WorkerEvents, DecodesEachKindWithItsFields) {
  auto d = decode_worker_event(
      R"({"event":"case_done","case":"small/0","out":"/w/gate0.out","deterministic":false,"inputs_intact":true})");
  ASSERT_TRUE(d.event) << d.error;
  EXPECT_EQ(d.event->kind, WorkerEventKind::case_done);
  EXPECT_EQ(d.event->case_id, "small/0");
  EXPECT_EQ(d.event->out, "/w/gate0.out");
  EXPECT_EQ(d.event->deterministic, false);
  EXPECT_EQ(d.event->inputs_intact, true);
  EXPECT_FALSE(d.event->guards_intact);

  d = decode_worker_event(R"({"event":"post_done","bench":"b0","out":"/w/post1.out","us":12.5})");
  ASSERT_TRUE(d.event) << d.error;
  EXPECT_EQ(d.event->us, 12.5);
  d = decode_worker_event(R"({"event":"timing","bench":"b0","pruned":true,"stats":{"median_us":3.0}})");
  ASSERT_TRUE(d.event) << d.error;
  EXPECT_TRUE(d.event->pruned);
  EXPECT_EQ(d.event->fields["stats"]["median_us"], 3.0);
}

TEST(WorkerEvents, EncodeThenDecodeIsTheSameEvent) {
  WorkerEvent e;
  e.kind = WorkerEventKind::post_done;
  e.bench = "mission/1";
  e.out = "/tmp/post.out";
  e.us = 41.25;
  e.guards_intact = false;
  auto d = decode_worker_event(encode_worker_event(e));
  ASSERT_TRUE(d.event) << d.error;
  EXPECT_EQ(d.event->kind, e.kind);
  EXPECT_EQ(d.event->bench, e.bench);
  EXPECT_EQ(d.event->out, e.out);
  EXPECT_EQ(d.event->us, e.us);
  EXPECT_EQ(d.event->guards_intact, false);
  EXPECT_FALSE(d.event->counters_zero);  // only a split kernel's case_done carries it
  WorkerEvent split = case_done_event("c", "/o", true, true, true, false);
  auto s = decode_worker_event(encode_worker_event(split));
  ASSERT_TRUE(s.event) << s.error;
  EXPECT_EQ(s.event->counters_zero, false);
  EXPECT_FALSE(s.event->workspace_repeat_same);
  WorkerEvent repeat = case_done_event("c", "/o", true, true, true, true, false);
  auto r = decode_worker_event(encode_worker_event(repeat));
  ASSERT_TRUE(r.event) << r.error;
  EXPECT_EQ(r.event->counters_zero, true);
  EXPECT_EQ(r.event->workspace_repeat_same, false);
  for (auto k : {WorkerEventKind::phase, WorkerEventKind::device, WorkerEventKind::case_done, WorkerEventKind::await,
                 WorkerEventKind::timing, WorkerEventKind::post_done, WorkerEventKind::done, WorkerEventKind::error})
    EXPECT_EQ(worker_event_kind_from_string(to_string(k)), k);
}

// What a broken or hostile worker might send; none of it may throw or pass.
const char* const kMalformed[] = {
    "not json",
    "[1,2,3]",
    R"({"no_event":1})",
    R"({"event":"launch_missiles"})",
    R"({"event":7})",
    R"({"event":"case_done","case":5,"out":"/x"})",
    R"({"event":"case_done","case":"c"})",
    R"({"event":"post_done","bench":"b","out":"/x"})",
    R"({"event":"post_done","bench":"b","out":"/x","us":"fast"})",
    R"({"event":"case_done","case":"c","out":"/x","guards_intact":"yes"})",
    R"({"event":"case_done","case":"c","out":"/x","counters_zero":0})",
    R"({"event":"case_done","case":"c","out":"/x","workspace_repeat_same":"same"})",
    R"({"event":"timing","bench":"b","stats":[1]})",
    R"({"event":"timing","bench":"b","integrity":{"samples":-1}})",
    R"({"event":"timing","bench":"b","integrity":[]})",
    R"({"event":"post_done","bench":"b","us":1,"device_check":{"n":"all"}})",
    R"({"event":"phase"})",
};

TEST(WorkerEvents, MalformedLinesDecodeToAReason) {
  for (const char* line : kMalformed) {
    auto d = decode_worker_event(line);
    EXPECT_FALSE(d.event) << line;
    EXPECT_FALSE(d.error.empty()) << line;
  }
}

// A stand-in for `evo __worker`: prints one line, then waits to be killed (or exits).
std::filesystem::path fake_worker(const std::filesystem::path& dir, const std::string& line, bool linger = true) {
  test::write_text(dir / "line.txt", line + "\n");
  const auto script = dir / "fake-evo";
  test::write_text(
      script, "#!/bin/sh\ncat '" + (dir / "line.txt").string() + "'\n" + (linger ? "exec sleep 30\n" : "exit 0\n"));
  ::chmod(script.c_str(), 0755);
  return script;
}

TEST(WorkerClient, MalformedReplyIsACleanCrashVerdict) {
  const std::string saved = std::getenv("EVO_EXECUTABLE") ? std::getenv("EVO_EXECUTABLE") : "";
  int n = 0;
  for (const char* line : kMalformed) {
    const auto dir = test::scratch_dir("fake-worker-" + std::to_string(n++));
    ::setenv("EVO_EXECUTABLE", fake_worker(dir, line).c_str(), 1);
    WorkerJob job;
    job.mode = "candidate";
    Limits limits;
    limits.load_s = 10;
    WorkerClient worker(job, dir, limits);
    EXPECT_FALSE(worker.next_event()) << line;
    ASSERT_TRUE(worker.failure()) << line;
    EXPECT_EQ(worker.failure()->outcome, Outcome::crash) << line;
    EXPECT_NE(worker.failure()->reason.find("broke the protocol"), std::string::npos) << worker.failure()->reason;
    EXPECT_LT(worker.seconds(), 9.0) << "the worker was killed, not waited out";
    EXPECT_FALSE(worker.next_event()) << "a rejected worker says nothing more";
  }
  ::setenv("EVO_EXECUTABLE", saved.c_str(), 1);
}

// Well-formed events that are not about the job: the parent's check (run/job_events.h) rejects
// them, and the worker ends with a crash verdict at once, as for a line that does not decode.
TEST(WorkerClient, WellFormedButForeignEventIsACleanCrashVerdict) {
  const std::string saved = std::getenv("EVO_EXECUTABLE") ? std::getenv("EVO_EXECUTABLE") : "";
  const auto base = test::scratch_dir("fake-worker-foreign");
  const std::pair<std::string, std::string> cases[] = {
      {R"({"event":"case_done","case":"huge/9","out":"OUT"})", "case_done for unknown case 'huge/9'"},
      {R"({"event":"case_done","case":"small/0","out":"/tmp/elsewhere.out"})",
       "case small/0: output in a file it was not given"},
  };
  int n = 0;
  for (const auto& [line_template, reason] : cases) {
    const auto dir = base / std::to_string(n++);
    std::filesystem::create_directories(dir);
    WorkerJob job;
    job.mode = "candidate";
    CaseSpec cs;
    cs.id = "small/0";
    cs.out_path = (dir / "gate0.out").string();
    job.cases.push_back(cs);
    std::string line = line_template;
    if (auto at = line.find("OUT"); at != std::string::npos) line.replace(at, 3, cs.out_path);
    ::setenv("EVO_EXECUTABLE", fake_worker(dir, line).c_str(), 1);
    Limits limits;
    limits.load_s = 10;
    WorkerClient worker(job, dir, limits);
    auto ev = worker.next_event();
    ASSERT_TRUE(ev) << "the line is well-formed: " << line;
    EXPECT_FALSE(worker.failure());
    auto why = foreign_event(job, *ev);
    ASSERT_TRUE(why) << line;
    EXPECT_EQ(*why, reason);
    worker.reject(*why);
    ASSERT_TRUE(worker.failure());
    EXPECT_EQ(worker.failure()->outcome, Outcome::crash);
    EXPECT_EQ(worker.failure()->reason, "worker broke the protocol: " + reason);
    EXPECT_LT(worker.seconds(), 9.0) << "the worker was killed, not waited out";
    ASSERT_TRUE(worker.exit_status());
    EXPECT_FALSE(worker.next_event()) << "a rejected worker says nothing more";
  }
  ::setenv("EVO_EXECUTABLE", saved.c_str(), 1);
}

TEST(WorkerClient, ErrorEventNeverPassesACandidate) {
  const auto dir = test::scratch_dir("fake-worker-error-ok");
  const std::string saved = std::getenv("EVO_EXECUTABLE");
  ::setenv("EVO_EXECUTABLE", fake_worker(dir, R"({"event":"error","outcome":"ok","reason":"all good"})", false).c_str(),
           1);
  WorkerJob job;
  job.mode = "candidate";
  WorkerClient worker(job, dir, Limits{});
  auto ev = worker.next_event();
  ASSERT_TRUE(ev);
  ASSERT_TRUE(worker.failure());
  EXPECT_EQ(worker.failure()->outcome, Outcome::runtime);
  ::setenv("EVO_EXECUTABLE", saved.c_str(), 1);
}

}  // namespace
}  // namespace evo
