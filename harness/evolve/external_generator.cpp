#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "core/utf8.h"
#include "evolve/generator.h"
#include "evolve/generator_process.h"

namespace evo {

using nlohmann::json;

namespace {

constexpr const char* kAnswerShape =
    "{\"candidates\": [{\"source\", \"params\" (optional), \"parent\", \"rationale\"}]}";

// The start of a text as one printable line (for messages about it).
std::string preview(const std::string& s) {
  std::string p(utf8_prefix(s, 80));
  for (char& c : p)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  return p + (s.size() > p.size() ? "…" : "");
}

// "params": {"NAME": integer, ...}: the tunables the candidate runs with (checked against its
// front matter later, where the source is parsed). A reason when malformed.
std::optional<std::string> read_params(const json& c, Proposal& p) {
  if (!c.contains("params") || c["params"].is_null()) return std::nullopt;
  if (!c["params"].is_object()) return "\"params\" must be an object {\"NAME\": integer}";
  for (const auto& [name, value] : c["params"].items()) {
    if (!value.is_number_integer()) return fmt::format("params.{}: not an integer", preview(name));
    p.params.emplace_back(name, value.get<long>());
  }
  p.params_given = true;
  return std::nullopt;
}

// One entry of "candidates": a proposal, or a line in `rejected` saying why not.
void read_candidate(const json& c, size_t i, const ExternalLimits& limits, GeneratorReply& r) {
  const std::string where = fmt::format("candidate {}", i);
  if (!c.is_object() || !c.contains("source") || !c["source"].is_string() || c["source"].get<std::string>().empty()) {
    r.rejected.push_back(where + ": no \"source\" string");
    return;
  }
  const std::string& source = c["source"].get_ref<const std::string&>();
  if (source.size() > limits.max_source_bytes) {
    r.rejected.push_back(
        fmt::format("{}: source of {} bytes is over the {}-byte limit", where, source.size(), limits.max_source_bytes));
    return;
  }
  Proposal p;
  if (auto why = read_params(c, p)) {
    r.rejected.push_back(where + ": " + *why);
    return;
  }
  p.source = source;
  if (c.contains("parent") && c["parent"].is_string()) {
    const std::string& parent = c["parent"].get_ref<const std::string&>();
    if (parent.size() <= kMaxParentBytes)
      p.parent = parent;
    else
      r.rejected.push_back(fmt::format("{}: parent of {} bytes is over the {}-byte limit: kept without a parent", where,
                                       parent.size(), kMaxParentBytes));
  }
  if (c.contains("rationale") && c["rationale"].is_string())
    p.rationale = utf8_prefix(c["rationale"].get_ref<const std::string&>(), kMaxRationaleBytes);
  r.proposals.push_back(std::move(p));
}

}  // namespace

GeneratorReply parse_generator_output(const std::string& bytes, const ExternalLimits& limits) {
  GeneratorReply r;
  // Bytes, not text: an invalid sequence becomes U+FFFD here, so every string below is UTF-8.
  const std::string out = valid_utf8(bytes);
  r.raw = utf8_prefix(out, kMaxRawBytes);
  json j;
  try {
    j = json::parse(out);
  } catch (const json::exception&) {
    r.error = fmt::format("the generator's stdout is not JSON (starts with \"{}\"); it must print {}", preview(out),
                          kAnswerShape);
    return r;
  }
  if (!j.is_object() || !j.contains("candidates") || !j["candidates"].is_array()) {
    r.error = fmt::format("the generator's JSON has no \"candidates\" list: it must print {}", kAnswerShape);
    if (j.is_object() && j.contains("error") && j["error"].is_string())
      r.error += "; it said: " + preview(j["error"].get<std::string>());
    return r;
  }
  const auto& cands = j["candidates"];
  for (size_t i = 0; i < cands.size() && i < limits.max_candidates; ++i) read_candidate(cands[i], i, limits, r);
  if (cands.size() > limits.max_candidates)
    r.rejected.push_back(fmt::format("candidates {} to {}: over the {} wanted (--population), dropped",
                                     limits.max_candidates, cands.size() - 1, limits.max_candidates));
  if (j.contains("notes") && j["notes"].is_string() && r.proposals.empty())
    r.error = "the generator proposed nothing: " + preview(j["notes"].get<std::string>());
  return r;
}

GeneratorReply ask_external(const std::string& command, const json& request, const ExternalLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  GeneratorProcessLimits pl;
  pl.timeout = limits.timeout;
  pl.max_stdout_bytes = limits.max_output_bytes;
  const GeneratorProcess run =
      run_generator_process(command, request.dump(1, ' ', false, json::error_handler_t::replace), pl);
  const std::string last_words = stderr_end(run.err_tail);
  GeneratorReply r;
  if (!run.runner_error.empty()) {
    r.error = run.runner_error;
  } else if (run.status.timed_out) {
    r.error = fmt::format("the generator did not answer within {:.0f} s and was killed (raise --generator-timeout)",
                          limits.timeout.count() / 1000.0);
  } else if (run.overflow) {
    r.error = fmt::format("the generator wrote more than {} bytes on stdout and was killed; output dropped",
                          limits.max_output_bytes);
  } else if (!run.status.exited || run.status.code != 0) {
    r.error = fmt::format("the generator ended with {}{}", run.status.describe(),
                          last_words.empty() ? "" : "; its stderr ends: " + last_words);
  } else {
    r = parse_generator_output(run.out, limits);
  }
  if (r.raw.empty()) r.raw = utf8_prefix(valid_utf8(run.out), kMaxRawBytes);
  r.stray_processes = run.stray_processes;
  if (run.stray_processes > 0)
    r.rejected.push_back(
        fmt::format("the generator left {} process(es) running after it ended: killed", run.stray_processes));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace evo
