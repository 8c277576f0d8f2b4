// From a generator to the candidates worth GPU time: the parents, the request, the proposals
// (capped at --population), their candidates, and the two novelty steps (evolve/novelty.h).
#include <fmt/format.h>

#include "core/sha256.h"
#include "evolve/loop_state.h"

namespace evo::evolve_loop {

namespace {

json params_object(const ParamSet& params) {
  json p = json::object();
  for (const auto& [k, v] : params) p[k] = v;
  return p;
}

}  // namespace

std::vector<Individual> Loop::parents() const {
  std::vector<json> own;
  for (const auto& r : mine)
    if (object_or_null(r, "fitness").is_object() && string_or(object_or_null(r, "evolve"), "phase") == "full")
      own.push_back(r);
  std::sort(own.begin(), own.end(), [](const json& a, const json& b) {
    return a["fitness"]["geomean_median_us"].get<double>() < b["fitness"]["geomean_median_us"].get<double>();
  });
  std::vector<json> ranked;
  if (island.active()) {
    ranked = island_ranked(baseline, own, migrants, o.population);
  } else {
    if (session) ranked = stage_elites(session->population(task, full.benchmark), stage.number);
    for (size_t i = 0; i < own.size() && i < o.population; ++i) ranked.push_back(own[i]);
  }
  std::vector<Individual> out;
  for (const auto& r : ranked)
    for (const auto& v : stage.variants)
      if (v.id == string_or(r, "variant")) {
        ParamSet p;
        for (auto& [k, x] : r["params"].items()) p.emplace_back(k, x.get<long>());
        out.push_back({&v, p, string_or(r, "candidate_id"), number_or(r["fitness"], "geomean_median_us", 0)});
      }
  return out;
}

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

std::vector<Proposal> Loop::propose(int gen, json& step) {
  if (!tunable) return ask_generator(gen, step);
  const auto ps = parents();
  json from = json::array();
  for (const auto& p : ps) from.push_back(p.candidate_id);
  step["request"] = {{"parents", from}, {"domain_configs", tunable->domain_size()}};
  auto props = tunable->propose(ps, o.population, gen, [&](const Variant& v, const ParamSet& p) {
    return novelty.seen(Candidate{&v, p, task, arch});
  });
  json resp = json::array();
  for (const auto& p : props)
    resp.push_back({{"variant", p.variant->id},
                    {"params", params_object(p.params)},
                    {"parent", p.parent},
                    {"rationale", p.rationale}});
  step["response"] = resp;
  return props;
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
                   history};
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
    feedback.push_back({{"outcome", "generator"}, {"reason", why}, {"generation", gen}});
  };
  if (!reply.error.empty()) fail(reply.error);
  for (const auto& r : reply.rejected) fail(r);
  return std::move(reply.proposals);
}

std::optional<Candidate> Loop::candidate_of(const Proposal& p, json& verdict) {
  if (p.variant) return Candidate{p.variant, p.params, task, arch};
  verdict["source_sha256"] = sha256_hex(p.source);
  try {
    const fs::path stored = store_source(ctx.root, o.results_dir, p.source);
    auto v = std::make_unique<Variant>(external_variant(p.source, stage, stored, "generated source", p.parent));
    // The answer's params, or the front matter's first values.
    ParamSet params = p.params_given ? answer_params(*v, p.params) : default_params(*v);
    external.push_back(std::move(v));
    return Candidate{external.back().get(), std::move(params), task, arch};
  } catch (const EvoError& e) {
    verdict["outcome"] = "input";
    verdict["reason"] = e.what();
    feedback.push_back({{"outcome", "input"},
                        {"reason", e.what()},
                        {"rationale", p.rationale},
                        {"source_sha256", verdict["source_sha256"]}});
    return std::nullopt;
  }
}

std::optional<Candidate> Loop::admit_proposal(const Proposal& p, json& verdict) {
  verdict = {{"parent", p.parent}, {"rationale", p.rationale}};
  auto c = candidate_of(p, verdict);
  if (!c) return std::nullopt;
  verdict["candidate_id"] = c->id();
  verdict["variant"] = c->variant->id;
  verdict["params"] = params_object(c->params);
  if (novelty.seen(*c)) {
    verdict["outcome"] = "duplicate";
    verdict["reason"] = "already evaluated (same normalized source and params): not compiled";
    feedback.push_back(verdict);
    return std::nullopt;
  }
  novelty.add(*c);
  return c;
}

// After the compile, before any GPU time: a candidate whose code an evaluated one ran already
// is a duplicate (evolve/novelty.h); the first of a run with new code claims it.
void Loop::drop_same_code(std::vector<std::optional<Candidate>>& cands, const std::vector<CompileResult>& compiled,
                          const std::vector<size_t>& compiled_at, std::vector<json>& early) {
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
    early[i]["outcome"] = "duplicate";
    early[i]["reason"] = fmt::format(
        "runs the same code as {} (its cubin but for debug info, launch geometry included): not evaluated", *same);
    early[i]["same_code_as"] = *same;
    feedback.push_back(early[i]);
    cands[i].reset();
  }
}

}  // namespace evo::evolve_loop
