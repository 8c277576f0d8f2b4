// The correctness gate's arithmetic: a candidate's output (raw fp16/bf16, logical BHSD)
// against the FP32 reference of the same inputs. Runs in the parent, never in the worker.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/task.h"
#include "gpu/device_check.h"
#include "policy/config.h"

namespace evo {

struct OutputCheck {
  bool pass = false;
  size_t n = 0;
  size_t unwritten = 0;  // elements still holding the poison bits
  size_t nonfinite = 0;  // NaN or Inf written by the kernel
  size_t bad = 0;        // |out - ref| > atol + rtol * |ref|
  double max_abs = 0, rel_l2 = 0;
  // Σ (out − ref)·sign(ref) / Σ |ref| over finite written elements: the error's bias relative to
  // the output's size, negative toward zero. Rounding to nearest averages to ~0; a kernel that
  // truncates (hacker round 19: o_round_toward_zero.cu) sits near −2⁻¹² in fp16 while its
  // relative L2 stays far under rel_l2.
  double bias = 0;
  std::string reason;  // one line when !pass
};

// Below this many checked elements a bias says little (its noise is the relative L2 over the
// square root of the count), so Tolerance::bias is not enforced there, unless the bias stands out
// of its own noise (bias_enforced).
inline constexpr size_t kBiasMinElements = 4096;
// Hacker round 22: a case under kBiasMinElements is held to the bias bound when its signed error
// is at least this many times its own noise: |Σ e·sign(ref)| >= kBiasSigmas · sqrt(Σ e²) (errors
// of random sign sum to about sqrt(Σ e²); errors of one sign to about sqrt(n) times it). Before, no
// case under 4 096 elements was, so a kernel that rounded O toward zero only on small calls (a
// decode step of one sequence over few heads, and three of the fixed small shapes) passed
// (o_round_toward_zero_small_calls.cu). An honest kernel's rounding to nearest stays near one
// sigma, and its drift is under the bound anyway: both must hold.
inline constexpr double kBiasSigmas = 6;
bool bias_enforced(size_t checked, double signed_err, double err2);

float half_bits_to_float(uint16_t h);
float bf16_bits_to_float(uint16_t b);

// `tol` as the case's (Tolerance::for_keys: the bias bound of its key count).
OutputCheck check_output(const std::string& out, const std::string& ref_f32, DType dtype, const Tolerance& tol);
// The same rules over the counts a worker computed on the GPU (gpu/device_check.h); a failure
// names the first failing element's (b, h, s, d) in the case's shape, whose key count scales the
// bias bound (Tolerance::for_keys).
OutputCheck check_counts(const DeviceCheckFacts& facts, const Tolerance& tol, const Shape& shape);
// Sets rel_l2, bias, reason and pass from the counts and the sums of squared error and
// reference, of the signed error and of |reference|.
void conclude(OutputCheck& c, double err2, double ref2, double signed_err, double abs_ref, const Tolerance& tol);
nlohmann::json check_json(const OutputCheck& c);

}  // namespace evo
