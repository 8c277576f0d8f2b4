#include "run/job_events.h"

namespace evo {

namespace {

const BenchSpec* find_bench(const WorkerJob& job, const std::string& id) {
  for (const auto& b : job.bench)
    if (b.id == id) return &b;
  return nullptr;
}

// A case_done names a gate case of the job and the file the job gave that case. (A benchmark's
// fresh case is known to the job too, but its check comes with post_done, never case_done.)
std::optional<std::string> foreign_case(const WorkerJob& job, const WorkerEvent& ev) {
  const CaseSpec* spec = nullptr;
  for (const auto& cs : job.cases)
    if (!spec && cs.id == ev.case_id) spec = &cs;
  bool fresh = false;
  for (const auto& b : job.bench) fresh |= b.fresh.id == ev.case_id;
  if (!spec && !fresh) return "case_done for unknown case '" + ev.case_id.substr(0, 64) + "'";
  if (spec && spec->device_check.on) {  // checked on the GPU: counts, never an output file
    if (!ev.device_check) return "case " + ev.case_id + ": no GPU check for a case checked on the GPU";
    if (!ev.out.empty()) return "case " + ev.case_id + ": an output file for a case checked on the GPU";
    return std::nullopt;
  }
  if (ev.device_check) return "case " + ev.case_id + ": a GPU check it was not asked for";
  if (!spec || spec->out_path != ev.out) return "case " + ev.case_id + ": output in a file it was not given";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> foreign_event(const WorkerJob& job, const WorkerEvent& ev) {
  switch (ev.kind) {
    case WorkerEventKind::case_done: return foreign_case(job, ev);
    case WorkerEventKind::timing:
      if (!find_bench(job, ev.bench)) return "timing for unknown benchmark '" + ev.bench.substr(0, 64) + "'";
      return std::nullopt;
    case WorkerEventKind::post_done: {
      const BenchSpec* b = find_bench(job, ev.bench);
      if (!b) return "post_done for unknown benchmark '" + ev.bench.substr(0, 64) + "'";
      // Benchmark shapes are checked on the GPU (gpu/timing_loop.h): counts, never a file.
      if (!ev.device_check) return "benchmark " + b->id + ": no GPU check in its post_done";
      if (!ev.out.empty()) return "benchmark " + b->id + ": an output file it was not given";
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

}  // namespace evo
