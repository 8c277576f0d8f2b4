// An exec generator's turn (the request with where the run stands, the answer capped at
// --population) and the novelty of code after the compile (evolve/novelty.h).
#include <fmt/format.h>

#include "evolve/loop_state.h"

namespace evo::evolve_loop {

// Where the run stands, for the generator: what it is asked for and what is left.
json Loop::run_info(int gen) const {
  const bool budget = o.budget_gpu_s > 0;
  return {{"id", run_id},
          {"generation", gen},
          {"wanted", o.population},
          {"generations_left", o.generations - gen},
          {"budget_gpu_s", budget ? json(o.budget_gpu_s) : json(nullptr)},
          {"gpu_s_spent", gpu_s},
          {"gpu_s_left", budget ? json(std::max(0.0, o.budget_gpu_s - gpu_s)) : json(nullptr)}};
}

// An exec generator: the request on its stdin, at most --population proposals back.
std::vector<Proposal> Loop::ask_generator(int gen, json& step) {
  const std::vector<json> records = read_records(o.results_dir).records;
  // The newest few failures that are not records (generator errors, duplicates, compile-only runs).
  const size_t keep = std::min<size_t>(feedback.size(), 8);
  RequestInputs in{&ctx,
                   &stage,
                   task,
                   session ? session->gpu().key : "",
                   o.op,
                   &records,
                   std::vector<json>(feedback.end() - long(keep), feedback.end()),
                   8,
                   run_info(gen),
                   history,
                   bench};
  const json request = build_request(in);
  step["request"] = request;
  ExternalLimits lim;
  lim.timeout = std::chrono::milliseconds(long(o.generator_timeout_s) * 1000);
  lim.max_source_bytes = ctx.gates.limits.source_bytes;
  lim.max_candidates = o.population;
  GeneratorReply reply = ask_external(o.generator.substr(5), request, lim);
  step["response"] = {{"raw", reply.raw},
                      {"error", reply.error},
                      {"rejected", reply.rejected},
                      {"seconds", reply.seconds},
                      {"stray_processes", reply.stray_processes}};
  auto fail = [&](const std::string& why) {
    fmt::print(stderr, "evo evolve: generation {}: {}\n", gen, why);
    feedback.push_back({{"outcome", std::string(to_string(Outcome::generator))}, {"reason", why}, {"generation", gen}});
  };
  if (!reply.error.empty()) fail(reply.error);
  for (const auto& r : reply.rejected) fail(r);
  return std::move(reply.proposals);
}

// After the compile, before any GPU time: a candidate whose code an evaluated one ran already
// is a duplicate (evolve/novelty.h); the first of a run with new code claims it.
void Loop::drop_same_code(std::vector<std::optional<Candidate>>& cands, const std::vector<CompileResult>& compiled,
                          const std::vector<size_t>& compiled_at, std::vector<ProposalVerdict>& early) {
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i]) continue;
    const CompileResult& r = compiled[compiled_at[i]];
    if (!r.verdict.ok() || r.code_sha256.empty()) continue;
    const auto same = novelty.same_code(r.code_sha256);
    if (!same) {
      novelty.add_code(r.code_sha256, cands[i]->id());
      continue;
    }
    if (*same == cands[i]->id()) continue;
    early[i].outcome = Outcome::duplicate;
    early[i].reason = fmt::format(
        "runs the same code as {} (its cubin but for debug info, launch geometry included): not evaluated", *same);
    early[i].same_code_as = *same;
    feedback.push_back(write_verdict(early[i]));
    cands[i].reset();
  }
}

}  // namespace evo::evolve_loop
