// The record schema: one JSON object per candidate evaluation, one line in
// results/*.jsonl. Versioned with `schema_version` (semver); docs/records.md describes it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/candidate.h"
#include "store/typed_record.h"

namespace evo {

inline constexpr const char* kRecordSchemaVersion = "1.0";

// A record with the candidate's part filled in (id, variant, stage, parent, source, params,
// task, arch) and this evo's schema version; kind, time and outcome are the caller's.
Record candidate_record(const Candidate& c);

// Checks a parsed record line: schema_version major 1, required fields of the right types.
// Returns an empty string when valid, else what is wrong (for messages naming file:line).
std::string validate_record(const nlohmann::json& j);

std::string utc_now_iso8601();
// The same instant for file names and run ids: 20261121T033207Z.
std::string utc_now_compact();

}  // namespace evo
