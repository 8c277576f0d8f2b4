// The record schema (DESIGN §3): one JSON object per candidate evaluation, one line in
// results/*.jsonl. Versioned with `schema_version` (semver); docs/records.md describes it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "compile/compiler.h"
#include "core/candidate.h"

namespace evo {

inline constexpr const char* kRecordSchemaVersion = "1.0";

nlohmann::json candidate_json(const Candidate& c);
nlohmann::json compile_json(const CompileResult& r);
nlohmann::json resources_json(const PtxasResources& r);
nlohmann::json launch_json(const LaunchGeometry& g);
// The resource gate's entry in a record: pass/fail once a cubin exists, null before that.
nlohmann::json resource_gate_json(const Verdict& v);

// A complete record for a candidate that ended at compile time (or a compile-only listing).
nlohmann::json compile_record(const Candidate& c, const CompileResult& r, const std::string& nvrtc_version);

// Checks a parsed record line: schema_version major 1, required fields of the right types.
// Returns an empty string when valid, else what is wrong (for messages naming file:line).
std::string validate_record(const nlohmann::json& j);

std::string utc_now_iso8601();
// The same instant for file names and run ids: 20261121T033207Z.
std::string utc_now_compact();

}  // namespace evo
