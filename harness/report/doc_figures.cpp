#include "report/doc_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "core/errors.h"
#include "core/shape.h"
#include "report/compare_parts.h"

namespace evo {

namespace {

constexpr const char* kOpen = "<!-- evo:figures ";
constexpr const char* kClose = "<!-- /evo:figures -->";

// The same number formats as COMPARE.md, so a figure reads the same in both places.
using compare_parts::signed_percent;
using compare_parts::us_text;

std::string times(double ratio) { return compare_parts::ratio_text(ratio) + "×"; }

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t at = 0;
  for (size_t comma = text.find(','); comma != std::string::npos; at = comma + 1, comma = text.find(',', at))
    out.push_back(text.substr(at, comma - at));
  out.push_back(text.substr(at));
  return out;
}

// What a figure reads: its arguments, each checked against what the figure takes.
class Args {
 public:
  Args(const std::string& figure, const FigureArgs& args, std::set<std::string> known) : figure_(figure), args_(args) {
    for (const auto& [k, v] : args)
      if (!known.count(k)) throw usage_error(fmt::format("figure '{}' takes no argument '{}'", figure, k));
  }
  std::string get(const std::string& key, const std::string& fallback = "") const {
    auto it = args_.find(key);
    return it == args_.end() ? fallback : it->second;
  }
  std::string need(const std::string& key) const {
    const std::string v = get(key);
    if (v.empty()) throw usage_error(fmt::format("figure '{}' needs {}=...", figure_, key));
    return v;
  }
  int number(const std::string& key, int fallback) const {
    const std::string v = get(key);
    if (v.empty()) return fallback;
    try {
      return std::stoi(v);
    } catch (const std::exception&) {
      throw usage_error(fmt::format("figure '{}': {}={} is not a number", figure_, key, v));
    }
  }
  const std::string& figure() const { return figure_; }

 private:
  std::string figure_;
  FigureArgs args_;
};

// The GPU a figure is about: gpu=..., or the only one the records have.
std::string figure_gpu(const Comparison& c, const Args& a) {
  std::set<std::string> gpus;
  for (const auto& s : c.sections) gpus.insert(s.gpu);
  const std::string gpu = a.get("gpu");
  if (!gpu.empty()) {
    if (!gpus.count(gpu)) throw usage_error(fmt::format("figure '{}': no records of GPU '{}'", a.figure(), gpu));
    return gpu;
  }
  if (gpus.size() != 1)
    throw usage_error(fmt::format("figure '{}' needs gpu=... (the records have {} GPUs)", a.figure(), gpus.size()));
  return *gpus.begin();
}

// The sections of a figure, in the order tasks=... names them, then (unless `only_listed`) every
// other task of the GPU in the report's order, so a new task shows up without editing the doc.
std::vector<const CompareSection*> figure_sections(const Comparison& c, const Args& a, bool only_listed) {
  const std::string gpu = figure_gpu(c, a);
  std::vector<const CompareSection*> out;
  auto find = [&](const std::string& task) -> const CompareSection* {
    for (const auto& s : c.sections)
      if (s.gpu == gpu && s.task == task) return &s;
    return nullptr;
  };
  for (const std::string& task : split_list(a.get("tasks", a.get("task")))) {
    const CompareSection* s = find(task);
    if (!s) throw usage_error(fmt::format("figure '{}': no records of task '{}' on {}", a.figure(), task, gpu));
    out.push_back(s);
  }
  if (only_listed && !out.empty()) return out;
  for (const auto& s : c.sections)
    if (s.gpu == gpu && std::find(out.begin(), out.end(), &s) == out.end()) out.push_back(&s);
  return out;
}

// The stage row a figure names (stage=N), or the section's last stage.
const StageRow& figure_stage(const CompareSection& s, const Args& a) {
  if (s.stages.empty())
    throw usage_error(fmt::format("figure '{}': {} has no stage with an elite", a.figure(), s.task));
  const int stage = a.number("stage", s.stages.back().stage);
  for (const auto& row : s.stages)
    if (row.stage == stage) return row;
  throw usage_error(fmt::format("figure '{}': {} has no elite of stage {}", a.figure(), s.task, stage));
}

std::string peer_ratio_cell(const StageRow& row, const std::string& peer) {
  auto it = row.speedup_vs_peer.find(peer);
  return it == row.speedup_vs_peer.end() ? "-" : times(it->second.ratio);
}

// | task | stages | fastest stage | × first stage (fitness) | × each peer |, for each task's fastest
// stage: the last stage is not always the fastest (a new technique can lose), and a summary
// that quoted the last would understate where the project stands.
std::string summary_table(const Comparison& c, const Args& a) {
  const std::vector<std::string> peers = split_list(a.get("peers", "pytorch-sdpa-flash,pytorch-sdpa-cudnn"));
  std::string head = "| task | stages | fastest | × first stage (fitness) |", rule = "|---|---|---|---:|";
  for (const auto& p : peers) head += " fastest × " + compare_parts::peer_label(p) + " |", rule += "---:|";
  std::string out = "\n" + head + "\n" + rule + "\n";
  for (const CompareSection* s : figure_sections(c, a, false)) {
    if (s->stages.empty()) continue;
    const StageRow& top =
        *std::min_element(s->stages.begin(), s->stages.end(),
                          [](const StageRow& x, const StageRow& y) { return x.geomean_p50_us < y.geomean_p50_us; });
    out += fmt::format("| {} | {} → {} | {} | {} |", s->task, s->stages.front().stage, s->stages.back().stage,
                       top.stage, top.speedup_vs_base ? times(top.speedup_vs_base->ratio) : "-");
    for (const auto& p : peers) out += " " + peer_ratio_cell(top, p) + " |";
    out += "\n";
  }
  return out;
}

// "3 wmma-pv" from a variant id "3-wmma-pv/mma_pv".
std::string stage_label(const std::string& variant) {
  const std::string folder = variant.substr(0, variant.find('/'));
  const size_t dash = folder.find('-');
  return dash == std::string::npos ? folder : folder.substr(0, dash) + " " + folder.substr(dash + 1);
}

// | stage | one column per task: the rank-1 elite's fitness (µs) and its change against the stage before |
std::string fitness_table(const Comparison& c, const Args& a) {
  const auto sections = figure_sections(c, a, false);
  std::map<int, std::string> labels;
  for (const CompareSection* s : sections)
    for (const auto& row : s->stages) labels.emplace(row.stage, stage_label(row.variant));
  std::string out = "\n| stage |", rule = "|---|";
  for (const CompareSection* s : sections) out += " " + s->task + " |", rule += "---:|";
  out += "\n" + rule + "\n";
  for (const auto& [stage_key, label] : labels) {
    // A copy: clang 14 (the fuzz build) cannot capture a structured binding in a lambda.
    const int stage = stage_key;
    out += "| " + label + " |";
    for (const CompareSection* s : sections) {
      auto row = std::find_if(s->stages.begin(), s->stages.end(), [&](const StageRow& r) { return r.stage == stage; });
      if (row == s->stages.end()) {
        out += " - |";
        continue;
      }
      out += " " + us_text(row->geomean_p50_us);
      if (row->time_vs_prev) out += " (" + signed_percent(row->time_vs_prev->ratio - 1) + ")";
      out += " |";
    }
    out += "\n";
  }
  return out;
}

// Sequence length of the queries from a recorded shape's dims. Records hold explicit sizes, so
// the head dim (what a named set's "D" and "H" stand for) plays no part; 64 keeps "H" defined.
int seq_q_of(const std::string& dims) { return parse_shape(dims, 64).seq_q; }

// One value of a stage's row (or of one of its shapes): what=us (the median, µs), tflops, prev
// (change of time against the stage before, %), prev_x (× the stage before), base (× the first
// stage), or a peer's name (× that peer).
std::optional<double> value_of(const std::string& what, double us, const std::optional<double>& tflops,
                               const std::optional<RatioInterval>& prev, const std::optional<RatioInterval>& base,
                               const std::map<std::string, RatioInterval>& peers) {
  if (what == "us") return us;
  if (what == "tflops") return tflops;
  if (what == "prev") return prev ? std::optional<double>(prev->ratio - 1) : std::nullopt;
  if (what == "prev_x") return prev ? std::optional<double>(1 / prev->ratio) : std::nullopt;
  if (what == "base") return base ? std::optional<double>(base->ratio) : std::nullopt;
  auto it = peers.find(what);
  return it == peers.end() ? std::nullopt : std::optional<double>(it->second.ratio);
}

std::string value_text(const std::string& what, double v) {
  if (what == "us") return us_text(v);
  if (what == "tflops") return fmt::format("{:.0f}", v);
  if (what == "prev") {
    const std::string pct = signed_percent(v);
    return pct.substr(0, pct.size() - 2);  // the unit follows the range, once
  }
  return compare_parts::ratio_text(v);
}

std::string unit_of(const std::string& what) {
  return what == "tflops" ? "" : what == "us" ? " µs" : what == "prev" ? " %" : "×";
}

// Values in order as "a / b / c", or their range "lo–hi" (one number when they agree), with
// the unit of `what`.
std::string values_text(const std::string& what, std::vector<double> values, bool as_list) {
  std::string out;
  if (as_list) {
    for (double v : values) out += (out.empty() ? "" : " / ") + value_text(what, v);
    return out + unit_of(what);
  }
  std::sort(values.begin(), values.end());
  const std::string lo = value_text(what, values.front()), hi = value_text(what, values.back());
  return (lo == hi ? lo : what == "prev" ? lo + " to " + hi : lo + "–" + hi) + unit_of(what);
}

// Per-shape figures of the named tasks' stage (default: each one's last): `what` (default
// tflops) over the shapes with seq_q >= min_seq, or shape=...; list=1 for every value in shape
// order, else their range.
std::string shapes_figure(const Comparison& c, const Args& a) {
  const std::string what = a.get("what", "tflops"), shape = a.get("shape");
  const int min_seq = a.number("min_seq", 0);
  std::vector<double> values;
  for (const CompareSection* s : figure_sections(c, a, true))
    for (const auto& sh : figure_stage(*s, a).shapes) {
      if ((!shape.empty() && sh.figures.shape != shape) || seq_q_of(sh.figures.shape) < min_seq) continue;
      const ShapeFigures& f = sh.figures;
      if (auto v =
              value_of(what, f.sample.median_us, f.tflops, sh.time_vs_prev, sh.speedup_vs_base, sh.speedup_vs_peer))
        values.push_back(*v);
    }
  if (values.empty()) throw usage_error(fmt::format("figure 'shapes': no shape has what={} there", what));
  return values_text(what, values, a.get("list") == "1");
}

// A stage's geomean figure, of one task or the range over several: no what (its fitness in µs),
// or what= as for 'shapes'.
std::string stage_figure(const Comparison& c, const Args& a) {
  const auto sections = figure_sections(c, a, true);
  const std::string what = a.get("what");
  if (what.empty()) {
    if (sections.size() != 1) throw usage_error("figure 'stage' without what= needs task=... (one task)");
    return us_text(figure_stage(*sections.front(), a).geomean_p50_us);
  }
  std::vector<double> values;
  for (const CompareSection* s : sections) {
    const StageRow& row = figure_stage(*s, a);
    auto v =
        value_of(what, row.geomean_p50_us, std::nullopt, row.time_vs_prev, row.speedup_vs_base, row.speedup_vs_peer);
    if (!v) throw usage_error(fmt::format("figure 'stage': stage {} of {} has no what={}", row.stage, s->task, what));
    values.push_back(*v);
  }
  return values_text(what, values, a.get("list") == "1");
}

// What a stage's rank-1 elite of one task is: what=params (default), technique (its nonzero
// SASS technique counts) or variant.
std::string elite_figure(const Comparison& c, const Args& a) {
  const auto sections = figure_sections(c, a, true);
  if (sections.size() != 1) throw usage_error("figure 'elite' needs task=... (one task)");
  const StageRow& row = figure_stage(*sections.front(), a);
  const std::string what = a.get("what", "params");
  if (what == "params") return compare_parts::params_text(row.params);
  if (what == "variant") return row.variant;
  if (what == "technique") return row.technique.empty() ? "-" : row.technique;
  throw usage_error("figure 'elite': what=" + what + " is not params, technique or variant");
}

struct Mark {
  std::string name;
  FigureArgs args;
  size_t open_end = 0, close_begin = 0;
};

// The mark at `at` (the position of kOpen): its name, arguments, and where its body ends.
Mark parse_mark(const std::string& text, size_t at, const std::string& where) {
  const size_t end = text.find("-->", at);
  if (end == std::string::npos) throw usage_error(where + ": an evo:figures mark without its closing \"-->\"");
  std::vector<std::string> words;
  std::string word;
  for (char ch : text.substr(at + std::string(kOpen).size(), end - at - std::string(kOpen).size()) + " ") {
    if (ch != ' ' && ch != '\n')
      word += ch;
    else if (!word.empty())
      words.push_back(word), word.clear();
  }
  if (words.empty()) throw usage_error(where + ": an evo:figures mark names no figure");
  Mark m;
  m.name = words[0];
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == std::string::npos) throw usage_error(where + ": '" + words[i] + "' is not key=value");
    m.args[words[i].substr(0, eq)] = words[i].substr(eq + 1);
  }
  m.open_end = end + 3;
  m.close_begin = text.find(kClose, m.open_end);
  const size_t next_open = text.find(kOpen, m.open_end);
  if (m.close_begin == std::string::npos || next_open < m.close_begin)
    throw usage_error(where + ": figure '" + m.name + "' has no " + kClose + " before the next mark");
  return m;
}

}  // namespace

std::string render_figure(const Comparison& c, const std::string& name, const FigureArgs& args) {
  if (name == "summary") return summary_table(c, Args(name, args, {"gpu", "tasks", "peers"}));
  if (name == "fitness-table") return fitness_table(c, Args(name, args, {"gpu", "tasks"}));
  if (name == "shapes")
    return shapes_figure(c, Args(name, args, {"gpu", "tasks", "task", "stage", "what", "min_seq", "shape", "list"}));
  if (name == "stage") return stage_figure(c, Args(name, args, {"gpu", "tasks", "task", "stage", "what", "list"}));
  if (name == "elite") return elite_figure(c, Args(name, args, {"gpu", "task", "stage", "what"}));
  throw usage_error("unknown figure '" + name + "' (summary, fitness-table, stage, shapes, elite)");
}

// A mark quoted in the doc (after a backtick, or inside a ``` fence) is an example, not a mark.
bool quoted(const std::string& text, size_t at) {
  if (at > 0 && text[at - 1] == '`') return true;
  size_t fences = 0;
  for (size_t f = text.find("```"); f != std::string::npos && f < at; f = text.find("```", f + 3)) ++fences;
  return fences % 2 == 1;
}

FilledDoc fill_figures(const std::string& text, const Comparison& c, const std::string& origin) {
  FilledDoc out;
  size_t copied = 0;
  for (size_t at = text.find(kOpen); at != std::string::npos; at = text.find(kOpen, at + 1)) {
    if (at < copied || quoted(text, at)) continue;
    const std::string where = fmt::format("{}:{}", origin, 1 + std::count(text.begin(), text.begin() + long(at), '\n'));
    const Mark m = parse_mark(text, at, where);
    std::string body;
    try {
      body = render_figure(c, m.name, m.args);
    } catch (const EvoError& e) {
      throw usage_error(where + ": " + e.what());
    }
    out.text += text.substr(copied, m.open_end - copied) + body + kClose;
    copied = m.close_begin + std::string(kClose).size();
    ++out.figures;
  }
  out.text += text.substr(copied);
  return out;
}

}  // namespace evo
