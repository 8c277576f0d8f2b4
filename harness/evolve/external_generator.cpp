#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>

#include "core/paths.h"
#include "core/subprocess.h"
#include "evolve/generator.h"
#include "store/atomic_file.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string preview(const std::string& s) {
  std::string p = s.substr(0, 80);
  for (char& c : p)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = ' ';
  return p + (s.size() > 80 ? "…" : "");
}

}  // namespace

GeneratorReply parse_generator_output(const std::string& out, size_t max_source_bytes) {
  GeneratorReply r;
  r.raw = out.substr(0, 65536);
  json j;
  try {
    j = json::parse(out);
  } catch (const json::exception&) {
    r.error = fmt::format(
        "the generator's stdout is not JSON (starts with \"{}\"); it must print "
        "{{\"candidates\": [{{\"source\", \"parent\", \"rationale\"}}]}}",
        preview(out));
    return r;
  }
  if (!j.is_object() || !j.contains("candidates") || !j["candidates"].is_array()) {
    r.error =
        "the generator's JSON has no \"candidates\" list: it must print {\"candidates\": [{\"source\", \"parent\", "
        "\"rationale\"}]}";
    if (j.is_object() && j.contains("error") && j["error"].is_string())
      r.error += "; it said: " + preview(j["error"].get<std::string>());
    return r;
  }
  size_t i = 0;
  for (const auto& c : j["candidates"]) {
    const std::string where = fmt::format("candidate {}", i++);
    if (!c.is_object() || !c.contains("source") || !c["source"].is_string() || c["source"].get<std::string>().empty()) {
      r.rejected.push_back(where + ": no \"source\" string");
      continue;
    }
    if (c["source"].get<std::string>().size() > max_source_bytes) {
      r.rejected.push_back(fmt::format("{}: source of {} bytes is over the {}-byte limit", where,
                                       c["source"].get<std::string>().size(), max_source_bytes));
      continue;
    }
    Proposal p;
    p.source = c["source"];
    p.parent = c.contains("parent") && c["parent"].is_string() ? c["parent"].get<std::string>() : "";
    p.rationale =
        c.contains("rationale") && c["rationale"].is_string() ? c["rationale"].get<std::string>().substr(0, 2000) : "";
    r.proposals.push_back(std::move(p));
  }
  if (j.contains("notes") && j["notes"].is_string() && r.proposals.empty())
    r.error = "the generator proposed nothing: " + preview(j["notes"].get<std::string>());
  return r;
}

GeneratorReply ask_external(const std::string& command, const json& request, const ExternalLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path req =
      fs::temp_directory_path() /
      fmt::format("evo-request-{}-{}.json", ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  const fs::path err = fs::path(req.string() + ".stderr"), out = fs::path(req.string() + ".stdout");
  write_file_atomic(req, request.dump(1));
  // sh runs the command with the request as its stdin, stdout and stderr in files (the paths
  // travel as $1..$3, so nothing is quoted by hand), and a file-size limit: a generator that
  // writes without end gets SIGXFSZ instead of filling the disk or our memory.
  const size_t blocks = limits.max_output_bytes / 512 + 2;
  // The shell keeps the pipe evo watches open until the command ends (so the watchdog sees a
  // hang) and passes a killing signal on as its own.
  const std::string script = fmt::format(
      "exec 0<\"$1\" 2>\"$2\"; ulimit -f {}; {{ {}\n}} >\"$3\"; rc=$?; "
      "if [ $rc -gt 128 ]; then trap - $((rc - 128)); kill -$((rc - 128)) $$; fi; exit $rc",
      blocks, command);
  RunResult run = run_with_timeout({"/bin/sh", "-c", script, "evo-generator", req.string(), err.string(), out.string()},
                                   limits.timeout);
  auto tail_of = [](const fs::path& f, size_t n) {
    if (!fs::exists(f)) return std::string();
    const std::string e = read_file(f);
    return e.size() > n ? e.substr(e.size() - n) : e;
  };
  const std::string last_words = preview(tail_of(err, 200));
  const size_t out_size = fs::exists(out) ? size_t(fs::file_size(out)) : 0;
  run.out = out_size <= limits.max_output_bytes ? tail_of(out, limits.max_output_bytes) : "";
  std::error_code ec;
  for (const auto& f : {req, err, out}) fs::remove(f, ec);
  GeneratorReply r;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (run.status.timed_out) {
    r.error = fmt::format("the generator did not answer within {:.0f} s and was killed (raise --generator-timeout)",
                          limits.timeout.count() / 1000.0);
  } else if (out_size > limits.max_output_bytes || run.status.signal == SIGXFSZ) {
    r.error = fmt::format("the generator wrote more than {} bytes on stdout; output dropped", limits.max_output_bytes);
  } else if (!run.status.exited || run.status.code != 0) {
    r.error = fmt::format("the generator ended with {}{}", run.status.describe(),
                          last_words.empty() ? "" : "; its stderr ends: " + last_words);
  } else {
    r = parse_generator_output(run.out, limits.max_source_bytes);
  }
  r.seconds = secs;
  if (r.raw.empty()) r.raw = run.out.substr(0, 65536);
  return r;
}

}  // namespace evo
