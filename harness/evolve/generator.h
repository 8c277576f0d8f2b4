// Generators propose candidates for `evo evolve`. The builtin one mutates and crosses the
// tunables of the stage's variants (or, as the ablation baseline, samples them uniformly); an
// external one is any program that reads the request JSON on stdin and writes
// {"candidates": [{"source", "params", "parent", "rationale"}]} on stdout (docs/evolve.md).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "evolve/search_space.h"

namespace evo {

struct Proposal {
  const Variant* variant = nullptr;  // builtin: the variant file whose tunables it sets
  ParamSet params;                   // the tunables (external: those the answer set, by name)
  bool params_given = false;         // external: the answer had "params" (else the front matter's defaults)
  std::string source;                // external: the whole kernel, front matter first
  std::string parent;                // candidate id(s) it came from ("a+b" for a crossover)
  std::string rationale;
};

// A measured individual the builtin generator breeds from (best first).
struct Individual {
  const Variant* variant = nullptr;
  ParamSet params;
  std::string candidate_id;
  double fitness_us = 0;
};

// "builtin": mutation and crossover seeded from the elites; "random": uniform draws from the
// domain (the baseline evolution is compared against). Deterministic for a seed and generation.
class TunableGenerator {
 public:
  TunableGenerator(std::vector<SearchVariant> space, bool random_only, uint64_t seed);
  // Up to `count` proposals none of which `known` (variant, params) says was evaluated already.
  std::vector<Proposal> propose(const std::vector<Individual>& parents, size_t count, int generation,
                                const std::function<bool(const Variant&, const ParamSet&)>& known) const;
  size_t domain_size() const;

 private:
  const SearchVariant* space_of(const Variant* v) const;
  std::vector<SearchVariant> space_;
  bool random_only_;
  uint64_t seed_;
};

// What an external generator answered. Every string in it is valid UTF-8, whatever bytes the
// program wrote (invalid sequences become U+FFFD).
struct GeneratorReply {
  std::vector<Proposal> proposals;
  std::vector<std::string> rejected;  // one line per candidate entry that was unusable or dropped
  std::string error;                  // set when the generator failed as a whole
  std::string raw;                    // stdout, capped (for the trace)
  long stray_processes = 0;           // processes it left running, killed
  double seconds = 0;
};

struct ExternalLimits {
  std::chrono::milliseconds timeout{120000};
  size_t max_output_bytes = 4u << 20;
  size_t max_source_bytes = 262144;
  size_t max_candidates = 64;  // --population: entries past it are dropped with a note
};

// Fields of an answer kept at most this long (bytes): longer ones are cut at a character.
constexpr size_t kMaxRationaleBytes = 2000;
constexpr size_t kMaxParentBytes = 200;  // a longer parent is no candidate id: dropped with a note
constexpr size_t kMaxRawBytes = 65536;   // stdout kept in the trace

// Runs `command` through /bin/sh with the request on stdin (evolve/generator_process.h); never
// throws for what the program does (hang, crash, garbage, stray processes): that becomes `error`.
GeneratorReply ask_external(const std::string& command, const nlohmann::json& request, const ExternalLimits& limits);
// Parses a generator's stdout, bytes as they came (exposed for tests).
GeneratorReply parse_generator_output(const std::string& out, const ExternalLimits& limits);

}  // namespace evo
