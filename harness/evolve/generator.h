// Generators propose candidates for `evo evolve`. The tunable generators run a search strategy
// over the stage's variants' tunables (search/tunable_generator.h, search/strategy.h); an
// external one is any program that reads the request JSON on stdin and writes
// {"candidates": [{"source", "params", "parent", "rationale"}]} on stdout (docs/evolve.md).
#pragma once
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/proposal.h"

namespace evo {

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
