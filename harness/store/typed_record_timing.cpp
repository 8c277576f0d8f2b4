// The integrity part of a timing entry (docs/records.md, docs/safety.md "Timing integrity"): what
// was checked of the shape's timed samples and how. Split from store/typed_record.cpp by job.
#include "store/typed_record_io.h"

namespace evo::record_io {

using nlohmann::json;

namespace {

TimedFullCheck read_full_check(json j) {
  TimedFullCheck c;
  take(j, "sample", c.sample);
  take(j, "why", c.why);
  take(j, "inputs", c.inputs);
  take(j, "max_abs", c.max_abs);
  take(j, "rel_l2", c.rel_l2);
  take(j, "pass", c.pass);
  c.extra = std::move(j);
  return c;
}

json write_full_check(const TimedFullCheck& c) {
  json j = c.extra;
  put(j, "sample", c.sample);
  put(j, "why", c.why);
  put(j, "inputs", c.inputs);
  put(j, "max_abs", c.max_abs);
  put(j, "rel_l2", c.rel_l2);
  put(j, "pass", c.pass);
  return j;
}

RepeatProbes read_probes(json j) {
  RepeatProbes p;
  take(j, "n", p.n);
  take(j, "fresh_median_us", p.fresh_median_us);
  take(j, "repeat_median_us", p.repeat_median_us);
  take(j, "gain_us", p.gain_us);
  take(j, "limit_us", p.limit_us);
  take(j, "pass", p.pass);
  p.extra = std::move(j);
  return p;
}

json write_probes(const RepeatProbes& p) {
  json j = p.extra;
  put(j, "n", p.n);
  put(j, "fresh_median_us", p.fresh_median_us);
  put(j, "repeat_median_us", p.repeat_median_us);
  put(j, "gain_us", p.gain_us);
  put(j, "limit_us", p.limit_us);
  put(j, "pass", p.pass);
  return j;
}

}  // namespace

TimingIntegrity read_integrity(json j) {
  TimingIntegrity t;
  take(j, "fresh_inputs", t.fresh_inputs);
  take(j, "samples_verified", t.samples_verified);
  take(j, "rows_per_sample", t.rows_per_sample);
  take(j, "rows_checked", t.rows_checked);
  take(j, "rows_max_abs", t.rows_max_abs);
  take(j, "rows_rel_l2", t.rows_rel_l2);
  take_list(j, "full_checks", t.full_checks, read_full_check);
  take_part(j, "repeat_probes", t.repeat_probes, read_probes);
  take(j, "floor_us", t.floor_us);
  take(j, "inputs_intact", t.inputs_intact);
  take(j, "guards_intact", t.guards_intact);
  take(j, "pass", t.pass);
  take(j, "failure", t.failure);
  t.extra = std::move(j);
  return t;
}

json write_integrity(const TimingIntegrity& t) {
  json j = t.extra;
  put(j, "fresh_inputs", t.fresh_inputs);
  put(j, "samples_verified", t.samples_verified);
  put(j, "rows_per_sample", t.rows_per_sample);
  put(j, "rows_checked", t.rows_checked);
  put(j, "rows_max_abs", t.rows_max_abs);
  put(j, "rows_rel_l2", t.rows_rel_l2);
  put_list(j, "full_checks", t.full_checks, write_full_check);
  if (t.repeat_probes) j["repeat_probes"] = write_probes(*t.repeat_probes);
  put(j, "floor_us", t.floor_us);
  put(j, "inputs_intact", t.inputs_intact);
  put(j, "guards_intact", t.guards_intact);
  put(j, "pass", t.pass);
  put(j, "failure", t.failure);
  return j;
}

}  // namespace evo::record_io
