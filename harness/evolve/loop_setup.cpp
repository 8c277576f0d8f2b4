#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <sstream>

#include "evolve/loop_state.h"
#include "search/strategy.h"

namespace evo::evolve_loop {

void Loop::setup() {
  if (o.population == 0 || o.generations < 1) throw usage_error("--population and --generations must be at least 1");
  if (!valid_operator(o.op)) throw usage_error("--operator " + o.op + ": use free, insight or full");
  const bool exec = o.generator.rfind("exec:", 0) == 0;
  if (!exec && !is_strategy(o.generator))
    throw usage_error("--generator " + o.generator + ": use " + strategy_names() + " or exec:COMMAND");
  if (exec && o.generator.size() == 5) throw usage_error("--generator exec: needs a command after the colon");
  ensure_writable_dir(cache, "cache dir", "--cache-dir");
  ensure_writable_dir(o.results_dir, "results dir", "--results-dir");
  ensure_writable_dir(o.populations_dir, "populations dir", "--populations-dir");
  island = resolve_island(o.island, o.island_group, o.migrate_every, o.migrate_wait_s, o.rng_seed, std::getenv);
  if (island.active() && !o.resume.empty())
    throw usage_error("--resume with --island: an island resumes by itself (its run id comes from --island-group)");
  if (exec && o.prior) throw usage_error("--prior: only a tunable strategy reads it, not an exec generator");
  if (!exec) tunable.emplace(search_space(ctx.root, stage, task), o.generator, island.seed(o.rng_seed), o.prior.get());
  claim_run_id();
  open_gpus(SessionOptions{o.results_dir, o.populations_dir, cache, o.device, "evolve-" + run_id, {}, true, {}, {}});
  read_history();
}

// A new run's id is its start, its seed and a random tag, and it claims its trace file with an
// exclusive create: two runs started in the same second with the same seed get two ids. A
// resumed run and an island (whose id comes from its search) continue theirs.
void Loop::claim_run_id() {
  fs::create_directories(fs::path(o.results_dir) / "evolve");
  const bool fresh = !island.active() && o.resume.empty();
  std::random_device entropy;
  for (int attempt = 0; attempt < 100; ++attempt) {
    run_id = island.active() ? island.run_id()
             : fresh         ? fmt::format("ev-{}-{}-{:06x}", utc_now_compact(), o.rng_seed, entropy() & 0xFFFFFF)
                             : o.resume;
    if (run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
        std::string::npos)
      throw usage_error("--resume " + run_id + ": a run id has letters, digits, '-', '_' and '.' only");
    trace = fs::path(o.results_dir) / "evolve" / (run_id + ".trace.jsonl");
    if (!fresh) return;
    const int fd = ::open(trace.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      return;
    }
    if (errno != EEXIST) throw environment_error(fmt::format("cannot create {}: {}", trace.string(), strerror(errno)));
  }
  throw environment_error("no free run id under " + (fs::path(o.results_dir) / "evolve").string());
}

// The request's "history" of a resumed run: the verdicts of its trace, generation by generation.
void Loop::read_trace_history() {
  if (!fs::exists(trace)) return;
  std::istringstream lines(read_file(trace));
  for (std::string line; std::getline(lines, line);) {
    const json step = json::parse(line, nullptr, false);
    if (!step.is_object() || !step.contains("verdicts") || !step["verdicts"].is_array()) continue;
    const int gen =
        step.contains("generation") && step["generation"].is_number_integer() ? step["generation"].get<int>() : 0;
    for (const auto& v : step["verdicts"])
      if (const ProposalVerdict verdict = read_verdict(v); !verdict.candidate_id.empty())
        history.push_back(history_entry(verdict, gen));
  }
}

// A session per GPU of --devices (or --device); none, with `no_gpu` saying why, without a GPU.
// A selection this host cannot serve (--devices 7, mixed models) is a usage error before any work.
void Loop::open_gpus(const SessionOptions& so) {
  try {
    sessions =
        open_sessions(ctx, compiler, so, query_devices(o.devices.empty() ? std::to_string(o.device) : o.devices));
  } catch (const EvoError& e) {
    if (e.code() != kExitEnvironment) throw;
    no_gpu = e.what();
    return;
  }
  session = sessions.front().get();
  arch = session->gpu().cc >= 90 ? "sm_90a" : fmt::format("sm_{}", session->gpu().cc);
  annotations.assign(sessions.size(), EvolveEntry{});
  last_logs.assign(sessions.size(), "");
  for (size_t slot = 0; slot < sessions.size(); ++slot)
    sessions[slot]->set_annotate([this, slot](Record& rec) {
      rec.origin = "evolve";
      EvolveEntry entry = annotations[slot];
      if (rec.outcome == Outcome::compile && !last_logs[slot].empty()) {
        if (!rec.compile) rec.compile = RecordCompile{};
        rec.compile->extra["log"] = last_logs[slot].substr(0, 4096);
      }
      if (rec.fitness && entry.phase == "full") {
        const Admission a =
            admit(*rec.fitness, stage_elites(session->population(task, full.benchmark), stage.number), kElites);
        entry.admission = a.decision;
        entry.admission_spread = a.spread;
        entry.compared_with = a.against;
      }
      set_evolve_entry(rec, entry);
    });
}

// What the novelty filter and the parents start from. An island sees only the records from
// outside its search (the same for every island) and its own: the other islands' arrive by
// migration, so an island's path does not depend on how far the others have got.
void Loop::read_history() {
  std::vector<Record> all;  // as read_records reads the folder, typed
  {
    // Read by the follower the sessions refresh the populations from: the folder is parsed once.
    FollowedRecords records(o.results_dir);
    records->refresh();
    for (const Record* r : records->records()) all.push_back(*r);
  }
  if (!island.active()) {
    novelty.add_records(all);
    if (!o.resume.empty()) resume(all);
    return;
  }
  std::vector<Record> outside;
  bool resumed = false;
  for (const auto& r : all) {
    if (!island.in_group(r)) outside.push_back(r);
    resumed = resumed || evolve_run(r) == run_id;
  }
  novelty.add_records(outside);
  baseline = ranked_full(outside, scope());
  if (resumed) resume(all);  // a requeued array task goes on where it stopped
  novelty.add_records(mine);
  const int last_import = o.migrate_every > 0 ? first_generation / o.migrate_every * o.migrate_every : 0;
  if (island.migrates_at(last_import) && last_import < first_generation) import(last_import);
}

void Loop::import(int gen) {
  const Migration m = migrate(island, gen, scope());
  migrants = m.migrants;
  novelty.add_records(migrants);
  pending_migration = m.trace();
  pending_migration["generation"] = gen;
}

void Loop::resume(const std::vector<Record>& records) {
  for (const auto& r : records)
    if (evolve_run(r) == run_id) mine.push_back(r);
  if (mine.empty()) throw usage_error("--resume " + run_id + ": no record of that run under " + o.results_dir);
  read_trace_history();
  for (const auto& r : mine) {
    const EvolveEntry ev = *evolve_entry(r);  // a record of the run has one
    first_generation = std::max(first_generation, ev.generation + 1);
    gpu_s += r.gpu_seconds.value_or(0);
    // One evaluation per candidate that reached the GPU: its screen, or its full run unscreened.
    if (reached_gpu(r.outcome) && (ev.phase == "screen" || !o.quick)) ++evaluated;
    const double f = fitness_us(r);
    double& slot = ev.phase == "full" ? best : best_quick;
    if (f > 0 && (slot == 0 || f < slot)) slot = f;
  }
}

}  // namespace evo::evolve_loop
