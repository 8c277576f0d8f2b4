// COMPARE.md (and its JSON / CSV forms) from records alone: per GPU and task, the best
// candidate of every stage, its figures per benchmark shape, the deltas between stages and the
// ratios against the peers (PyTorch SDPA backends), failures, warnings and a Mermaid chart.
//
// The output is a pure function of the records: no clock, no host, no paths, stable orders and
// fixed number formats, so the same records give the same bytes (the golden tests rely on it).
// docs/compare-and-gate.md explains every column.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.h"
#include "gates/regression.h"
#include "policy/config.h"
#include "store/revocations.h"

namespace evo {

struct RegimeTable;

// Measured dense GEMM ceilings, one row per GPU (gpu_key), used for "share of the ceiling".
// Add a GPU here only with figures measured on it (docs/compare-and-gate.md has the H200's).
struct GpuCeiling {
  const char* gpu_key;
  double fp16_tflops;
  double bf16_tflops;
  const char* source;
};
const std::vector<GpuCeiling>& gpu_ceilings();
std::optional<double> ceiling_tflops(const std::string& gpu_key, const std::string& dtype);

// `evo compare --format json`: the version of its layout (docs/compare-and-gate.md).
inline constexpr const char* kCompareSchemaVersion = "1.0";

// The report's thresholds, from gates/gates.json: "compare" (the confidence of the ± next to
// ratios, the speedup over the previous stage that is suspicious) and "verdict" (timing noisier
// than noisy_rse, an SM clock that fell below clock_drop_ratio of its start: the same warnings
// a run gives). The defaults are gates.json's values.
struct CompareThresholds {
  ComparePolicy compare;
  VerdictPolicy verdict;
  static CompareThresholds from(const GatesConfig& gates) { return {gates.compare, gates.verdict}; }
};

struct CompareInput {
  std::vector<nlohmann::json> records;                // results/*.jsonl, kind "run" (others are ignored)
  std::vector<nlohmann::json> peers;                  // results/peers/*.json, kind "peer"
  std::vector<std::string> record_files, peer_files;  // file names only, for provenance
  std::vector<Withdrawal> withdrawn;                  // <dir>/revoked.json's, records already out of `records`
};

// Reads <dir>/*.jsonl and <dir>/peers/*.json. Any unreadable line or peer entry is an input
// error (exit 1) listing every problem with file:line: a report must not silently drop data.
CompareInput load_compare_input(const std::filesystem::path& results_dir);
// A peer file is a JSON list of peer records; `origin` names it in messages. Appends to `out`,
// problems to `problems`.
void parse_peer_list(const std::string& text, const std::string& origin, std::vector<nlohmann::json>& out,
                     std::vector<std::string>& problems);

// One measured shape of one candidate or peer.
struct ShapeFigures {
  std::string shape;
  MedianSample sample;
  double p10_us = 0, p90_us = 0;
  std::optional<double> rse, tflops, ceiling_share;
  std::optional<double> clock_before_mhz, clock_after_mhz;
};

// One shape of one stage, with its ratios. speedup = other's time / this time (> 1: faster).
struct StageShapeRow {
  ShapeFigures figures;
  std::optional<RatioInterval> time_vs_prev;             // this / previous stage (< 1: faster)
  std::optional<RatioInterval> speedup_vs_base;          // base stage / this
  std::map<std::string, RatioInterval> speedup_vs_peer;  // peer name -> peer / this
};

struct StageRow {
  int stage = 0;
  std::string variant, candidate_id, run_id;
  std::string time;  // the record's; its peers are the peer records nearest to it in time
  nlohmann::json params = nlohmann::json::object();
  std::vector<StageShapeRow> shapes;  // in the section's shape order, only shapes it measured
  double geomean_p50_us = 0, geomean_p90_us = 0;
  std::optional<int> prev_stage;
  std::optional<RatioInterval> time_vs_prev, speedup_vs_base;  // geomeans over common shapes
  std::map<std::string, RatioInterval> speedup_vs_peer;
  std::optional<long> registers, smem_bytes, spill_bytes;
  std::string technique;  // nonzero SASS technique counts, "HGMMA 48, UTMALDG 6"; "" when not recorded
  std::string gates;      // "30/30 + post 5/5, det ok, max rel L2 3.1e-04"
};

struct PeerRow {
  std::string name;                                // "pytorch-sdpa-flash" (the variant without "peer/")
  std::string label;                               // "PyTorch flash"
  std::string versions;                            // "torch 2.11.0, cuDNN 91900"
  std::vector<ShapeFigures> shapes;                // measured (outcome ok)
  std::map<std::string, std::string> unsupported;  // shape -> reason
};

// One shape regime of a task (core/regime.h): the kernel its dispatch runs (store/regimes.h).
struct RegimeRow {
  // choice: "fastest", "default (tie)", "default (unmeasured)" or "none (not deep-gated)"
  std::string regime, condition, choice;
  std::vector<std::string> shapes;  // the measured shapes it was chosen over
  std::optional<int> stage;
  std::string variant, params;              // of the chosen kernel; empty when there is none
  std::optional<double> geomean_us;         // the chosen kernel over the shapes
  std::optional<double> fastest_us;         // the fastest one (another kernel when it tied the default)
  std::optional<double> default_us;         // the default kernel over the same shapes
  std::map<std::string, double> kernel_us;  // the chosen kernel's median per shape of the regime
  // Per peer ("pytorch-sdpa-cudnn"): the geomean over the regime's shapes the peer ran of the
  // peer's median / the chosen kernel's (above 1: evo is faster), and how many shapes that was.
  std::map<std::string, double> vs_peer;
  std::map<std::string, int> vs_peer_shapes;
};

struct FailureRow {
  int stage = 0;
  Outcome outcome = Outcome::ok;
  std::string reason;
  int count = 0;
};

struct CompareSection {
  std::string gpu, task;
  std::optional<double> ceiling_tflops;
  std::vector<std::string> shapes;  // order of first appearance over the stages' best records
  std::vector<StageRow> stages;     // ascending stage number
  std::vector<PeerRow> peers;       // flash, cuDNN, efficient, then others by name
  std::vector<RegimeRow> regimes;   // from the population's per-regime elites; empty without them
  std::vector<FailureRow> failures;
  std::vector<std::string> warnings;
  std::string summary;
  int run_records = 0;
};

// One entry of revoked.json and what it withdrew from the report (store/revocations.h).
struct RevokedRow {
  std::string variant, params, reason, fixed_by, evidence;  // params: "Q_REGS=1 PERSISTENT=1", "" = any
  std::vector<std::string> sources;                         // sha256 digests, as the file lists them
  size_t records = 0;                                       // run records withdrawn
  std::vector<std::string> tasks;                           // their tasks, sorted
};

struct Comparison {
  CompareThresholds thresholds;
  std::vector<CompareSection> sections;  // by gpu, then task
  size_t run_records = 0, peer_records = 0;
  std::vector<std::string> record_files, peer_files;
  std::vector<RevokedRow> revoked;  // in revoked.json's order
};

struct CompareFilter {
  std::string gpu;   // gpu_key; empty = all
  std::string task;  // empty = all
};

// Throws a usage error when the filter leaves nothing (naming what is there).
Comparison build_comparison(const CompareInput& input, const CompareFilter& filter,
                            const CompareThresholds& thresholds = {});

// The regime rows of a population's regime table, and their Markdown.
std::vector<RegimeRow> regime_rows(const RegimeTable& regimes);
std::string regimes_markdown(const CompareSection& sec);
nlohmann::json regimes_json(const CompareSection& sec);

std::string render_markdown(const Comparison& c);
std::string render_json(const Comparison& c);
std::string render_csv(const Comparison& c);

}  // namespace evo
