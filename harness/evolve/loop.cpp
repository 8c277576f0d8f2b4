#include "evolve/loop.h"

#include <fmt/format.h>

#include "core/sha256.h"
#include "evolve/loop_state.h"
#include "evolve/observations.h"

namespace evo {

namespace evolve_loop {

// The elites from before this run (islands: from before the search, and the migrants).
std::vector<Observation> Loop::parents() const {
  if (island.active()) return observations_of(island_ranked(baseline, {}, migrants, o.population), stage);
  if (!session) return {};
  return elite_observations(stage_elites(session->population(task, full.benchmark), stage.number), stage);
}

std::vector<Proposal> Loop::propose(int gen, json& step) {
  if (!tunable) return ask_generator(gen, step);
  SearchState state;  // what the strategy learns from: this run's evaluations and the elites
  state.run = observations_of(mine, stage);
  state.prior = parents();
  state.known = [&](const Variant& v, const ParamSet& p) { return novelty.seen(Candidate{&v, p, task, arch}); };
  state.generation = gen;
  json from = json::array();
  for (const auto& p : state.prior) from.push_back(p.candidate_id);
  step["request"] = {
      {"parents", from}, {"domain_configs", tunable->domain_size()}, {"feasible_configs", tunable->feasible_size()}};
  if (o.prior) step["request"]["prior"] = o.prior->origin();
  auto props = tunable->propose(std::move(state), o.population);
  json resp = json::array();
  for (const auto& p : props)
    resp.push_back({{"variant", p.variant->id},
                    {"params", params_json(p.params)},
                    {"parent", p.parent},
                    {"rationale", p.rationale},
                    {"fidelity", to_string(p.fidelity)}});
  step["response"] = resp;
  return props;
}

std::optional<Candidate> Loop::candidate_of(const Proposal& p, ProposalVerdict& verdict) {
  if (p.variant) return Candidate{p.variant, p.params, task, arch};
  verdict.source_sha256 = sha256_hex(p.source);
  try {
    const fs::path stored = store_source(ctx.root, o.results_dir, p.source);
    auto v = std::make_unique<Variant>(external_variant(p.source, stage, stored, "generated source", p.parent));
    // The answer's params, or the front matter's first values.
    ParamSet params = p.params_given ? answer_params(*v, p.params) : default_params(*v);
    external.push_back(std::move(v));
    return Candidate{external.back().get(), std::move(params), task, arch};
  } catch (const EvoError& e) {
    verdict.outcome = Outcome::input;
    verdict.reason = e.what();
    feedback.push_back(write_verdict(verdict));
    return std::nullopt;
  }
}

Record Loop::evaluate(size_t slot, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan) {
  EliteStanding standing = elite_standing(session->population(task, plan.benchmark), stage.number, c.id());
  // A screen times every shape (never pruned): strategies learn from its whole profile.
  if (&plan == &quick) standing.prune_us = 0;
  Record rec = sessions[slot]->evaluate(c, compiled, plan, standing, "evolve", [](const std::string&) {});
  std::lock_guard lock(mu);
  mine.push_back(rec);
  gpu_s += rec.gpu_seconds.value_or(0);
  return rec;
}

std::optional<Candidate> Loop::admit_proposal(const Proposal& p, ProposalVerdict& verdict) {
  verdict = ProposalVerdict{};
  verdict.parent = p.parent;
  verdict.rationale = p.rationale;
  auto c = candidate_of(p, verdict);
  if (!c) return std::nullopt;
  verdict.candidate_id = c->id();
  verdict.variant = c->variant->id;
  verdict.params = c->params;
  if (p.fidelity != Fidelity::promote && novelty.seen(*c)) {  // a promotion follows this run's screen
    verdict.outcome = Outcome::duplicate;
    verdict.reason = "already evaluated (same normalized source and params): not compiled";
    feedback.push_back(write_verdict(verdict));
    return std::nullopt;
  }
  novelty.add(*c);
  return c;
}

// The "evolve" entry of the records a proposal gets (phase and admission come later).
EvolveEntry Loop::entry_for(const Proposal& p, int gen) const {
  EvolveEntry e;
  e.run = run_id;
  e.generation = gen;
  e.generator = o.generator.substr(0, 200);
  e.parent = p.parent;
  e.rationale = p.rationale;
  e.op = o.op;
  if (island.active()) e.island = island.text();
  return e;
}

ProposalVerdict Loop::one(size_t slot, const Proposal& p, const Candidate* c, const CompileResult& compiled, int gen,
                          ProposalVerdict verdict) {
  EvolveEntry& annotation = annotations[slot];
  last_logs[slot] = compiled.log;
  annotation = entry_for(p, gen);
  if (!session || !compiled.verdict.ok()) {
    verdict.outcome = compiled.verdict.outcome;
    verdict.reason = compiled.verdict.ok() ? "compiled; the GPU gates need a GPU" : compiled.verdict.reason;
    if (!session) {
      Record rec = compile_record(*c, compiled, compiler.nvrtc_version());
      if (rec.compile) rec.compile->extra["log"] = compiled.log.substr(0, 4096);
      if (!compiled.verdict.ok()) feedback.push_back(failure_feedback(rec));
      return verdict;
    }
  }
  if (compiled.verdict.ok()) {  // reached the GPU: what GPU-s per evaluation counts
    std::lock_guard lock(mu);
    ++evaluated;
  }
  // Screened first: what the strategy asked for, or (no fidelity asked) with --quick.
  const bool screen = p.fidelity == Fidelity::screen || (p.fidelity == Fidelity::unset && o.quick);
  if (screen && compiled.verdict.ok()) {
    annotation.phase = "screen";
    const Record rec = evaluate(slot, *c, compiled, quick);
    const double f = fitness_us(rec);
    verdict.screen_us = f;
    std::unique_lock lock(mu);
    // A strategy that asked for the screen decides on promotion itself, in a later generation.
    const bool promote = p.fidelity == Fidelity::unset && f > 0 && (best_quick == 0 || f <= best_quick * o.promote);
    if (f > 0 && (best_quick == 0 || f < best_quick)) best_quick = f;
    lock.unlock();
    if (!promote) {
      verdict.outcome = rec.outcome;
      verdict.reason = rec.outcome != Outcome::ok       ? rec.reason.value_or("")
                       : p.fidelity == Fidelity::screen ? fmt::format("screened: {:.2f} µs", f)
                       : f > 0 ? fmt::format("screened out: {:.2f} µs in the screen, best {:.2f}", f, best_quick)
                               : "screened out: timing pruned, clearly slower than the elite in the screen";
      verdict.gpu_seconds = rec.gpu_seconds;
      return verdict;
    }
  }
  annotation.phase = "full";
  const Record rec = evaluate(slot, *c, compiled, full);
  const double f = fitness_us(rec);
  if (std::lock_guard lock(mu); f > 0 && (best == 0 || f < best)) best = f;
  verdict.outcome = rec.outcome;
  verdict.reason = rec.reason.value_or("");
  if (f > 0) verdict.fitness_us = f;
  verdict.pruned = rec.pruned;
  if (const auto e = evolve_entry(rec)) verdict.admission = e->admission;
  verdict.gpu_seconds = rec.gpu_seconds;
  return verdict;
}

std::string Loop::summary() const {
  return fmt::format("{} evaluations, {:.1f} GPU-s ({:.2f} per evaluation), best {}", evaluated, gpu_s,
                     evaluated ? gpu_s / double(evaluated) : 0.0,
                     best > 0 ? fmt::format("{:.2f} µs", best) : "none yet");
}

// One line per generation in the trace, whatever happens: an error that ends the run is in it.
void Loop::generation(int gen, Progress& progress) {
  json step = {
      {"run", run_id}, {"generation", gen}, {"generator", o.generator.substr(0, 200)}, {"time", utc_now_iso8601()}};
  try {
    run_generation(gen, progress, step);
  } catch (const std::exception& e) {
    step["error"] = e.what();
    append_line_durable(trace, step.dump(-1, ' ', false, json::error_handler_t::replace));
    throw;
  }
  append_line_durable(trace, step.dump(-1, ' ', false, json::error_handler_t::replace));
}

void Loop::run_generation(int gen, Progress& progress, json& step) {
  std::vector<Proposal> props = propose(gen, step);
  if (props.size() > o.population) {  // every generator is held to --population
    step["dropped"] = fmt::format("{} proposal(s) over --population {}", props.size() - o.population, o.population);
    props.resize(o.population);
  }
  if (!pending_migration.is_null()) step["migration"] = std::exchange(pending_migration, json());
  // Novelty of the source first, then every survivor compiled in parallel (cached), then
  // novelty of the code, then the GPUs, one proposal per GPU at a time from one queue (--devices).
  std::vector<ProposalVerdict> early(props.size());
  std::vector<std::optional<Candidate>> cands(props.size());
  std::vector<Candidate> to_compile;
  std::vector<size_t> compiled_at(props.size(), 0);
  for (size_t i = 0; i < props.size(); ++i)
    if ((cands[i] = admit_proposal(props[i], early[i])))
      compiled_at[i] = to_compile.size(), to_compile.push_back(*cands[i]);
  const std::vector<CompileResult> compiled = compile_all(compiler, to_compile, 0);
  drop_same_code(cands, compiled, compiled_at, early);
  std::vector<std::optional<ProposalVerdict>> verdicts(props.size());
  auto work = [&](size_t slot, size_t i) {
    {
      std::lock_guard lock(mu);
      if (o.budget_gpu_s > 0 && gpu_s >= o.budget_gpu_s) return;  // spent: the rest get no verdict
      progress.start_candidate(size_t(gen) * o.population + i, fmt::format("gen {} proposal {}", gen, i));
    }
    ProposalVerdict v = cands[i] ? one(slot, props[i], &*cands[i], compiled[compiled_at[i]], gen, early[i]) : early[i];
    std::lock_guard lock(mu);
    progress.done(fmt::format("gen {} {} {}: {}{}", gen, v.variant.empty() ? "-" : v.variant, params_text(v.params),
                              v.outcome ? to_string(*v.outcome) : "?",
                              v.reason.empty() ? "" : " — " + v.reason.substr(0, 160)));
    verdicts[i] = std::move(v);
  };
  if (sessions.size() > 1) {
    run_device_pool(sessions.size(), props.size(), work, [&](size_t slot, size_t i, const std::string& why) {
      verdicts[i] = early[i];
      lost_gpu(slot, gen, props[i], *cands[i], compiled[compiled_at[i]], why, *verdicts[i]);
    });
  } else {
    for (size_t i = 0; i < props.size(); ++i) work(0, i);
  }
  step["verdicts"] = json::array();
  for (const auto& v : verdicts)
    if (v) {
      if (!v->candidate_id.empty()) history.push_back(history_entry(*v, gen));
      step["verdicts"].push_back(write_verdict(*v));
    }
}

// A GPU that failed under a proposal (--devices): its record says crash, the others go on.
void Loop::lost_gpu(size_t slot, int gen, const Proposal& p, const Candidate& c, const CompileResult& compiled,
                    const std::string& why, ProposalVerdict& verdict) {
  annotations[slot] = entry_for(p, gen);
  annotations[slot].phase = "full";
  const Record rec = sessions[slot]->record_device_failure(c, compiled, full, "evolve", why);
  std::lock_guard lock(mu);
  mine.push_back(rec);
  verdict.outcome = rec.outcome;
  verdict.reason = rec.reason.value_or("");
}

}  // namespace evolve_loop

using evolve_loop::Loop;
using nlohmann::json;

void run_evolve(const EvolveOptions& o) {
  Loop loop(o);
  loop.setup();
  Progress progress(size_t(o.generations) * o.population);
  progress.note(fmt::format(
      "evo evolve {}: stage {} ({}), {}, generator {}, {} generations x {}, budget {}; {}", loop.run_id,
      loop.stage.number, loop.stage.slug, loop.task.name(), o.generator.substr(0, 80), o.generations, o.population,
      o.budget_gpu_s > 0 ? fmt::format("{:.0f} GPU-s", o.budget_gpu_s) : "none",
      loop.session ? "records -> " + loop.session->results_file().string() : "no GPU: through the compile phase only"));
  if (loop.sessions.size() > 1)
    progress.note(fmt::format("{} GPUs, one evaluation on each at a time", loop.sessions.size()));
  if (loop.island.active())
    progress.note(fmt::format(
        "island {} (from {}) of search '{}', generator seed {}; {}", loop.island.text(), loop.island.source,
        loop.island.group, loop.island.seed(o.rng_seed),
        o.migrate_every > 0 ? fmt::format("imports the other islands' elites every {} generations", o.migrate_every)
                            : "no migration (--migrate-every 0)"));
  if (loop.session) loop.session->prepare_references(loop.full, [&](const std::string& s) { progress.note(s); });
  if (loop.session && (o.quick || loop.tunable))  // tunable strategies may screen
    loop.session->prepare_references(loop.quick, [&](const std::string& s) { progress.note(s); });
  const auto t0 = std::chrono::steady_clock::now();
  for (int gen = loop.first_generation; gen < o.generations; ++gen) {
    if (o.budget_gpu_s > 0 && loop.gpu_s >= o.budget_gpu_s) {
      progress.note(fmt::format("GPU-second budget spent ({:.1f} of {:.0f})", loop.gpu_s, o.budget_gpu_s));
      break;
    }
    if (loop.island.migrates_at(gen)) {
      loop.import(gen);
      progress.note(fmt::format(
          "generation {}: imported {} elite(s) of the other islands{}", gen, loop.migrants.size(),
          loop.pending_migration["late"].empty() ? "" : " (" + loop.pending_migration["late"].dump() + ")"));
    }
    loop.generation(gen, progress);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int done = gen + 1 - loop.first_generation, left = o.generations - gen - 1;
    double eta = wall / done * left;
    if (o.budget_gpu_s > 0 && loop.gpu_s > 0)
      eta = std::min(eta, wall / loop.gpu_s * std::max(0.0, o.budget_gpu_s - loop.gpu_s));
    progress.note(fmt::format("generation {}/{} done: {}; ETA {:.0f} s", gen + 1, o.generations, loop.summary(), eta));
  }
  if (loop.session) loop.session->drop_sampled_references(loop.full);
  if (loop.session && loop.sessions.size() > 1) loop.session->refresh_populations();  // after every GPU's last append
  // The other islands wait for this line (or this island's next generation) before importing.
  if (loop.island.active())
    append_line_durable(loop.trace, json{{"run", loop.run_id}, {"finished", true}, {"time", utc_now_iso8601()}}.dump());
  progress.note(fmt::format("evo evolve {}: {}; trace: {}", loop.run_id, loop.summary(), loop.trace.string()));
  if (!loop.session)
    throw environment_error(loop.no_gpu + " (the generations above went through the compile phase only)");
}

}  // namespace evo
