// evo evolve's types: its part of a record (the "evolve" entry, docs/evolve.md), its verdict on
// a proposal (one entry of a trace line's "verdicts", and what the request's "history" lists),
// and the record's parts the loop decides on. The loop, islands, requests and the report read
// records through these, never a field by its JSON name.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/outcome.h"
#include "core/param_json.h"
#include "store/typed_record.h"

namespace evo {

struct EvolveEntry {
  std::string run, generator, parent, rationale, op, island;
  int generation = 0;
  std::string phase;          // "screen" | "full"
  std::string admission;      // "enter" | "displace" | "tie" | "below" | "none"; empty before admission
  std::string compared_with;  // the elite it was admitted against
  std::optional<double> admission_spread;
  nlohmann::json extra = nlohmann::json::object();  // fields of another writer, kept as they came
};

EvolveEntry read_evolve_entry(const nlohmann::json& j);
nlohmann::json write_evolve_entry(const EvolveEntry& e);
// The record's entry; nullopt for a record evo evolve did not write.
std::optional<EvolveEntry> evolve_entry(const Record& r);
void set_evolve_entry(Record& r, const EvolveEntry& e);

// Records as read_records gives them (validated), typed; a line that does not read is left out.
std::vector<Record> typed_records(const std::vector<nlohmann::json>& records);
// The geometric-mean median of a record's fitness in µs; 0 without one.
double fitness_us(const Record& r);
// The candidate got GPU time: it was not stopped before (constraints, compile, resources,
// technique, unsupported).
bool reached_gpu(Outcome o);
std::string evolve_run(const Record& r);  // evolve.run, or "" for a record of no run

// evo evolve's verdict on one proposal.
struct ProposalVerdict {
  std::string candidate_id, variant, source_sha256;  // empty until there is a candidate
  std::optional<ParamSet> params;
  std::string parent, rationale;
  std::optional<Outcome> outcome;  // set on every path a proposal ends
  std::string reason;
  std::string same_code_as;  // a duplicate by code: the candidate that ran it
  std::optional<double> fitness_us, screen_us, gpu_seconds;
  std::optional<bool> pruned;
  std::string admission;
};

nlohmann::json write_verdict(const ProposalVerdict& v);
ProposalVerdict read_verdict(const nlohmann::json& j);           // from a trace line (resume)
std::string params_text(const std::optional<ParamSet>& params);  // "A=1 B=2", "" without

}  // namespace evo
