// evo gate --baseline FILE [--replay RESULTS.jsonl] [--junit OUT.xml] [--strict] [--task T]
// evo gate --write-baseline FILE [--replay RESULTS.jsonl] [--task T] [--gpu G]
//
// The CI regression gate: current medians (a replayed results file, or the elites measured
// again on this GPU) against a committed baseline, each (task, shape) labelled SAME / FAST /
// SLOW / AMBIGUOUS / BROKEN / MISSING with a noise-aware interval (gates/regression.h).
// Exit codes (README.md): 3 correctness (wins), 4 slower, 1 missing or bad input, 0 otherwise;
// AMBIGUOUS is never a silent pass: it is printed loudly, and --strict makes it exit 4.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "core/errors.h"
#include "core/paths.h"
#include "gates/regression.h"
#include "report/table.h"
#include "run/remeasure.h"
#include "run/sampler.h"
#include "store/atomic_file.h"
#include "store/record.h"
#include "store/records.h"

namespace evo {

namespace {

struct GateOptions : CacheDir {
  std::string baseline, write_baseline, replay, junit, record, gpu;
  std::string devices = "0";  // when measuring: GPUs to share the elites over
  std::string gate_seed;      // when measuring: seed of the sampled gate cases (empty: drawn now)
  std::vector<std::string> tasks;
  bool strict = false;
  double confidence = NAN, min_effect = NAN;  // NAN: take gates.json's
};

RegressionConfig regression_config(const GateOptions& o) {
  RegressionConfig c = load_gates_config(repo_root() / "gates" / "gates.json").regression;
  if (!std::isnan(o.confidence)) c.confidence = o.confidence;
  if (!std::isnan(o.min_effect)) c.min_effect = o.min_effect;
  z_two_sided(c.confidence);  // a usage error now rather than after measuring
  if (!(c.min_effect >= 0 && c.min_effect < 1))
    throw usage_error(fmt::format("min_effect {} must lie in [0, 1)", c.min_effect));
  return c;
}

std::vector<nlohmann::json> replayed_records(const std::string& file) {
  RecordSet set = read_records(file);
  for (const auto& w : set.warnings) std::cerr << "evo gate: warning: " << w << "\n";
  if (!set.problems.empty()) {
    std::string msg = fmt::format("--replay {}: {} unreadable record(s):", file, set.problems.size());
    for (const auto& p : set.problems) msg += "\n  " + p;
    throw usage_error(msg);
  }
  return std::move(set.records);
}

// Measures the elites again on this GPU; their records are appended to a fresh results file.
std::vector<nlohmann::json> measured_records(const GateOptions& o, const std::vector<std::string>& tasks, int stage) {
  Context ctx = Context::load();
  RemeasureOptions r;
  r.tasks = tasks;
  r.stage = stage;
  r.top = 1;
  // A regression gate asks whether the same recorded code got slower: the deep tier (12-30 GPU-s
  // an elite) proved that code when it entered and would only repeat itself on every CI run.
  r.deep_tier = false;
  r.devices = o.devices;
  r.gate_seed = o.gate_seed.empty() ? draw_gate_seed() : parse_gate_seed(o.gate_seed);
  std::cout << fmt::format("gate: sampled cases drawn with gate seed {} (replay: --gate-seed {})\n", *r.gate_seed,
                           *r.gate_seed);
  r.results_file = o.record.empty() ? ctx.root / "results" / ("gate-" + utc_now_compact() + ".jsonl")
                                    : std::filesystem::path(o.record);
  r.cache_dir = o.cache_path();
  std::vector<nlohmann::json> records;  // as a replayed results file gives them to the gate
  for (const Record& rec : remeasure_elites(ctx, r)) records.push_back(write_record(rec));
  std::cout << fmt::format("measured {} record(s) again; appended to {}\n", records.size(), r.results_file.string());
  return records;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text: keep the report parseable.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string params_text(const nlohmann::json& params) {
  std::string s;
  for (const auto& [k, v] : params.items()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v.dump());
  return s.empty() ? "-" : s;
}

std::string interval_text(const GateResult& r) {
  if (!r.check) return "-";
  const auto& i = r.check->interval;
  if (!std::isfinite(i.hi)) return "[unknown: no spread]";
  return fmt::format("[{:.3f}, {:.3f}]", i.lo, i.hi);
}

std::string detail_line(const GateResult& r, const RegressionConfig& c) {
  std::string s = fmt::format("{} {} ({} {}, stage {}): ", r.entry.task, r.entry.shape, r.entry.variant,
                              params_text(r.entry.params), r.entry.stage);
  if (r.check)
    s += fmt::format(
        "baseline {:.2f} µs (n {}), current {:.2f} µs (n {}), current/baseline {:.3f} in {} at {:.0f} %; "
        "min effect ±{:.1f} %",
        r.entry.sample.median_us, r.entry.sample.n, r.current->median_us, r.current->n, r.check->interval.ratio,
        interval_text(r), c.confidence * 100, c.min_effect * 100);
  if (!r.note.empty()) s += (r.check ? "; " : "") + r.note;
  return s;
}

std::string junit_xml(const std::vector<GateResult>& results, const GateBaseline& b, const RegressionConfig& c,
                      bool strict) {
  int failures = 0, errors = 0, skipped = 0;
  std::string cases;
  for (const auto& r : results) {
    const std::string detail = xml_escape(detail_line(r, c));
    std::string body;
    switch (r.status) {
      case GateStatus::slow:
        ++failures;
        body = fmt::format("<failure type=\"SLOW\" message=\"performance regression\">{}</failure>", detail);
        break;
      case GateStatus::broken:
        ++failures;
        body =
            fmt::format("<failure type=\"CORRECTNESS\" message=\"the current kernel is not ok\">{}</failure>", detail);
        break;
      case GateStatus::missing:
        ++errors;
        body = fmt::format("<error type=\"MISSING\" message=\"no current measurement\">{}</error>", detail);
        break;
      case GateStatus::ambiguous:
        if (strict) {
          ++failures;
          body = fmt::format("<failure type=\"AMBIGUOUS\" message=\"too noisy to decide (--strict)\">{}</failure>",
                             detail);
        } else {
          ++skipped;
          body = fmt::format("<skipped message=\"AMBIGUOUS: too noisy to decide: {}\"/>", detail);
        }
        break;
      case GateStatus::same:
      case GateStatus::fast: body = fmt::format("<system-out>{}: {}</system-out>", to_string(r.status), detail); break;
    }
    cases += fmt::format("    <testcase classname=\"evo.gate.{}\" name=\"{}\" time=\"0\">\n      {}\n    </testcase>\n",
                         xml_escape(r.entry.task), xml_escape(r.entry.shape), body);
  }
  const std::string counts = fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"", results.size(),
                                         failures, errors, skipped);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"evo gate\" {}>\n  <testsuite name=\"evo gate "
      "{}\" "
      "{}>\n{}  </testsuite>\n</testsuites>\n",
      counts, xml_escape(b.gpu), counts, cases);
}

void print_results(const std::vector<GateResult>& results, const RegressionConfig& c, bool strict, int exit_code) {
  TextTable table({"task", "shape", "stage", "variant", "baseline µs", "current µs", "cur/base",
                   fmt::format("{:.0f} % interval", c.confidence * 100), "verdict", "note"});
  std::map<GateStatus, int> counts;
  for (const auto& r : results) {
    ++counts[r.status];
    table.add({r.entry.task, r.entry.shape, std::to_string(r.entry.stage), r.entry.variant,
               fmt::format("{:.2f}", r.entry.sample.median_us),
               r.current ? fmt::format("{:.2f}", r.current->median_us) : "-",
               r.check ? fmt::format("{:.3f}", r.check->interval.ratio) : "-", interval_text(r),
               std::string(to_string(r.status)), r.note});
  }
  std::cout << table.render();
  std::string summary;
  for (const auto& [status, n] : counts)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, to_string(status));
  std::cout << fmt::format("gate: {} (confidence {:.0f} %, min effect ±{:.1f} %{}) -> exit {}\n", summary,
                           c.confidence * 100, c.min_effect * 100, strict ? ", --strict" : "", exit_code);

  // Everything that is not a plain pass, one line each, on stderr too so CI logs show it.
  for (const auto& r : results) {
    if (r.status == GateStatus::same || r.status == GateStatus::fast) continue;
    std::cerr << "evo gate: " << to_string(r.status) << ": " << detail_line(r, c) << "\n";
  }
  if (counts[GateStatus::ambiguous] > 0)
    std::cerr << fmt::format(
        "evo gate: AMBIGUOUS: {} check(s) could not be told apart from noise: the {:.0f} % interval straddles "
        "±{:.1f} %. This is NOT a pass: re-measure on a quiet GPU (more samples), or run with --strict to fail on "
        "it{}.\n",
        counts[GateStatus::ambiguous], c.confidence * 100, c.min_effect * 100, strict ? " (it does now: exit 4)" : "");
  if (counts[GateStatus::missing] > 0)
    std::cerr << "evo gate: MISSING: the baseline names (task, shape) pairs with no current measurement; if the elite "
                 "changed on purpose, write a new baseline with `evo gate --write-baseline FILE`\n";
}

void run_write_baseline(const GateOptions& o) {
  const auto records = o.replay.empty() ? measured_records(o, o.tasks, -1) : replayed_records(o.replay);
  const GateBaseline b = baseline_from_records(records, o.gpu, o.tasks);
  write_file_atomic(o.write_baseline, baseline_json(b).dump(2) + "\n");
  std::set<std::string> tasks;
  for (const auto& e : b.entries) tasks.insert(e.task);
  std::cout << fmt::format("wrote {}: {} entries for {} ({})\n", o.write_baseline, b.entries.size(), b.gpu,
                           fmt::join(tasks, ", "));
}

void run_gate(const GateOptions& o) {
  const RegressionConfig config = regression_config(o);
  std::string warning;
  GateBaseline b = parse_baseline(read_file(o.baseline), o.baseline, &warning);
  if (!warning.empty()) std::cerr << "evo gate: warning: " << warning << "\n";
  if (!o.tasks.empty()) {
    std::set<std::string> present;
    for (const auto& e : b.entries) present.insert(e.task);
    for (const auto& t : o.tasks) {
      parse_task(t);
      if (!present.count(t))
        throw usage_error(fmt::format("--task {}: the baseline {} has no entries for it (it has: {})", t, o.baseline,
                                      fmt::join(present, ", ")));
    }
    std::erase_if(b.entries, [&](const BaselineEntry& e) {
      return std::find(o.tasks.begin(), o.tasks.end(), e.task) == o.tasks.end();
    });
  }
  std::vector<nlohmann::json> current;
  if (!o.replay.empty()) {
    current = replayed_records(o.replay);
  } else {
    std::vector<std::string> tasks;
    std::set<int> stages;
    for (const auto& e : b.entries) {
      if (std::find(tasks.begin(), tasks.end(), e.task) == tasks.end()) tasks.push_back(e.task);
      stages.insert(e.stage);
    }
    current = measured_records(o, tasks, stages.size() == 1 ? *stages.begin() : -1);
  }
  const auto results = evaluate_gate(b, current, config);
  const int code = gate_exit_code(results, o.strict);
  print_results(results, config, o.strict, code);
  if (!o.junit.empty()) {
    write_file_atomic(o.junit, junit_xml(results, b, config, o.strict));
    std::cout << "wrote " << o.junit << "\n";
  }
  if (code != kExitOk) throw CommandFailed(ExitCode(code));  // the verdicts are printed above
}

}  // namespace

void add_gate_command(CLI::App& app) {
  auto o = std::make_shared<GateOptions>();
  auto* cmd = app.add_subcommand(
      "gate", "CI regression gate: current medians against a baseline, noise-aware (exit 3 correctness, 4 slower)");
  auto* base = cmd->add_option("--baseline", o->baseline, "baseline JSON to compare against (docs/records.md)");
  auto* write = cmd->add_option("--write-baseline", o->write_baseline,
                                "write a baseline of the current elites (rank 1 of each task's highest stage) instead");
  base->excludes(write);
  cmd->add_option("--replay", o->replay, "take current records from this results file instead of measuring on the GPU");
  cmd->add_option("--junit", o->junit, "also write JUnit XML, one testcase per (task, shape)");
  cmd->add_flag("--strict", o->strict, "AMBIGUOUS (too noisy to decide) fails with exit 4");
  cmd->add_option("--task", o->tasks, "only these task(s)")->delimiter(',');
  cmd->add_option("--gpu", o->gpu, "with --write-baseline: the GPU (gpu_key) when the records hold several");
  cmd->add_option("--record", o->record,
                  "when measuring: results file to append to (default: results/gate-<time>.jsonl)");
  add_cache_dir(cmd, *o);
  cmd->add_option("--devices", o->devices, "when measuring: GPUs to share the elites over, e.g. 0,1 or all (one model)")
      ->capture_default_str();
  cmd->add_option(
      "--gate-seed", o->gate_seed,
      "when measuring: seed of the sampled gate cases (default: drawn per run; a record's gate_seed replays them)");
  cmd->add_option("--confidence", o->confidence, "override gates.json regression.confidence (two-sided)")
      ->check(above(0));
  cmd->add_option("--min-effect", o->min_effect, "override gates.json regression.min_effect (e.g. 0.03)")
      ->check(at_least(0));
  cmd->callback([o] {
    if (o->baseline.empty() && o->write_baseline.empty())
      throw usage_error("evo gate needs --baseline FILE (check) or --write-baseline FILE (record one)");
    if (!o->write_baseline.empty()) {
      if (!o->junit.empty() || o->strict)
        throw usage_error("--junit and --strict go with --baseline, not --write-baseline");
      run_write_baseline(*o);
    } else {
      if (!o->gpu.empty()) throw usage_error("--gpu goes with --write-baseline; a baseline names its GPU");
      if (!o->gate_seed.empty()) parse_gate_seed(o->gate_seed);  // a bad seed is exit 1 before any work
      run_gate(*o);
    }
  });
}

}  // namespace evo
