// COMPARE.md: fixed formats only, so equal inputs give equal bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/outcome.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/task.h"
#include "report/compare.h"
#include "report/compare_parts.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"

namespace evo {

using nlohmann::json;
using namespace compare_parts;

namespace {

std::string speedup_cell(const std::optional<RatioInterval>& r, bool with_interval) {
  if (!r) return "-";
  if (with_interval) return fmt::format("{} ± {}×", ratio_text(r->ratio), ratio_text(r->half_width()));
  return ratio_text(r->ratio) + "×";
}

std::string time_change_cell(const std::optional<RatioInterval>& r) { return r ? signed_percent(r->ratio - 1) : "-"; }

std::string kib_text(std::optional<long> bytes) {
  return bytes ? fmt::format("{:.1f} KiB", double(*bytes) / 1024) : "-";
}

// Table cells: no pipes, no line breaks, bounded length.
std::string cell(std::string s, size_t max_chars = 160) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  if (s.size() > max_chars) {
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
    s = s.substr(0, cut) + "…";
  }
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string row_md(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const auto& c : cells) s += " " + c + " |";
  return s + "\n";
}

std::string rule_md(const std::string& alignments) {  // 'l' or 'r' per column
  std::string s = "|";
  for (char a : alignments) s += a == 'r' ? "---:|" : "---|";
  return s + "\n";
}

std::optional<std::string> optional_number(std::optional<double> v, const char* format_spec) {
  if (!v) return std::nullopt;
  return fmt::format(fmt::runtime(format_spec), *v);
}

std::string share_text(const std::optional<double>& share) {
  return share ? fmt::format("{:.1f} %", *share * 100) : "-";
}

std::string rse_text(const std::optional<double>& rse) { return rse ? fmt::format("{:.2f} %", *rse * 100) : "-"; }

// Rounds up to 1, 2 or 5 times a power of ten: a y-axis top that reads well.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

std::string chart_md(const CompareSection& sec) {
  std::vector<std::string> labels, values, left_out;
  double top = 0;
  const size_t all = sec.shapes.size();
  auto add = [&](const std::string& label, const std::vector<const ShapeFigures*>& figures) {
    if (figures.size() < all) {
      left_out.push_back(fmt::format("{} ({} of {} shapes)", label, figures.size(), all));
      return;
    }
    std::vector<double> medians;
    for (const auto* f : figures) medians.push_back(f->sample.median_us);
    const double g = geomean(medians);
    top = std::max(top, g);
    labels.push_back("\"" + label + "\"");
    values.push_back(fmt::format("{:.1f}", g));
  };
  for (const auto& s : sec.stages) {
    std::vector<const ShapeFigures*> f;
    for (const auto& row : s.shapes) f.push_back(&row.figures);
    add(fmt::format("stage {}", s.stage), f);
  }
  for (const auto& p : sec.peers) {
    std::vector<const ShapeFigures*> f;
    for (const auto& shape : sec.shapes)
      if (const ShapeFigures* x = find_shape(p.shapes, shape)) f.push_back(x);
    add(p.label, f);
  }
  std::string out;
  if (labels.empty()) {
    out += "No stage or peer measured every shape; nothing to chart.\n";
  } else {
    out += "```mermaid\nxychart-beta\n";
    out += fmt::format("    title \"{} on {}: geomean median time over {} shapes, lower is better\"\n", sec.task,
                       sec.gpu, all);
    out += fmt::format("    x-axis [{}]\n", fmt::join(labels, ", "));
    out += fmt::format("    y-axis \"median µs (geomean)\" 0 --> {}\n", nice_ceiling(top * 1.1));
    out += fmt::format("    bar [{}]\n", fmt::join(values, ", "));
    out += "```\n";
  }
  if (!left_out.empty())
    out += fmt::format("\nNot in the chart (not every shape measured): {}.\n", fmt::join(left_out, ", "));
  return out;
}

std::string section_head_md(const CompareSection& sec) {
  std::string out = fmt::format("## {} on {}\n\n", sec.task, sec.gpu);
  out += "**" + sec.summary + "**\n\n";
  if (sec.ceiling_tflops)
    out += fmt::format("Ceiling for the share column: {:.0f} TFLOPS ({} dense GEMM). ", *sec.ceiling_tflops,
                       sec.task.substr(0, sec.task.find('-')));
  else
    out += fmt::format("No measured ceiling for {}: the share column is empty. ", sec.gpu);
  out += fmt::format("{} run record{} in this section.\n", sec.run_records, sec.run_records == 1 ? "" : "s");
  return out;
}

// The peers' columns of a table: "× <label>" headers, right-aligned.
void add_peer_columns(const CompareSection& sec, std::vector<std::string>& head, std::string& align) {
  for (const auto& p : sec.peers) {
    head.push_back("× " + p.label);
    align += 'r';
  }
}

std::string peer_speedup_cell(const std::map<std::string, RatioInterval>& m, const std::string& peer,
                              bool with_interval) {
  auto it = m.find(peer);
  return speedup_cell(it == m.end() ? std::nullopt : std::optional(it->second), with_interval);
}

std::string stages_md(const CompareSection& sec) {
  const int base = sec.stages.front().stage;
  std::string out = "\n### Stages (best candidate of each)\n\n";
  std::vector<std::string> head = {"stage",
                                   "best variant",
                                   "params",
                                   "p50 µs (geomean)",
                                   "p90 µs (geomean)",
                                   "Δ time vs prev",
                                   fmt::format("× vs stage {}", base)};
  std::string align = "rllrrrr";
  add_peer_columns(sec, head, align);
  for (const char* h : {"regs", "smem", "spills", "SASS technique", "gates"}) head.push_back(h);
  align += "rrrll";
  out += row_md(head) + rule_md(align);
  for (const auto& s : sec.stages) {
    std::vector<std::string> r = {std::to_string(s.stage),
                                  cell(s.variant),
                                  cell(params_text(s.params)),
                                  us_text(s.geomean_p50_us),
                                  us_text(s.geomean_p90_us),
                                  time_change_cell(s.time_vs_prev),
                                  speedup_cell(s.speedup_vs_base, true)};
    for (const auto& p : sec.peers) r.push_back(peer_speedup_cell(s.speedup_vs_peer, p.name, true));
    r.push_back(s.registers ? std::to_string(*s.registers) : "-");
    r.push_back(kib_text(s.smem_bytes));
    r.push_back(s.spill_bytes ? fmt::format("{} B", *s.spill_bytes) : "-");
    r.push_back(s.technique.empty() ? "-" : cell(s.technique));
    r.push_back(cell(s.gates));
    out += row_md(r);
  }
  return out;
}

std::string per_shape_md(const CompareSection& sec) {
  const int base = sec.stages.front().stage;
  std::string out = "\n### Per shape\n\n";
  std::vector<std::string> head = {"stage",
                                   "shape",
                                   "p50 µs",
                                   "p90 µs",
                                   "rse",
                                   "TFLOPS",
                                   "% of ceiling",
                                   "Δ time vs prev",
                                   fmt::format("× vs stage {}", base)};
  std::string align = "rlrrrrrrr";
  add_peer_columns(sec, head, align);
  out += row_md(head) + rule_md(align);
  for (const auto& s : sec.stages)
    for (const auto& row : s.shapes) {
      const auto& f = row.figures;
      std::vector<std::string> r = {std::to_string(s.stage),
                                    f.shape,
                                    us_text(f.sample.median_us),
                                    us_text(f.p90_us),
                                    rse_text(f.rse),
                                    optional_number(f.tflops, "{:.1f}").value_or("-"),
                                    share_text(f.ceiling_share),
                                    time_change_cell(row.time_vs_prev),
                                    speedup_cell(row.speedup_vs_base, false)};
      for (const auto& p : sec.peers) r.push_back(peer_speedup_cell(row.speedup_vs_peer, p.name, false));
      out += row_md(r);
    }
  return out;
}

std::string peers_md(const CompareSection& sec) {
  std::string out = "\n### Peers\n\n";
  if (sec.peers.empty())
    return out + "No peer measurements for these shapes (run `scripts/peers_sdpa.py` on this GPU).\n";
  out += row_md({"peer", "shape", "p50 µs", "p90 µs", "rse", "TFLOPS", "% of ceiling", "note"}) + rule_md("llrrrrrl");
  for (const auto& p : sec.peers)
    for (const auto& shape : sec.shapes) {
      if (const ShapeFigures* f = find_shape(p.shapes, shape))
        out += row_md({p.label, shape, us_text(f->sample.median_us), us_text(f->p90_us), rse_text(f->rse),
                       optional_number(f->tflops, "{:.1f}").value_or("-"), share_text(f->ceiling_share), ""});
      else if (auto it = p.unsupported.find(shape); it != p.unsupported.end())
        out += row_md({p.label, shape, "-", "-", "-", "-", "-", cell(it->second)});
    }
  out += "\n";
  for (const auto& p : sec.peers)
    out += fmt::format("- {}: `peer/{}`{}\n", p.label, p.name, p.versions.empty() ? "" : " (" + p.versions + ")");
  out +=
      "\nThis table shows each peer's latest record. The × columns above hold each stage against the peer "
      "records nearest in time to its own record: those of the same device call, where the peers ran in it.\n";
  return out;
}

std::string failures_and_warnings_md(const CompareSection& sec) {
  std::string out = "\n### Failures\n\n";
  if (sec.failures.empty()) {
    out += "None: every evaluation ended ok.\n";
  } else {
    out += row_md({"stage", "outcome", "count", "reason"}) + rule_md("rlrl");
    for (const auto& f : sec.failures)
      out += row_md({std::to_string(f.stage), std::string(to_string(f.outcome)), std::to_string(f.count),
                     cell(f.reason.empty() ? "-" : f.reason)});
  }
  out += "\n### Warnings\n\n";
  if (sec.warnings.empty()) out += "None.\n";
  for (const auto& w : sec.warnings) out += "- " + w + "\n";
  return out;
}

// One GPU × task section: head, stages, per shape, peers, chart, failures, warnings.
std::string section_md(const CompareSection& sec) {
  std::string out = section_head_md(sec);
  if (!sec.stages.empty()) out += stages_md(sec) + per_shape_md(sec);
  out += regimes_markdown(sec);
  out += peers_md(sec);
  out += "\n### Chart\n\n" + chart_md(sec);
  out += failures_and_warnings_md(sec);
  return out;
}

// revoked.json's entries: sources shown wrong after their records were made, left out of every
// section above (docs/compare-and-gate.md, "Revoked sources").
std::string revoked_md(const Comparison& c) {
  if (c.revoked.empty()) return "";
  std::string out =
      "\n## Revoked sources\n\n"
      "Records of these sources are left out of every section below and of the populations (results/revoked.json; "
      "the records themselves stay in the logs).\n\n";
  out += row_md({"variant", "sources", "params", "reason", "fixed by", "evidence", "records withdrawn", "tasks"});
  out += rule_md("llllllrl");
  for (const auto& r : c.revoked) {
    std::vector<std::string> shas;
    for (const auto& s : r.sources) shas.push_back(s.substr(0, 12));
    out += row_md({cell(r.variant), fmt::format("{}", fmt::join(shas, ", ")), r.params.empty() ? "any" : cell(r.params),
                   cell(r.reason, 400), cell(r.fixed_by), cell(r.evidence), std::to_string(r.records),
                   r.tasks.empty() ? "-" : fmt::format("{}", fmt::join(r.tasks, ", "))});
  }
  return out;
}

}  // namespace

std::string render_markdown(const Comparison& c) {
  std::string out = "# evo: stage-by-stage comparison\n\n";
  out += fmt::format(
      "Generated by `evo compare` from {} run records ({}) and {} peer records ({}). "
      "Regenerate it with `evo compare`; do not edit it by hand.\n\n",
      c.run_records, c.record_files.empty() ? "no files" : fmt::format("{}", fmt::join(c.record_files, ", ")),
      c.peer_records, c.peer_files.empty() ? "no files" : fmt::format("{}", fmt::join(c.peer_files, ", ")));
  out += fmt::format(
      "How to read it (docs/compare-and-gate.md has the details): times are medians per call with the L2 flushed; "
      "a stage's row is its rank-1 elite (lowest geomean median over the benchmark shapes). "
      "`×` is speed relative to the other (its time / this time; above 1 is faster); `Δ time` is the change of "
      "median time against the previous stage (negative is faster); geomeans run over the shapes both sides "
      "measured; `±` is the half-width of the {:.0f} % interval from both sides' sample spread.\n",
      c.thresholds.compare.confidence * 100);
  out += revoked_md(c);
  for (const auto& s : c.sections) out += "\n" + section_md(s);
  return out;
}

}  // namespace evo
