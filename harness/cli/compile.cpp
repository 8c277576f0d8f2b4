// evo compile --stage N|all [--arch A] [--task T] [--json]: every variant x params x task
// through NVRTC (cached) and the resource gate, without a GPU.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "compile/compile_record.h"
#include "compile/compile_set.h"
#include "core/errors.h"
#include "core/paths.h"
#include "core/shard.h"
#include "report/table.h"
#include "store/record.h"

namespace evo {

namespace {

struct CompileOptions : CacheDir {
  std::string stage = "all";
  std::string arch = "sm_90a";
  std::vector<std::string> tasks;
  bool json = false;
  unsigned jobs = 0;
  std::string shard;  // i/N; default inside a Slurm job array: its task
  size_t sample = 0;  // 0: every config; N: N configs spread evenly over each variant's expansion
};

// One line of the table: outcome, registers, spills, shared memory, threads, time, reason.
std::vector<std::string> compile_row(const Candidate& c, const CompileResult& r) {
  std::string regs = "-", spill = "-", smem = "-", threads = "-";
  if (r.resources) {
    regs = std::to_string(r.resources->registers);
    spill = std::to_string(r.resources->spill_stores + r.resources->spill_loads);
  }
  if (r.resources && r.launch) {
    smem = fmt::format("{:.1f}K", (r.resources->static_smem + r.launch->smem_bytes) / 1024.0);
    threads = std::to_string(r.launch->threads);
  }
  return {c.variant->id,
          c.task.name(),
          c.params_text(),
          std::string(to_string(r.verdict.outcome)),
          regs,
          spill,
          smem,
          threads,
          r.cached ? "cached" : fmt::format("{:.2f}s", r.seconds),
          r.verdict.reason};
}

// N of the configs, evenly spaced over the expansion (first one included), or all of them.
std::vector<ParamSet> sampled_params(const Variant& v, size_t n) {
  std::vector<ParamSet> all = expand_params(v);
  if (n == 0 || all.size() <= n) return all;
  std::vector<ParamSet> out;
  for (size_t i = 0; i < n; ++i) out.push_back(all[i * all.size() / n]);
  return out;
}

// Every (variant, params, task) of the selected stages.
std::vector<Candidate> compile_candidates(const Context& ctx, const CompileOptions& o) {
  auto stages = ctx.select_stages(o.stage);
  auto tasks = ctx.select_tasks(o.tasks);
  std::vector<Candidate> candidates;
  for (const Stage* s : stages)
    for (const auto& v : s->variants)
      for (const auto& t : tasks)
        for (const auto& p : sampled_params(v, o.sample)) candidates.push_back(Candidate{&v, p, t, o.arch});
  return candidates;
}

// This shard's part of the candidates (all of them outside a shard), said on stderr.
std::vector<Candidate> shard_part(std::vector<Candidate> candidates, const Shard& shard) {
  if (!shard.active()) return candidates;
  const size_t all = candidates.size();
  candidates = take_shard(candidates, shard);
  std::cerr << fmt::format("evo compile: shard {} (from {}): {} of {} configs\n", shard.text(), shard.source,
                           candidates.size(), all);
  return candidates;
}

void run_compile(const CompileOptions& o) {
  Context ctx = Context::load();
  ctx.gates.caps(o.arch);  // unknown arch -> usage error naming the known ones
  std::vector<Candidate> candidates = compile_candidates(ctx, o);
  const std::filesystem::path cache = o.cache_path();
  ensure_writable_dir(cache, "cache dir", "--cache-dir");
  Compiler compiler(ctx.root, cache, ctx.gates);
  const Shard shard = resolve_shard(o.shard);
  candidates = shard_part(std::move(candidates), shard);

  auto results = compile_all(compiler, candidates, o.jobs);

  TextTable table({"variant", "task", "params", "outcome", "regs", "spill", "smem", "threads", "time", "reason"});
  size_t counts[kOutcomeCount] = {};
  const CompileResult* first_broken = nullptr;
  const Candidate* first_broken_c = nullptr;
  double total = 0;
  size_t cached = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    const auto& r = results[i];
    counts[size_t(r.verdict.outcome)]++;
    total += r.seconds;
    cached += r.cached;
    if ((r.verdict.outcome == Outcome::compile || r.verdict.outcome == Outcome::timeout) && !first_broken) {
      first_broken = &r;
      first_broken_c = &c;
    }
    if (o.json) {
      Record record = compile_record(c, r, compiler.nvrtc_version());
      if (shard.active()) record.shard = shard.text();
      std::cout << write_record(record).dump() << "\n";
      continue;
    }
    table.add(compile_row(c, r));
  }
  if (!o.json) {
    std::cout << table.render();
    std::string summary;
    for (size_t k = 0; k < kOutcomeCount; ++k)
      if (counts[k]) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", counts[k], to_string(Outcome(k)));
    std::cout << fmt::format("{} configs for {}: {} ({} from cache, {:.1f} s compile time)\n", candidates.size(),
                             o.arch, summary.empty() ? "none" : summary, cached, total);
  }
  if (first_broken) {
    std::cout << std::flush;
    std::cerr << fmt::format("evo: {} ({}, {}) does not compile: {}\n", first_broken_c->variant->path.string(),
                             first_broken_c->task.name(), first_broken_c->params_text(), first_broken->verdict.reason);
    throw CommandFailed(kExitUsage);
  }
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  auto* cmd =
      app.add_subcommand("compile", "Compile variants with NVRTC (cached) and apply the resource gate; no GPU needed");
  cmd->add_option("--stage", o->stage, "stage number or all")->capture_default_str();
  cmd->add_option("--arch", o->arch, "sm_80, sm_89 or sm_90a")->capture_default_str();
  cmd->add_option("--task", o->tasks, "task(s), e.g. fp16-d64, bf16-d128-causal (default: all)")->delimiter(',');
  add_cache_dir(cmd, *o);
  cmd->add_option("-j,--jobs", o->jobs, "parallel compiles (default: CPU count)")->check(at_least(0));
  cmd->add_option("--sample", o->sample, "compile N configs per variant and task, evenly spread (default: all)")
      ->check(at_least(0));
  cmd->add_flag("--json", o->json, "one JSON record per config (schema: docs/records.md)");
  add_shard_option(cmd, o->shard, "compile the configs'");
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace evo
