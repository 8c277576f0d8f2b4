#include "policy/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/paths.h"
#include "policy/config_ranges.h"

namespace evo {

using nlohmann::json;

namespace {

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};

// Whether `v` holds a T exactly. nlohmann's get<int>() converts 1e300 (undefined behaviour) and
// true without complaint; a seed, a sample count or a limit must be a JSON number in range.
template <typename T>
bool holds(const json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
    return v.is_number_integer() && v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
           v.get<int64_t>() <= int64_t(std::numeric_limits<T>::max());
  } else if constexpr (std::is_floating_point_v<T>) {
    return v.is_number();
  } else if constexpr (is_vector<T>::value) {
    if (!v.is_array()) return false;
    for (const auto& e : v)
      if (!holds<typename T::value_type>(e)) return false;
    return true;
  } else {
    return true;  // strings and JSON values: get<T>() checks them itself
  }
}

// Reads a required field with a message naming the file and the field when it is missing
// or has the wrong type.
template <typename T>
T field(const json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw usage_error(fmt::format("{}: missing field '{}'", where, key));
  if (!holds<T>(j.at(key))) throw usage_error(fmt::format("{}: field '{}' has the wrong type", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw usage_error(fmt::format("{}: field '{}' has the wrong type", where, key));
  }
}

template <typename T>
T field_or(const json& j, const std::string& key, T fallback, const std::string& where) {
  if (!j.contains(key)) return fallback;
  return field<T>(j, key, where);
}

// "shape_sets" and "defaults": which sets gate and time, the seeds.
void parse_sets_and_defaults(const json& j, const std::string& origin, GatesConfig& c) {
  const json sets = field<json>(j, "shape_sets", origin);
  for (auto& [name, list] : sets.items())
    c.shape_sets[name] = field<std::vector<std::string>>(sets, name, origin + " shape_sets");
  const json d = field<json>(j, "defaults", origin);
  const std::string dw = origin + " defaults";
  c.gate_sets = field<std::vector<std::string>>(d, "gate_sets", dw);
  c.benchmark_sets = field<std::vector<std::string>>(d, "benchmark_sets", dw);
  c.seeds = field<std::vector<int>>(d, "seeds", dw);
  c.post_timing_seed = field<long>(d, "post_timing_seed", dw);
}

// "inputs" (the distributions by name) and the defaults that name them.
void parse_inputs(const json& j, const std::string& origin, GatesConfig& c) {
  const json inputs = field<json>(j, "inputs", origin);
  for (auto& [name, in] : inputs.items()) {
    const std::string iw = origin + " inputs." + name;
    c.distributions[name] = {name,
                             field<double>(in, "qk_std", iw),
                             field<double>(in, "v_std", iw),
                             field_or<double>(in, "q_mean", 0.0, iw),
                             field_or<double>(in, "outlier_every", 0.0, iw),
                             field_or<double>(in, "outlier_scale", 1.0, iw),
                             field_or<double>(in, "k_sink", 0.0, iw),
                             field_or<std::vector<std::string>>(in, "dtypes", {}, iw),
                             field_or<double>(in, "v_mean", 0.0, iw),
                             field_or<double>(in, "sink_score_log2", 0.0, iw),
                             field_or<bool>(in, "values_as_keys", true, iw)};
    for (const auto& dt : c.distributions[name].dtypes)
      if (dt != "fp16" && dt != "bf16" && dt != "fp8")
        throw usage_error(fmt::format("{}.dtypes: '{}' is not a dtype: use fp16, bf16 or fp8", iw, dt));
  }
  const json d = field<json>(j, "defaults", origin);
  const std::string dw = origin + " defaults";
  for (const auto& name : field<std::vector<std::string>>(d, "inputs", dw)) {
    if (!c.distributions.count(name))
      throw usage_error(fmt::format("{}: missing field '{}'", origin + " inputs", name));
    c.inputs.push_back(c.distributions.at(name));
  }
  c.post_timing_inputs = field_or<std::vector<std::string>>(d, "post_timing_inputs", c.post_timing_inputs, dw);
  if (c.post_timing_inputs.empty()) throw usage_error(dw + ": post_timing_inputs must name at least one distribution");
  for (const auto& name : c.post_timing_inputs)
    if (!c.distributions.count(name))
      throw usage_error(fmt::format("{}: post_timing_inputs names '{}', which is not in inputs", dw, name));
}

// One tolerance: a dtype's names atol, rtol and rel_l2 (bias and bias_keys optional, 0 when
// absent); a per-input override names what it changes, the rest is its dtype's (`dtype`).
Tolerance parse_tolerance(const json& t, const std::string& w, const std::optional<Tolerance>& dtype) {
  auto value = [&](const char* key, auto inherited) {
    using T = decltype(inherited);
    return dtype ? field_or<T>(t, key, inherited, w) : field<T>(t, key, w);
  };
  const Tolerance base = dtype.value_or(Tolerance{});
  const Tolerance tol{value("atol", base.atol), value("rtol", base.rtol), value("rel_l2", base.rel_l2),
                      field_or<double>(t, "bias", base.bias, w), field_or<long>(t, "bias_keys", base.bias_keys, w)};
  if (tol.bias < 0) throw usage_error(fmt::format("{}.bias: use 0 (not enforced) or a positive bound", w));
  if (tol.bias_keys < 0) throw usage_error(fmt::format("{}.bias_keys: use 0 (a flat bound) or a key count", w));
  return tol;
}

// "tolerances" per dtype, with per-distribution overrides; fp8 (an opt-in task) may be absent.
void parse_tolerances(const json& j, const std::string& origin, GatesConfig& c) {
  const json tol = field<json>(j, "tolerances", origin);
  for (const char* dt : {"fp16", "bf16", "fp8"}) {
    if (std::string(dt) == "fp8" && !tol.contains(dt)) continue;
    const json t = field<json>(tol, dt, origin + " tolerances");
    const std::string w = origin + " tolerances." + dt;
    c.tolerances[dt] = parse_tolerance(t, w, std::nullopt);
    const json overrides = field_or<json>(t, "inputs", json::object(), w);
    for (auto& [name, o] : overrides.items()) {
      if (!c.distributions.count(name)) throw usage_error(fmt::format("{}.inputs: '{}' is not in inputs", w, name));
      c.input_tolerances[dt][name] = parse_tolerance(o, w + ".inputs." + name, c.tolerances[dt]);
    }
  }
  if (j.contains("sampled")) {
    c.sampled = parse_sample_space(j.at("sampled"), origin + " sampled");
    for (const auto& name : c.sampled.inputs)
      if (!c.distributions.count(name))
        throw usage_error(fmt::format("{} sampled.inputs: '{}' is not in inputs", origin, name));
    for (const auto& dims : c.sampled.in_flight) {  // D stands for any task's head dim
      if (dims.find('x') == std::string::npos)
        throw usage_error(fmt::format("{} sampled.in_flight: '{}' is not BxHqxHkvxSqxSkvxD", origin, dims));
      try {
        validate_shape(parse_shape(dims, 64), 64);
      } catch (const EvoError& e) {
        throw usage_error(fmt::format("{} sampled.in_flight: {}", origin, e.what()));
      }
    }
  }
}

// "resources" per architecture, "timing" and "limits".
void parse_caps_timing_limits(const json& j, const std::string& origin, GatesConfig& c) {
  const json resources = field<json>(j, "resources", origin);
  for (auto& [arch, r] : resources.items()) {
    const std::string w = origin + " resources." + arch;
    c.resources[arch] = {field<int>(r, "max_registers", w), field<long>(r, "max_smem_bytes", w),
                         field<int>(r, "max_threads", w), field<long>(r, "max_stack_bytes", w),
                         field<long>(r, "max_spill_bytes", w)};
  }
  const json t = field<json>(j, "timing", origin);
  const std::string tw = origin + " timing";
  c.timing.warmup_ms = field<double>(t, "warmup_ms", tw);
  c.timing.min_samples = field<int>(t, "min_samples", tw);
  c.timing.max_samples = field<int>(t, "max_samples", tw);
  c.timing.target_rse = field<double>(t, "target_rse", tw);
  c.timing.shape_budget_ms = field<double>(t, "shape_budget_ms", tw);
  c.timing.launch_bound_us = field<double>(t, "launch_bound_us", tw);
  c.timing.graph_launches = field<int>(t, "graph_launches", tw);
  c.timing.prune_factor = field<double>(t, "prune_factor", tw);
  c.timing.rows_per_sample = field_or<int>(t, "rows_per_sample", c.timing.rows_per_sample, tw);
  c.timing.repeat_probes = field_or<int>(t, "repeat_probes", c.timing.repeat_probes, tw);
  c.timing.isolation_pause_ms = field_or<double>(t, "isolation_pause_ms", c.timing.isolation_pause_ms, tw);
  if (c.timing.min_samples < 10) throw usage_error(tw + ": min_samples must be at least 10");
  if (c.timing.rows_per_sample < 1 || c.timing.rows_per_sample > 65536)
    throw usage_error(tw + ": rows_per_sample must be between 1 and 65536");
  // Probes pair with distinct samples among the first min_samples (one is the drawn full check).
  if (c.timing.repeat_probes < 1 || c.timing.repeat_probes > c.timing.min_samples - 1)
    throw usage_error(tw + ": repeat_probes must be between 1 and min_samples - 1");
  if (!(c.timing.isolation_pause_ms >= 0)) throw usage_error(tw + ": isolation_pause_ms must not be negative");
  const json l = field<json>(j, "limits", origin);
  const std::string lw = origin + " limits";
  c.limits.compile_s = field<double>(l, "compile_s", lw);
  c.limits.compile_memory_mb = field<long>(l, "compile_memory_mb", lw);
  c.limits.source_bytes = field<long>(l, "source_bytes", lw);
  c.limits.log_bytes = field<long>(l, "log_bytes", lw);
  c.limits.load_s = field<double>(l, "load_s", lw);
  c.limits.gate_case_s = field<double>(l, "gate_case_s", lw);
  c.limits.timing_shape_s = field<double>(l, "timing_shape_s", lw);
  const auto or_default = [&](const char* k, auto& v) { v = field_or<std::decay_t<decltype(v)>>(l, k, v, lw); };
  or_default("device_check_elements", c.limits.device_check_elements);
  or_default("watchdog_host_bytes_per_s", c.limits.watchdog_host_bytes_per_s);
  or_default("watchdog_device_bytes_per_s", c.limits.watchdog_device_bytes_per_s);
  or_default("watchdog_flops_per_s", c.limits.watchdog_flops_per_s);
  or_default("reference_kernel", c.limits.reference_kernel);
  if (c.limits.device_check_elements < 1 || !(c.limits.watchdog_host_bytes_per_s > 0) ||
      !(c.limits.watchdog_device_bytes_per_s > 0) || !(c.limits.watchdog_flops_per_s > 0))
    throw usage_error(lw + ": device_check_elements and the watchdog_* rates must be positive");
}

// "regression", "verdict" and "compare": the regression gate, the verdict rules, evo compare.
void parse_thresholds(const json& j, const std::string& origin, GatesConfig& c) {
  const json rg = field_or<json>(j, "regression", json::object(), origin);
  c.regression.confidence = field_or<double>(rg, "confidence", 0.99, origin + " regression");
  c.regression.min_effect = field_or<double>(rg, "min_effect", 0.03, origin + " regression");
  const json vp = field_or<json>(j, "verdict", json::object(), origin);
  const std::string vw = origin + " verdict";
  c.verdict.repeat_z = field_or<double>(vp, "repeat_z", c.verdict.repeat_z, vw);
  c.verdict.repeat_min_fraction = field_or<double>(vp, "repeat_min_fraction", c.verdict.repeat_min_fraction, vw);
  c.verdict.repeat_slack_us = field_or<double>(vp, "repeat_slack_us", c.verdict.repeat_slack_us, vw);
  if (!(c.verdict.repeat_z > 0) || !(c.verdict.repeat_min_fraction > 0 && c.verdict.repeat_min_fraction < 1) ||
      !(c.verdict.repeat_slack_us >= 0))
    throw usage_error(vw + ": repeat_z must be positive, repeat_min_fraction in (0, 1), repeat_slack_us >= 0");
  c.verdict.clock_drop_ratio = field_or<double>(vp, "clock_drop_ratio", 0.9, vw);
  c.verdict.noisy_rse = field_or<double>(vp, "noisy_rse", 0.02, vw);
  c.verdict.stop_at_first_failure = field_or<bool>(vp, "stop_at_first_failure", false, vw);
  const json cp = field_or<json>(j, "compare", json::object(), origin);
  const std::string cw = origin + " compare";
  c.compare.confidence = field_or<double>(cp, "confidence", c.compare.confidence, cw);
  c.compare.suspicious_speedup = field_or<double>(cp, "suspicious_speedup", c.compare.suspicious_speedup, cw);
  if (!(c.compare.confidence > 0 && c.compare.confidence < 1))
    throw usage_error(cw + ": confidence must be between 0 and 1");
  if (!(c.compare.suspicious_speedup > 1)) throw usage_error(cw + ": suspicious_speedup must be above 1");
}

// "roofline": spec peaks per GPU model (the floor no timed sample may go below).
void parse_roofline(const json& j, const std::string& origin, GatesConfig& c) {
  const json r = field_or<json>(j, "roofline", json::object(), origin);
  if (!r.is_object()) throw usage_error(origin + ": roofline must be an object of GPU keys");
  for (auto& [gpu, peaks] : r.items()) {
    if (peaks.is_string()) continue;  // a note ("source")
    const std::string w = origin + " roofline." + gpu;
    RooflinePeaks p;
    p.memory_tbps = field<double>(peaks, "memory_tbps", w);
    const json t = field<json>(peaks, "tensor_tflops", w);
    if (!t.is_object()) throw usage_error(w + ": tensor_tflops must map dtype names to TFLOP/s");
    for (auto& [dtype, tflops] : t.items()) {
      if (dtype != "fp16" && dtype != "bf16" && dtype != "fp8")
        throw usage_error(fmt::format("{}: tensor_tflops names '{}', not fp16, bf16 or fp8", w, dtype));
      p.tensor_tflops[dtype] = field<double>(t, dtype, w + " tensor_tflops");
      if (!(p.tensor_tflops[dtype] > 0)) throw usage_error(w + ": tensor_tflops must be positive");
    }
    if (!(p.memory_tbps > 0)) throw usage_error(w + ": memory_tbps must be positive");
    c.roofline[gpu] = std::move(p);
  }
}

// "sanitizer" and "deep_gate": what would-be elites pass before they enter a top-3.
void parse_sanitizer(const json& j, const std::string& origin, GatesConfig& c) {
  const json sz = field_or<json>(j, "sanitizer", json::object(), origin);
  const std::string sw = origin + " sanitizer";
  c.sanitizer.shape_sets = field_or<std::vector<std::string>>(sz, "shape_sets", c.sanitizer.shape_sets, sw);
  c.sanitizer.seeds = field_or<std::vector<int>>(sz, "seeds", c.sanitizer.seeds, sw);
  c.sanitizer.inputs = field_or<std::string>(sz, "inputs", c.sanitizer.inputs, sw);
  c.sanitizer.tool_s = field_or<double>(sz, "tool_s", c.sanitizer.tool_s, sw);
  c.sanitizer.deep_cases = field_or<int>(sz, "deep_cases", c.sanitizer.deep_cases, sw);
  c.sanitizer.deep_max_elements = field_or<long long>(sz, "deep_max_elements", c.sanitizer.deep_max_elements, sw);
  if (c.sanitizer.deep_cases < 0 || c.sanitizer.deep_cases > 64)
    throw usage_error(sw + ": deep_cases must be 0 to 64 (each runs under every tool)");
  if (c.sanitizer.deep_max_elements <= 0) throw usage_error(sw + ": deep_max_elements must be positive");
  for (const auto& set : c.sanitizer.shape_sets)
    if (!c.shape_sets.count(set)) throw usage_error(fmt::format("{}: shape set '{}' is not in shape_sets", sw, set));
  if (c.sanitizer.seeds.empty()) throw usage_error(sw + ": seeds must name at least one seed");
  if (!(c.sanitizer.tool_s > 0)) throw usage_error(sw + ": tool_s must be positive");
  c.input(c.sanitizer.inputs);  // names it if it is not one of defaults.inputs
  const json dg = field_or<json>(j, "deep_gate", json::object(), origin);
  const std::string dw = origin + " deep_gate";
  c.deep_gate.shape_sets = field_or<std::vector<std::string>>(dg, "shape_sets", c.deep_gate.shape_sets, dw);
  c.deep_gate.sanitizer = field_or<bool>(dg, "sanitizer", c.deep_gate.sanitizer, dw);
  c.deep_gate.enabled = field_or<bool>(dg, "enabled", c.deep_gate.enabled, dw);
  c.deep_gate.inputs = field_or<std::vector<std::string>>(dg, "inputs", c.deep_gate.inputs, dw);
  for (const auto& in : c.deep_gate.inputs)
    if (!c.distributions.count(in)) throw usage_error(fmt::format("{}: inputs: '{}' is not in inputs", dw, in));
  c.deep_gate.far_stride_sets = field_or<std::vector<std::string>>(dg, "far_stride_sets", {}, dw);
  c.deep_gate.long_key_sets = field_or<std::vector<std::string>>(dg, "long_key_sets", {}, dw);
  c.deep_gate.long_key_inputs = field_or<std::vector<std::string>>(dg, "long_key_inputs", {}, dw);
  for (const auto& in : c.deep_gate.long_key_inputs)
    if (!c.distributions.count(in))
      throw usage_error(fmt::format("{}: long_key_inputs: '{}' is not in inputs", dw, in));
  if (c.deep_gate.long_key_sets.empty() != c.deep_gate.long_key_inputs.empty())
    throw usage_error(dw + ": long_key_sets and long_key_inputs go together (both empty or both listed)");
  for (const auto* sets : {&c.deep_gate.shape_sets, &c.deep_gate.far_stride_sets, &c.deep_gate.long_key_sets})
    for (const auto& set : *sets)
      if (!c.shape_sets.count(set)) throw usage_error(fmt::format("{}: shape set '{}' is not in shape_sets", dw, set));
}

}  // namespace

GatesConfig parse_gates_config(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    throw usage_error(fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  GatesConfig c;
  auto version = field<std::string>(j, "schema_version", origin);
  if (version.rfind("1.", 0) != 0)
    throw usage_error(fmt::format("{}: schema_version {} is not supported (this evo reads 1.x)", origin, version));
  parse_sets_and_defaults(j, origin, c);
  parse_inputs(j, origin, c);
  parse_tolerances(j, origin, c);
  parse_caps_timing_limits(j, origin, c);
  parse_thresholds(j, origin, c);
  parse_sanitizer(j, origin, c);
  parse_roofline(j, origin, c);
  c.model_shapes = parse_model_shapes(j, origin);
  if (c.shape_sets.count(kModelsSet))
    throw usage_error(origin + ": shape_sets.models: the name is taken by model_shapes, rename the set");
  check_config_ranges(c, origin);
  return c;
}

GatesConfig load_gates_config(const std::filesystem::path& file) {
  return parse_gates_config(read_file(file), file.string());
}

std::vector<Shape> GatesConfig::shapes(const std::vector<std::string>& sets_or_dims, const Task& task) const {
  std::vector<Shape> out;
  for (const auto& entry : sets_or_dims) {
    if (entry == kModelsSet) {
      const auto m = model_shapes_for(model_shapes, task);
      out.insert(out.end(), m.begin(), m.end());
    } else if (auto it = shape_sets.find(entry); it != shape_sets.end()) {
      for (const auto& dims : it->second) {
        Shape s = parse_shape(dims, task.head_dim);
        s.set = entry;
        validate_shape(s, task.head_dim);
        out.push_back(s);
      }
    } else if (entry.find('x') != std::string::npos) {
      out.push_back(parse_shape(entry, task.head_dim));
      validate_shape(out.back(), task.head_dim);
    } else {
      std::string known;
      for (const auto& [name, _] : shape_sets) known += (known.empty() ? "" : ", ") + name;
      known += std::string(", ") + kModelsSet;
      throw usage_error(fmt::format("unknown shape set '{}': use one of {} or BxHqxHkvxSqxSkvxD", entry, known));
    }
  }
  return out;
}

const Tolerance& GatesConfig::tolerance(const Task& task) const {
  auto t = tolerances.find(task.dtype_name());
  if (t == tolerances.end())
    throw usage_error(fmt::format("gates.json has no tolerances.{} for task {}: add it (docs/fp8.md)",
                                  task.dtype_name(), task.name()));
  return t->second;
}

const Tolerance& GatesConfig::tolerance(const Task& task, const std::string& inputs) const {
  if (auto d = input_tolerances.find(task.dtype_name()); d != input_tolerances.end())
    if (auto t = d->second.find(inputs); t != d->second.end()) return t->second;
  return tolerance(task);
}

const InputDistribution& GatesConfig::input(const std::string& name) const {
  std::string known;
  for (const auto& in : inputs) {
    if (in.name == name) return in;
    known += (known.empty() ? "" : ", ") + in.name;
  }
  throw usage_error(fmt::format("unknown input distribution '{}': use one of {} (defaults.inputs)", name, known));
}

const ResourceCaps& GatesConfig::caps(const std::string& arch) const {
  auto it = resources.find(arch);
  if (it == resources.end()) {
    std::string known;
    for (const auto& [a, _] : resources) known += (known.empty() ? "" : ", ") + a;
    throw usage_error(fmt::format("unknown arch '{}': use one of {}", arch, known));
  }
  return it->second;
}

std::optional<double> GatesConfig::floor_us(const std::string& gpu_key, const Task& task, const Shape& s) const {
  const auto it = roofline.find(gpu_key);
  if (it == roofline.end()) return std::nullopt;
  const auto peak = it->second.tensor_tflops.find(task.dtype_name());
  if (peak == it->second.tensor_tflops.end()) return std::nullopt;
  const double q_elems = double(s.batch) * s.heads_q * s.seq_q * s.head_dim;
  const double kv_elems = double(s.batch) * s.heads_kv * s.visible_kv(task.causal) * s.head_dim;
  const double bytes = task.input_bytes() * (q_elems + 2 * kv_elems) + task.output_bytes() * q_elems;
  const double flop_us = s.flops(task.causal) / (peak->second * 1e12) * 1e6;
  const double byte_us = bytes / (it->second.memory_tbps * 1e12) * 1e6;
  return std::max(flop_us, byte_us);
}

}  // namespace evo
