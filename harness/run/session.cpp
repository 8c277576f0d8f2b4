#include "run/session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "compile/compile_record.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "run/sampler.h"
#include "store/population.h"
#include "store/population_refresh.h"
#include "store/record.h"
#include "store/records.h"
#include "support/support_source.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

Session::Session(const Context& ctx, const Compiler& compiler, SessionOptions options) : options_(std::move(options)) {
  env_.gpu = query_gpu(options_.device);
  env_.gates = &ctx.gates;
  env_.device = options_.device;
  env_.compute_sanitizer = options_.compute_sanitizer;
  env_.nvrtc_version = compiler.nvrtc_version();
  env_.support_cubin = compiler.compile_support(env_.gpu.arch());
  std::random_device rd;
  const std::string compact = utc_now_compact();
  env_.run_id = fmt::format("{}-{:04x}", compact, rd() & 0xffff);
  env_.work_root = fs::temp_directory_path() / fmt::format("evo-{}-{}", ::getpid(), env_.run_id);
  fs::create_directories(env_.work_root);
  references_ = std::make_unique<ReferenceStore>(
      options_.cache_dir, env_.support_cubin, sha256_hex(support_kernels_source()), ctx.gates.limits, options_.device);
  env_.references = references_.get();
  results_file_ = !options_.results_file.empty()
                      ? options_.results_file
                      : options_.results_dir / fmt::format("{}-{}-{}.jsonl", compact, env_.gpu.key, options_.tag);
}

Session::~Session() {
  std::error_code ec;
  fs::remove_all(env_.work_root, ec);
}

void Session::prepare_references(const EvalPlan& plan, const ProgressFn& progress) {
  progress(fmt::format("reference outputs for {} ({} cases)", plan.task.name(), reference_cases(plan).size()));
  references_->prepare(plan.task, reference_cases(plan), env_.work_root / ("reference-" + plan.task.name()));
}

void Session::drop_sampled_references(const EvalPlan& plan) const {
  std::error_code ec;
  for (const auto& c : plan.gate_cases)
    if (is_sampled_case(c.id)) std::filesystem::remove(references_->path_for(plan.task, c), ec);
}

Record Session::evaluate(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                         const EliteStanding& standing, const std::string& origin, const ProgressFn& progress) {
  Record rec = evaluate_candidate(env_, c, compiled, plan, standing, origin, progress);
  stamp(rec);
  if (annotate_) annotate_(rec);
  const auto t0 = std::chrono::steady_clock::now();
  append_record(results_file_, write_record(rec));
  if (options_.update_populations) refresh_populations();
  // Measured by writing the record, so only the caller's copy carries it (evo run's phase means).
  if (!rec.phases) rec.phases = RecordPhases{};
  if (!rec.phases->detail) rec.phases->detail = PhaseDetail{};
  (*rec.phases->detail)["record_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rec;
}

Record Session::record_device_failure(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                                      const std::string& origin, const std::string& why) {
  // The evaluator writes a complete record without touching the GPU for a candidate whose
  // verdict is already decided: hand it the crash, then restore the resource gate it passed.
  CompileResult decided = compiled;
  decided.verdict = Verdict{Outcome::crash, fmt::format("GPU {} (device {}) failed while evaluating this candidate; it "
                                                        "takes no more work: {}",
                                                        env_.gpu.uuid, env_.device, why)};
  Record rec = evaluate_candidate(env_, c, decided, plan, EliteStanding{}, origin, [](const std::string&) {});
  rec.gates->resources = resource_gate_part(compiled.verdict);
  stamp(rec);
  append_record(results_file_, write_record(rec));
  return rec;
}

void Session::stamp(Record& rec) const {
  if (!rec.env) rec.env = RecordEnv{};
  rec.env->gpu_uuid = env_.gpu.uuid;  // which physical GPU, when a run uses several (--devices)
  rec.env->device = env_.device;
  if (!options_.shard.empty()) rec.shard = options_.shard;
}

namespace {

// The process's followers, by canonical results folder; kept (and their records) until it exits.
struct Followers {
  std::mutex mu;
  std::map<fs::path, RecordFollower> by_dir;
};

Followers& followers() {
  static Followers f;
  return f;
}

}  // namespace

FollowedRecords::FollowedRecords(const fs::path& results_dir) : lock_(followers().mu) {
  // Absolute first: a folder not made yet keeps its key once it exists.
  std::error_code ec;
  fs::path key = fs::weakly_canonical(fs::absolute(results_dir, ec), ec);
  if (ec) key = fs::absolute(results_dir, ec).lexically_normal();
  if (!key.has_filename()) key = key.parent_path();  // "results/" is "results"
  follower_ = &followers().by_dir.try_emplace(key, results_dir).first->second;
}

void Session::refresh_populations() const {
  FollowedRecords records(options_.results_dir);  // the run's sessions on other GPUs wait their turn
  evo::refresh_populations(*records, options_.populations_dir, env_.gpu.key);
}

Population Session::population(const Task& task, const std::string& benchmark) const {
  const fs::path file = population_path(options_.populations_dir, env_.gpu.key, task.name(), benchmark);
  if (!fs::exists(file)) {
    Population empty;
    empty.schema = *SchemaVersion::parse(kPopulationSchemaVersion);
    empty.gpu = env_.gpu.key;
    empty.task = task.name();
    return empty;
  }
  return read_population(file);
}

std::vector<std::unique_ptr<Session>> open_sessions(const Context& ctx, const Compiler& compiler,
                                                    SessionOptions options, const std::vector<GpuInfo>& gpus) {
  std::vector<std::unique_ptr<Session>> sessions;
  for (const GpuInfo& g : gpus) {
    options.device = g.index;
    sessions.push_back(std::make_unique<Session>(ctx, compiler, options));
    options.results_file = sessions.front()->results_file();
  }
  return sessions;
}

}  // namespace evo
