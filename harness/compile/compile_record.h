// The compile layer's parts of a record (cache key, options, ptxas resources, launch geometry,
// the resource gate), and the whole record of a candidate that ended at compile time.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "compile/compiler.h"
#include "core/candidate.h"
#include "store/typed_record.h"

namespace evo {

RecordCompile compile_part(const CompileResult& r);
nlohmann::json resources_json(const PtxasResources& r);
nlohmann::json launch_json(const LaunchGeometry& g);
// The resource gate's entry in a record: pass/fail once a cubin exists, null before that.
RecordGate resource_gate_part(const Verdict& v);

// A complete record for a candidate that ended at compile time (or a compile-only listing).
Record compile_record(const Candidate& c, const CompileResult& r, const std::string& nvrtc_version);

}  // namespace evo
