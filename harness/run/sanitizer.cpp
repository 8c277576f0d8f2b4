#include "run/sanitizer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "compile/source_policy.h"
#include "core/errors.h"
#include "core/paths.h"
#include "gates/correctness.h"
#include "run/worker_client.h"
#include "store/atomic_file.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kPrefix = "========= ";

// "ERROR SUMMARY: 3 errors" -> 3; "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" -> 1.
std::optional<long> count_before(std::string_view text, std::string_view word) {
  const size_t at = text.find(word);
  if (at == std::string_view::npos) return std::nullopt;
  size_t end = at;
  while (end > 0 && text[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && text[begin - 1] >= '0' && text[begin - 1] <= '9') --begin;
  if (begin == end) return std::nullopt;
  return std::strtol(std::string(text.substr(begin, end - begin)).c_str(), nullptr, 10);
}

bool executable(const fs::path& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); }

}  // namespace

SanitizerFindings parse_sanitizer_log(std::string_view log) {
  SanitizerFindings f;
  std::string where;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t nl = log.find('\n', pos);
    if (nl == std::string_view::npos) nl = log.size();
    std::string_view line = log.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, kPrefix.size()) != kPrefix) continue;
    std::string_view body = line.substr(kPrefix.size());
    if (body.rfind("ERROR SUMMARY:", 0) == 0) {
      // With more errors than --print-limit a second line follows: "ERROR SUMMARY: 87 errors
      // were not printed. …"; the first one has the total.
      f.summary_seen = true;
      if (f.summary.empty()) f.summary = std::string(body);
      f.errors = std::max(f.errors, count_before(body, " error").value_or(0));
      continue;
    }
    if (body.rfind("RACECHECK SUMMARY:", 0) == 0) {
      // "RACECHECK SUMMARY: 8 hazards displayed (0 errors, 8 warnings)"
      f.summary_seen = true;
      f.summary = std::string(body);
      f.hazards = std::max(f.hazards, count_before(body, " hazard").value_or(0));
      const size_t paren = body.find('(');
      if (paren != std::string_view::npos)
        f.errors = std::max(f.errors, count_before(body.substr(paren), " error").value_or(0));
      continue;
    }
    const size_t text = body.find_first_not_of(' ');
    if (text == std::string_view::npos || body.rfind("COMPUTE-SANITIZER", 0) == 0) continue;
    if (text == 0 && f.first.empty()) {
      f.first = std::string(body);
    } else if (text > 0 && !f.first.empty() && where.empty()) {
      // The report's first detail: "at evo_attn_fwd+0x2d0 in x.cu:75", "and Write access at …".
      where = std::string(body.substr(text));
    }
  }
  if (!where.empty()) f.first += " — " + where;
  if (f.first.size() > 300) f.first = f.first.substr(0, 300) + "…";
  return f;
}

std::vector<std::string> sanitizer_tools(const PtxasResources& resources, const LaunchGeometry& launch) {
  std::vector<std::string> tools{"memcheck", "initcheck"};
  const bool shared = resources.static_smem > 0 || launch.smem_bytes > 0;
  if (shared) tools.push_back("racecheck");
  if (shared || resources.barriers > 0) tools.push_back("synccheck");
  return tools;
}

std::optional<fs::path> find_compute_sanitizer() {
  if (const char* env = std::getenv("EVO_COMPUTE_SANITIZER"); env && *env) {
    // Set on purpose: use it or say it is wrong, never fall back to another one.
    if (executable(env)) return fs::path(env);
    return std::nullopt;
  }
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      const size_t colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) candidates.push_back(fs::path(std::string(dir)) / "compute-sanitizer");
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(fs::path(home) / "bin" / "compute-sanitizer");
  candidates.push_back("/usr/local/cuda/bin/compute-sanitizer");
  for (const auto& p : candidates)
    if (executable(p)) return p;
  return std::nullopt;
}

fs::path required_compute_sanitizer(bool wanted) {
  if (!wanted) return {};
  auto found = find_compute_sanitizer();
  const char* named = std::getenv("EVO_COMPUTE_SANITIZER");
  if (!found && named && *named)
    throw environment_error(fmt::format(
        "EVO_COMPUTE_SANITIZER={} is not an executable file: point it at compute-sanitizer (CUDA toolkit) or unset it",
        named));
  if (!found)
    throw environment_error(
        "--sanitize needs compute-sanitizer (CUDA toolkit): put it on PATH, set CUDA_HOME, or set "
        "EVO_COMPUTE_SANITIZER");
  return *found;
}

namespace {

// What one tool's worker reported about the cases, checked here against the references.
struct ToolCases {
  size_t done = 0;
  std::optional<Verdict> wrong;  // a wrong output under the tool
};

ToolCases read_tool_cases(WorkerClient& worker, const EvalEnv& env, const Candidate& c, const WorkerJob& job,
                          const std::string& tool, const ProgressFn& progress) {
  ToolCases out;
  while (auto ev = worker.next_event()) {
    if (ev->kind == WorkerEventKind::phase && !ev->case_id.empty()) progress("sanitizer " + tool + " " + ev->case_id);
    if (ev->kind != WorkerEventKind::case_done) continue;
    const CaseSpec* cs = nullptr;
    for (const auto& x : job.cases)
      if (x.id == ev->case_id && x.out_path == ev->out) cs = &x;
    if (!cs) {
      worker.reject("case_done for a case or output file the job did not name");
      break;
    }
    ++out.done;
    // The case's own inputs' tolerance, as the gate applies it: large_v, huge_v, tiny_v and small_v scale
    // the output (an honest elite failed a deep large_v case under memcheck on the dtype's
    // default tolerance, H200 2026-11-29).
    const Tolerance tol = env.gates->tolerance(c.task, cs->inputs).for_keys(cs->shape.seq_kv);
    OutputCheck oc =
        check_output(read_file(ev->out), read_file(env.references->path_for(c.task, *cs)), c.task.dtype, tol);
    fs::remove(ev->out);
    if (!out.wrong && !oc.pass)
      out.wrong = Verdict{Outcome::correctness, fmt::format("under {}, {}: {}", tool, cs->id, oc.reason)};
    if (!out.wrong && !ev->inputs_intact.value_or(true))
      out.wrong = Verdict{Outcome::correctness, fmt::format("under {}, {}: modified its inputs", tool, cs->id)};
  }
  return out;
}

// The tool's verdict: its own reports first, then the worker's death, a wrong output, and a
// tool that ended without its summary.
std::optional<Verdict> tool_verdict(const std::string& tool, const SanitizerFindings& f, const WorkerClient& worker,
                                    const ToolCases& cases, size_t expected_cases) {
  const auto& st = worker.exit_status();
  const bool tool_flagged = st && st->exited && st->code == kSanitizerErrorExit;
  if (f.reports() > 0 || tool_flagged)
    return Verdict{Outcome::sanitizer,
                   fmt::format("compute-sanitizer {}: {}{}", tool,
                               f.summary.empty() ? "exit " + std::to_string(kSanitizerErrorExit) : f.summary,
                               f.first.empty() ? "" : ": " + f.first)};
  if (worker.failure()) {
    Verdict v = *worker.failure();
    v.reason = "under compute-sanitizer " + tool + ": " + v.reason;
    return v;
  }
  if (cases.wrong) return cases.wrong;
  if (!f.summary_seen || cases.done != expected_cases)
    return Verdict{Outcome::sanitizer,
                   fmt::format("compute-sanitizer {} ended without its summary ({}, {} of {} cases)", tool,
                               st ? st->describe() : "still running", cases.done, expected_cases)};
  return std::nullopt;
}

SanitizerToolRun tool_entry(const std::string& tool, const SanitizerFindings& f, const WorkerClient& worker,
                            const std::optional<Verdict>& v, const std::string& log) {
  const auto& st = worker.exit_status();
  SanitizerToolRun entry;
  entry.tool = tool;
  entry.pass = !v.has_value();
  entry.errors = f.errors;
  entry.hazards = f.hazards;
  entry.summary = f.summary;
  entry.seconds = worker.seconds();
  entry.exit = st ? st->describe() : "unknown";
  entry.first = f.first;
  // Keep a failing tool's log in the record, capped and valid UTF-8: its head (the first
  // reports) and its tail (the summary) are the evidence.
  if (v)
    entry.log = log.size() <= 4096 ? sanitize_log(log, 4096)
                                   : sanitize_log(log.substr(0, 3072), 3072) + "\n[…]\n" +
                                         sanitize_log(log.substr(log.size() - 1024), 1024);
  return entry;
}

// One tool over the plan's sanitize cases in its own worker; the report entry, its verdict
// and its seconds.
std::optional<Verdict> run_tool(const std::string& tool, const EvalEnv& env, const Candidate& c,
                                const CompileResult& compiled, const EvalPlan& plan, const ProgressFn& progress,
                                std::vector<SanitizerToolRun>& entries, double& seconds) {
  // Instrumented runs are one to two orders slower: every phase gets the sanitizer's limit.
  Limits limits = env.gates->limits;
  limits.load_s = limits.gate_case_s = limits.timing_shape_s = env.gates->sanitizer.tool_s;
  const fs::path work = env.work_root / (c.id() + "-" + tool);
  fs::create_directories(work);
  WorkerJob job = candidate_job(env, c, compiled, "sanitize");
  int k = 0;
  for (CaseSpec cs : plan.sanitize_cases) {
    cs.out_path = (work / fmt::format("case{}.out", k++)).string();
    job.cases.push_back(cs);
  }
  const fs::path log_path = work / "sanitizer.log";
  const std::vector<std::string> wrapper{
      env.compute_sanitizer.string(),      "--tool",        tool, "--log-file", log_path.string(), "--error-exitcode",
      std::to_string(kSanitizerErrorExit), "--print-limit", "20"};
  progress("sanitizer " + tool);
  WorkerClient worker(job, work, limits, wrapper);
  const ToolCases cases = read_tool_cases(worker, env, c, job, tool, progress);
  const std::string log = fs::exists(log_path) ? read_file(log_path) : std::string();
  const SanitizerFindings f = parse_sanitizer_log(log);
  const std::optional<Verdict> v = tool_verdict(tool, f, worker, cases, plan.sanitize_cases.size());
  entries.push_back(tool_entry(tool, f, worker, v, log));
  seconds += worker.seconds();
  std::error_code ec;
  fs::remove_all(work, ec);
  return v;
}

}  // namespace

SanitizerResult run_sanitizer(const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                              const EvalPlan& plan, const ProgressFn& progress) {
  SanitizerResult out;
  out.report.cases.emplace();
  out.report.tools.emplace();
  for (const auto& cs : plan.sanitize_cases) out.report.cases->push_back(cs.id);
  for (const std::string& tool : sanitizer_tools(*compiled.resources, *compiled.launch)) {
    out.verdict = run_tool(tool, env, c, compiled, plan, progress, *out.report.tools, out.seconds);
    if (out.verdict) break;  // one failing tool is enough; the rest would only cost time
  }
  out.report.pass = !out.verdict.has_value();
  return out;
}

}  // namespace evo
