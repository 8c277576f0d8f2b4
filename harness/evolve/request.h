// The request a generator gets (`evo context`, and each generation of `evo evolve`), after
// EvoEngineer: I1 task context (semantics, ABI header, shapes, resource caps, GPU), I2 the
// elites (source, params, timing, resources, lineage), I3 insights (stage notes, measured
// parent -> child deltas, profiler readings) and feedback on recent failures. The operator
// picks the parts: free = I1; insight = I1 + I3; full = I1 + I2 + I3 (failures always). Each
// distinct kernel source is in "sources" once, keyed by its SHA-256; `params` is an object
// everywhere. Within `evo evolve` the request also says where the run stands ("run") and what
// every evaluation of the run gave ("history"). docs/evolve.md has the schema.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "evolve/evolve_record.h"
#include "run/context.h"
#include "store/typed_record.h"

namespace evo {

struct RequestInputs {
  const Context* ctx = nullptr;
  const Stage* stage = nullptr;
  Task task;
  std::string gpu_key;                                   // whose elites; empty: the newest record's GPU for this task
  std::string op = "full";                               // free | insight | full
  const std::vector<nlohmann::json>* records = nullptr;  // every record under results/
  std::vector<nlohmann::json> feedback;                  // this run's failures, newest last
  size_t max_failures = 8;
  // evo evolve: {"id", "generation", "wanted", "generations_left", "budget_gpu_s", "gpu_s_spent",
  // "gpu_s_left"} and every evaluation of the run so far (history_entry); null/empty for evo context.
  nlohmann::json run;
  std::vector<nlohmann::json> history;
  std::vector<std::string> bench_sets;  // what candidates are timed on; empty: gates.json benchmark_sets
};

bool valid_operator(const std::string& op);
nlohmann::json build_request(const RequestInputs& in);
std::string request_markdown(const nlohmann::json& request);

// Candidate ids from a record back through its parents (its own id first), using the records'
// evolve.parent (first parent of a crossover) links; at most `depth` steps.
std::vector<std::string> lineage(const std::map<std::string, Record>& by_candidate, const std::string& id,
                                 size_t depth = 12);
// Each candidate's record that counts: one with a fitness, else the newest.
std::map<std::string, Record> index_by_candidate(const std::vector<Record>& records);

// What a failing record tells a generator: outcome, reason, the first failing case with its
// error figures, and the compile log when there is one (capped).
nlohmann::json failure_feedback(const Record& record);

// One evaluation of a run as the request's "history" lists it: generation, candidate_id,
// variant, source_sha256 (generated sources), params (object), outcome, fitness_us (null
// without), screen_us (a --quick screen).
nlohmann::json history_entry(const ProposalVerdict& verdict, int generation);

}  // namespace evo
