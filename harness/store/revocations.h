// Withdrawn kernel sources: results/revoked.json, a reviewed, hand-written list of sources shown
// wrong after their records were made (by analysis, or by a failure the records do not hold).
// Records are append-only history and are never edited; a revocation takes a source's records
// out of everything derived from the directory (read_records(dir) applies it), and says why.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/candidate.h"

namespace evo {

inline constexpr int kRevocationSchema = 1;
inline constexpr const char* kRevocationsFile = "revoked.json";

// One entry: the records of `variant` built from any of `source_sha256` (the .cu text's sha256)
// whose params hold every tunable of `params` with that value. A record that omits a tunable
// does not match it (a missing param is not assumed to be its default).
struct Revocation {
  std::string variant;
  std::vector<std::string> source_sha256;  // 64 lowercase hex digits each
  ParamSet params;                         // empty: every configuration of those sources
  std::string reason, fixed_by, evidence;  // one line; the fixing commit; a repo path that shows it

  bool matches(const nlohmann::json& record) const;
};

// Parses revoked.json strictly: a missing or malformed field is a usage error (exit 1) naming the
// file and the field ("results/revoked.json: field 'revoked[0].source_sha256[1]' is ...").
std::vector<Revocation> parse_revocations(const std::string& text, const std::string& origin);
std::vector<Revocation> read_revocations(const std::filesystem::path& file);

// The records one revocation withdrew from a directory's reading.
struct Withdrawal {
  Revocation revocation;
  std::vector<nlohmann::json> records;  // in file order
};

// Moves every record a revocation matches out of `records` into its withdrawal (the first entry
// that matches takes it); one withdrawal per entry, in the file's order, empty ones included.
std::vector<Withdrawal> withdraw(const std::vector<Revocation>& revocations, std::vector<nlohmann::json>& records);

}  // namespace evo
