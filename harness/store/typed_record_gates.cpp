// The record's gates part: each gate's verdict and checked cases, the sampled gate's summary and
// the compute-sanitizer report (docs/records.md). Split from store/typed_record.cpp by job.
#include "store/typed_record_io.h"

namespace evo::record_io {

using nlohmann::json;

namespace {

json write_check(const GateCheck& c) {
  json j = c.extra;
  put(j, "case", c.case_id);
  put(j, "shape", c.shape);
  put(j, "inputs", c.inputs);
  put(j, "seed", c.seed);
  put(j, "pass", c.pass);
  put(j, "inputs_intact", c.inputs_intact);
  put(j, "guards_intact", c.guards_intact);
  put(j, "deterministic", c.deterministic);
  put(j, "max_abs", c.max_abs);
  put(j, "rel_l2", c.rel_l2);
  put(j, "us", c.us);
  return j;
}

RecordGate read_gate(json j) {
  RecordGate g;
  take(j, "pass", g.pass);
  take(j, "reason", g.reason);
  take_list(j, "checks", g.checks, read_check);
  g.extra = std::move(j);
  return g;
}

json write_gate(const RecordGate& g) {
  json j = g.extra;
  put(j, "pass", g.pass);
  put(j, "reason", g.reason);
  put_list(j, "checks", g.checks, write_check);
  return j;
}

SanitizerToolRun read_tool_run(json j) {
  SanitizerToolRun t;
  take(j, "tool", t.tool);
  take(j, "pass", t.pass);
  take(j, "errors", t.errors);
  take(j, "hazards", t.hazards);
  take(j, "summary", t.summary);
  take(j, "seconds", t.seconds);
  take(j, "exit", t.exit);
  take(j, "first", t.first);
  take(j, "log", t.log);
  t.extra = std::move(j);
  return t;
}

json write_tool_run(const SanitizerToolRun& t) {
  json j = t.extra;
  put(j, "tool", t.tool);
  put(j, "pass", t.pass);
  put(j, "errors", t.errors);
  put(j, "hazards", t.hazards);
  put(j, "summary", t.summary);
  put(j, "seconds", t.seconds);
  put(j, "exit", t.exit);
  put(j, "first", t.first);
  put(j, "log", t.log);
  return j;
}

SanitizerReport read_sanitizer(json j) {
  SanitizerReport s;
  take(j, "pass", s.pass);
  take_strings(j, "cases", s.cases);
  take_list(j, "tools", s.tools, read_tool_run);
  s.extra = std::move(j);
  return s;
}

json write_sanitizer(const SanitizerReport& s) {
  json j = s.extra;
  put(j, "pass", s.pass);
  put(j, "cases", s.cases);
  put_list(j, "tools", s.tools, write_tool_run);
  return j;
}

SampledGateSummary read_sampled(json j) {
  SampledGateSummary s;
  take(j, "seed", s.seed);
  take(j, "cases", s.cases);
  take(j, "run", s.run);
  take(j, "passed", s.passed);
  s.extra = std::move(j);
  return s;
}

json write_sampled(const SampledGateSummary& s) {
  json j = s.extra;
  put(j, "seed", s.seed);
  put(j, "cases", s.cases);
  put(j, "run", s.run);
  put(j, "passed", s.passed);
  return j;
}

}  // namespace

GateCheck read_check(json j) {
  GateCheck c;
  take(j, "case", c.case_id);
  take(j, "shape", c.shape);
  take(j, "inputs", c.inputs);
  take(j, "seed", c.seed);
  take(j, "pass", c.pass);
  take(j, "inputs_intact", c.inputs_intact);
  take(j, "guards_intact", c.guards_intact);
  take(j, "deterministic", c.deterministic);
  take(j, "max_abs", c.max_abs);
  take(j, "rel_l2", c.rel_l2);
  take(j, "us", c.us);
  c.extra = std::move(j);
  return c;
}

RecordGates read_gates(json j) {
  RecordGates g;
  take_part(j, "resources", g.resources, read_gate);
  take_part(j, "correctness", g.correctness, read_gate);
  take_part(j, "determinism", g.determinism, read_gate);
  take_part(j, "post_timing", g.post_timing, read_gate);
  take_part(j, "deep", g.deep, read_gate);
  take_part(j, "sanitizer", g.sanitizer, read_sanitizer);
  take_part(j, "sampled", g.sampled, read_sampled);
  g.extra = std::move(j);
  return g;
}

json write_gates(const RecordGates& g) {
  json j = g.extra;
  if (g.resources) j["resources"] = write_gate(*g.resources);
  if (g.correctness) j["correctness"] = write_gate(*g.correctness);
  if (g.determinism) j["determinism"] = write_gate(*g.determinism);
  if (g.post_timing) j["post_timing"] = write_gate(*g.post_timing);
  if (g.deep) j["deep"] = write_gate(*g.deep);
  if (g.sanitizer) j["sanitizer"] = write_sanitizer(*g.sanitizer);
  if (g.sampled) j["sampled"] = write_sampled(*g.sampled);
  return j;
}

}  // namespace evo::record_io
