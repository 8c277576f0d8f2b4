// What the worker reports for a case checked on the GPU (CaseSpec::device_check): counts and
// sums of the comparison with the FP32 reference, not the output itself. The worker computes
// them after the candidate's last launch; the parent applies the verdict rules
// (gates/correctness.h) exactly as it does to an output file. The parent decodes the report
// from an untrusted line, so device_check_from_json checks every field.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace evo {

struct DeviceCheckFacts {
  uint64_t n = 0;           // output elements compared
  uint64_t unwritten = 0;   // still holding the poison bits
  uint64_t nonfinite = 0;   // NaN or Inf written by the kernel
  uint64_t bad = 0;         // |out - ref| > atol + rtol·|ref|
  int64_t first_fail = -1;  // logical BHSD index of the first failing element, -1 if none
  uint64_t extent = 0;      // elements of the output first_fail indexes when only some were compared (0: n)
  double max_abs = 0, err2 = 0, ref2 = 0;  // over finite written elements
  double signed_err = 0, abs_ref = 0;      // sums of (out - ref)·sign(ref) and |ref|, likewise
  double seconds = 0;         // the case in the worker after the fill: hashes, launches, reference, compare
  double reference_s = 0;     // of which: the reference kernel and the compare kernel
  uint64_t device_bytes = 0;  // device memory in use at the case's peak (reference allocated)
};

// Counts and sums of two comparisons together; the first failing element is the earlier one's.
void add_facts(DeviceCheckFacts& total, const DeviceCheckFacts& f);

nlohmann::json to_json(const DeviceCheckFacts& f);
// nullopt and `error` set when a field is missing, of the wrong type or out of range.
std::optional<DeviceCheckFacts> device_check_from_json(const nlohmann::json& j, std::string& error);

}  // namespace evo
