#include "evolve/loop.h"

#include <fmt/format.h>

#include "evolve/loop_state.h"

namespace evo {

namespace evolve_loop {

json Loop::evaluate(size_t slot, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan) {
  const EliteStanding standing = elite_standing(session->population(task, plan.benchmark), stage.number, c.id());
  json rec = write_record(sessions[slot]->evaluate(c, compiled, plan, standing, "evolve", [](const std::string&) {}));
  std::lock_guard lock(mu);
  mine.push_back(rec);
  gpu_s += number_or(rec, "gpu_seconds", 0);
  return rec;
}

json Loop::one(size_t slot, const Proposal& p, const Candidate* c, const CompileResult& compiled, int gen,
               json verdict) {
  json& annotation = annotations[slot];
  last_logs[slot] = compiled.log;
  annotation = {{"run", run_id},      {"generation", gen},        {"generator", o.generator.substr(0, 200)},
                {"parent", p.parent}, {"rationale", p.rationale}, {"operator", o.op}};
  if (island.active()) annotation["island"] = island.text();
  if (!session || !compiled.verdict.ok()) {
    verdict["outcome"] = std::string(to_string(compiled.verdict.outcome));
    verdict["reason"] = compiled.verdict.ok() ? "compiled; the GPU gates need a GPU" : compiled.verdict.reason;
    if (!session) {
      json rec = write_record(compile_record(*c, compiled, compiler.nvrtc_version()));
      rec["compile"]["log"] = compiled.log.substr(0, 4096);
      if (!compiled.verdict.ok()) feedback.push_back(failure_feedback(rec));
      return verdict;
    }
  }
  json rec;
  if (compiled.verdict.ok()) {  // reached the GPU: what GPU-s per evaluation counts
    std::lock_guard lock(mu);
    ++evaluated;
  }
  if (o.quick && compiled.verdict.ok()) {
    annotation["phase"] = "screen";
    rec = evaluate(slot, *c, compiled, quick);
    const double f = number_or(object_or_null(rec, "fitness"), "geomean_median_us", 0);
    verdict["screen_us"] = f;
    std::unique_lock lock(mu);
    const bool promote = f > 0 && (best_quick == 0 || f <= best_quick * o.promote);
    if (f > 0 && (best_quick == 0 || f < best_quick)) best_quick = f;
    lock.unlock();
    if (!promote) {
      verdict["outcome"] = rec["outcome"];
      verdict["reason"] = rec["outcome"] != "ok" ? rec["reason"].get<std::string>()
                          : f > 0
                              ? fmt::format("screened out: {:.2f} µs on the quick shape, best {:.2f}", f, best_quick)
                              : "screened out: timing pruned, clearly slower than the elite on the quick shape";
      verdict["gpu_seconds"] = rec["gpu_seconds"];
      return verdict;
    }
  }
  annotation["phase"] = "full";
  rec = evaluate(slot, *c, compiled, full);
  const double f = number_or(object_or_null(rec, "fitness"), "geomean_median_us", 0);
  if (std::lock_guard lock(mu); f > 0 && (best == 0 || f < best)) best = f;
  verdict["outcome"] = rec["outcome"];
  verdict["reason"] = rec["reason"];
  verdict["fitness_us"] = f > 0 ? json(f) : json(nullptr);
  verdict["pruned"] = rec["pruned"];
  verdict["admission"] = rec["evolve"].value("admission", "");
  verdict["gpu_seconds"] = rec["gpu_seconds"];
  return verdict;
}

std::string Loop::summary() const {
  return fmt::format("{} evaluations, {:.1f} GPU-s ({:.2f} per evaluation), best {}", evaluated, gpu_s,
                     evaluated ? gpu_s / double(evaluated) : 0.0,
                     best > 0 ? fmt::format("{:.2f} µs", best) : "none yet");
}

namespace {

std::string params_line(const json& p) {
  std::string s;
  if (p.is_object())
    for (auto& [k, v] : p.items()) s += (s.empty() ? "" : " ") + k + "=" + v.dump();
  return s;
}

}  // namespace

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
  std::vector<json> early(props.size());
  std::vector<std::optional<Candidate>> cands(props.size());
  std::vector<Candidate> to_compile;
  std::vector<size_t> compiled_at(props.size(), 0);
  for (size_t i = 0; i < props.size(); ++i)
    if ((cands[i] = admit_proposal(props[i], early[i])))
      compiled_at[i] = to_compile.size(), to_compile.push_back(*cands[i]);
  const std::vector<CompileResult> compiled = compile_all(compiler, to_compile, 0);
  drop_same_code(cands, compiled, compiled_at, early);
  std::vector<json> verdicts(props.size());
  auto work = [&](size_t slot, size_t i) {
    {
      std::lock_guard lock(mu);
      if (o.budget_gpu_s > 0 && gpu_s >= o.budget_gpu_s) return;  // spent: the rest get no verdict
      progress.start_candidate(size_t(gen) * o.population + i, fmt::format("gen {} proposal {}", gen, i));
    }
    json v = cands[i] ? one(slot, props[i], &*cands[i], compiled[compiled_at[i]], gen, early[i]) : early[i];
    std::lock_guard lock(mu);
    progress.done(fmt::format("gen {} {} {}: {}{}", gen, v.value("variant", "-"), params_line(v["params"]),
                              v.value("outcome", "?"),
                              v.value("reason", "").empty() ? "" : " — " + v.value("reason", "").substr(0, 160)));
    verdicts[i] = std::move(v);
  };
  if (sessions.size() > 1) {
    run_device_pool(sessions.size(), props.size(), work, [&](size_t slot, size_t i, const std::string& why) {
      lost_gpu(slot, props[i], *cands[i], compiled[compiled_at[i]], why, verdicts[i] = early[i]);
    });
  } else {
    for (size_t i = 0; i < props.size(); ++i) work(0, i);
  }
  step["verdicts"] = json::array();
  for (auto& v : verdicts)
    if (!v.is_null()) {
      if (v.contains("candidate_id")) history.push_back(history_entry(v, gen));
      step["verdicts"].push_back(std::move(v));
    }
}

// A GPU that failed under a proposal (--devices): its record says crash, the others go on.
void Loop::lost_gpu(size_t slot, const Proposal& p, const Candidate& c, const CompileResult& compiled,
                    const std::string& why, json& verdict) {
  annotations[slot] = {
      {"run", run_id}, {"generator", o.generator.substr(0, 200)}, {"parent", p.parent}, {"phase", "full"}};
  const json rec = write_record(sessions[slot]->record_device_failure(c, compiled, full, "evolve", why));
  std::lock_guard lock(mu);
  mine.push_back(rec);
  verdict["outcome"] = rec["outcome"];
  verdict["reason"] = rec["reason"];
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
  if (loop.session && o.quick)
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
