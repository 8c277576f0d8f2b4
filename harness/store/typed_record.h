// The record (docs/records.md) as a C++ type: one reader, one writer. The reader is strict on
// what every record must carry (validate_record's rules: schema major 1, identity fields of the
// right types, a known outcome) and on the values of its times (store/record_values.h: no
// negative, non-finite or string time or fitness), and tolerant elsewhere: a field of a newer minor version, or an
// optional field of an unexpected type, is kept untouched in `extra` and written back as it
// came, so read -> write -> read loses nothing from a foreign log (evo merge).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/outcome.h"

namespace evo {

struct SchemaVersion {
  int major = 1, minor = 0;
  static std::optional<SchemaVersion> parse(const std::string& text);  // "1.0"
  std::string text() const;
};

struct RecordEnv {
  std::optional<std::string> gpu, gpu_key, nvrtc, evo, host, gpu_uuid;
  std::optional<long long> cc, sms, driver, device;
  nlohmann::json extra = nlohmann::json::object();
};

struct RecordCompile {
  std::optional<std::string> cache_key;
  std::optional<bool> cached;
  std::optional<double> seconds;
  nlohmann::json extra = nlohmann::json::object();  // options, resources, launch
};

// One checked case of the correctness or post-timing gate.
struct GateCheck {
  std::optional<std::string> case_id, shape, inputs;
  std::optional<long long> seed;
  std::optional<bool> pass, inputs_intact, guards_intact, deterministic;
  std::optional<double> max_abs, rel_l2, us;
  nlohmann::json extra = nlohmann::json::object();
};

struct RecordGate {
  std::optional<bool> pass;
  std::optional<std::string> reason;
  std::optional<std::vector<GateCheck>> checks;
  nlohmann::json extra = nlohmann::json::object();
};

// One compute-sanitizer tool's run over the sanitize cases (gates.sanitizer.tools, in order).
struct SanitizerToolRun {
  std::optional<std::string> tool, summary, exit, first;
  std::optional<std::string> log;  // a failing tool's log: its head and its tail
  std::optional<bool> pass;
  std::optional<long long> errors, hazards;
  std::optional<double> seconds;
  nlohmann::json extra = nlohmann::json::object();
};

// gates.sanitizer: `evo run --sanitize` ran the candidate under compute-sanitizer (a would-be
// elite only). Its verdict belongs to the compiled code: populations keep a failed one out.
struct SanitizerReport {
  std::optional<bool> pass;
  std::optional<std::vector<std::string>> cases;
  std::optional<std::vector<SanitizerToolRun>> tools;
  nlohmann::json extra = nlohmann::json::object();

  bool passed() const { return pass.value_or(false); }  // a pass that is not a boolean is none
};

// gates.sampled: the sampled gate cases (gates.json "sampled"): the seed that drew them, how
// many were drawn, how many ran, how many passed.
struct SampledGateSummary {
  std::optional<long long> seed, cases, run, passed;
  nlohmann::json extra = nlohmann::json::object();
};

struct RecordGates {
  std::optional<RecordGate> resources, correctness, determinism, post_timing;
  std::optional<RecordGate> deep;             // the deep tier's cases, when a would-be elite ran them after timing
  std::optional<SanitizerReport> sanitizer;   // empty: not sanitized (null in the record, or absent)
  std::optional<SampledGateSummary> sampled;  // empty: no sampled cases drawn (null, or an older record)
  // Unknown fields, and sanitizer/sampled when the record says null: a typed member that is set
  // is written over the null here.
  nlohmann::json extra = nlohmann::json::object();
};

// One timed sample whose every output element was compared with evo's reference on the GPU.
struct TimedFullCheck {
  std::optional<long long> sample;         // 1-based, among the shape's timed samples
  std::optional<std::string> why, inputs;  // "drawn" (an index drawn at run time) or "last"; its distribution
  std::optional<double> max_abs, rel_l2;
  std::optional<bool> pass;
  nlohmann::json extra = nlohmann::json::object();
};

// The repeat probes: launches that repeated a timed sample's inputs right after it, against those
// samples (the median gain over their pairs, and the limit the timed spread allows).
struct RepeatProbes {
  std::optional<long long> n;
  std::optional<double> fresh_median_us, repeat_median_us, gain_us, limit_us;
  std::optional<bool> pass;
  nlohmann::json extra = nlohmann::json::object();
};

// timing[i].integrity: how the shape's timed samples were shown to do the work (docs/safety.md
// "Timing integrity").
struct TimingIntegrity {
  std::optional<bool> fresh_inputs;                        // every timed sample on inputs no launch had seen
  std::optional<long long> samples_verified;               // timed samples whose output was checked on the GPU
  std::optional<long long> rows_per_sample, rows_checked;  // query rows drawn at run time and recomputed
  std::optional<double> rows_max_abs, rows_rel_l2;
  std::optional<std::vector<TimedFullCheck>> full_checks;
  std::optional<RepeatProbes> repeat_probes;
  std::optional<double> floor_us;  // the roofline floor (null: no peaks for this GPU in gates.json)
  std::optional<bool> inputs_intact, guards_intact, pass;
  std::optional<std::string> failure;  // the sample that failed and its check (null: none)
  nlohmann::json extra = nlohmann::json::object();
};

struct TimingEntry {
  std::optional<std::string> shape, set;
  std::optional<double> median_us, p10_us, p90_us, stdev_us, rse, tflops;
  std::optional<long long> n;
  std::optional<TimingIntegrity> integrity;         // empty: timed before timing integrity (older records)
  nlohmann::json extra = nlohmann::json::object();  // the rest of the statistics, clocks, graph times
};

struct Fitness {
  std::optional<double> geomean_median_us, geomean_p90_us;
  std::optional<long long> shapes;
  std::optional<bool> complete;
  nlohmann::json extra = nlohmann::json::object();
};

// Seconds per named part of one evaluation (run/eval_phases.h: process_start_s, worker_init_s,
// ..., parent_compare_s, record_s); empty: not measured (the record says null).
using PhaseDetail = std::map<std::string, std::optional<double>>;

// Wall time per phase of one evaluation (compile_s, gpu_s, and sanitizer_s and deep_gate_s when
// they ran).
struct RecordPhases {
  std::optional<double> compile_s, gpu_s, sanitizer_s, deep_gate_s;
  std::optional<PhaseDetail> detail;
  nlohmann::json extra = nlohmann::json::object();
};

struct Record {
  SchemaVersion schema;
  std::string kind, candidate_id, variant, task, time, source_sha256;
  int stage = 0;
  Outcome outcome = Outcome::ok;
  ParamSet params;  // the tunables, in the record's key order (sorted): a variant's order is its own
  std::optional<std::string> run_id, parent, source_path, arch, origin, benchmark, reason;
  std::optional<RecordEnv> env;
  std::optional<RecordCompile> compile;
  std::optional<RecordGates> gates;
  std::optional<std::vector<TimingEntry>> timing;
  std::optional<Fitness> fitness;  // empty also when the record says null
  std::optional<bool> pruned;
  std::optional<double> gpu_seconds;
  std::optional<long long> gate_seed;  // the sampled gate's seed (null: none drawn)
  std::optional<std::string> shard;    // "i/N" under --shard
  std::optional<std::vector<std::string>> warnings;
  std::optional<RecordPhases> phases;
  // Unknown fields, and fields that are null in the record (fitness, gate_seed, parent, ...):
  // a typed member that is set is written over the null here.
  nlohmann::json extra = nlohmann::json::object();

  std::string gpu_key() const;  // env.gpu_key, or "" (compile records, foreign logs)
  // The one order of two records of a candidate: later time, then the greater run id.
  bool newer_than(const Record& other) const;
};

struct RecordRead {
  std::optional<Record> record;
  std::string error;    // why the line is not a record (when `record` is empty)
  std::string warning;  // e.g. a newer minor version
};

RecordRead read_record(const nlohmann::json& j);
nlohmann::json write_record(const Record& r);

// The parts' readers, for a writer that starts from JSON of another layer's making (the output
// check of gates/correctness, the worker's timing statistics): typed fields out, the rest in extra.
GateCheck read_gate_check(nlohmann::json j);
TimingEntry read_timing_entry(nlohmann::json j);

}  // namespace evo
