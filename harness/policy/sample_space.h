// gates.json "sampled": the space the correctness gate draws extra cases from on every run
// (besides the visible fixed sets). Each dimension is a list of values; a run draws `cases`
// cases and every value of every dimension appears in at least one of them (a covering draw,
// see harness/run/sampler.cpp), paired at random by the run's gate seed.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace evo {

// Query/KV head counts of a released model (its GQA/MQA ratio is heads_q / heads_kv).
struct HeadConfig {
  int heads_q = 1, heads_kv = 1;
};

// A length regime: Sq and Skv drawn log-uniformly from their ranges, then moved off multiples
// of 8 (no tile divides them).
struct LengthClass {
  std::string name;
  int seq_q_lo = 1, seq_q_hi = 1, seq_kv_lo = 1, seq_kv_hi = 1;
};

// A softmax scale: `factor`, `factor/sqrt(D)` or `factor/D`, spelled as in gates.json.
struct ScaleChoice {
  std::string text;
  double factor = 1;
  enum Kind { constant, per_sqrt_d, per_d } kind = per_sqrt_d;
  double value(int head_dim) const;
};

struct SampleSpace {
  bool enabled = false;
  int cases = 0;
  int64_t max_tensor_elements = 0;  // per tensor, before layout padding
  double max_flops = 0;             // per case (4·B·Hq·Sq·Skv·D, before the causal mask)
  int batch_lo = 1, batch_hi = 1;
  std::vector<HeadConfig> heads;
  std::vector<LengthClass> lengths;
  std::vector<std::string> layouts;  // bhsd, bshd, packed_qkv, mixed, kv_cache
  std::vector<ScaleChoice> scales;
  std::vector<std::string> inputs;  // names of gates.json "inputs"
};

// Throws usage_error naming `where` and the field on any malformed entry.
SampleSpace parse_sample_space(const nlohmann::json& j, const std::string& where);
ScaleChoice parse_scale(const std::string& text, const std::string& where);
// Layout names the worker knows.
bool known_case_layout(const std::string& name);

}  // namespace evo
