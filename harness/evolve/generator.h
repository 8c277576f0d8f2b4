// Generators propose candidates for `evo evolve`. The tunable generators run a search strategy
// over the stage's variants' tunables (evolve/strategy.h: builtin, random, genetic, exhaustive);
// an external one is any program that reads the request JSON on stdin and writes
// {"candidates": [{"source", "params", "parent", "rationale"}]} on stdout (docs/evolve.md).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "evolve/fidelity.h"
#include "evolve/search_space.h"

namespace evo {

struct Proposal {
  const Variant* variant = nullptr;  // builtin: the variant file whose tunables it sets
  ParamSet params;                   // the tunables (external: those the answer set, by name)
  std::string source;                // external: the whole kernel, front matter first
  std::string parent;                // candidate id(s) it came from ("a+b" for a crossover)
  std::string rationale;
  Fidelity fidelity = Fidelity::unset;  // tunable strategies: how to evaluate it (fidelity.h)
  bool params_given = false;            // external: the answer had "params" (else the front matter's first values)
};

class Strategy;
struct SearchState;

// A search strategy (evolve/strategy.h) over the stage's search space. Deterministic for a seed,
// a generation and what the run has evaluated.
class TunableGenerator {
 public:
  // `strategy`: builtin, random, genetic or exhaustive (a usage error otherwise).
  TunableGenerator(std::vector<SearchVariant> space, const std::string& strategy, uint64_t seed);
  ~TunableGenerator();
  // Up to `count` proposals, none repeating an evaluation of the run or one `state.known` names
  // (a promotion is the full evaluation of a configuration the run screened: not a repeat).
  // `state.space` is set to this generator's space.
  std::vector<Proposal> propose(SearchState state, size_t count) const;
  const std::vector<SearchVariant>& space() const { return space_; }
  size_t domain_size() const;    // every combination of the tunables
  size_t feasible_size() const;  // those the parsed EVO_CONSTRAINT rules allow

 private:
  std::vector<SearchVariant> space_;
  std::vector<Config> feasible_;  // into space_, read once
  std::unique_ptr<const Strategy> strategy_;
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
