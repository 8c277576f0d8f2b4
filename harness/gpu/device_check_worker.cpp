#include "gpu/device_check_worker.h"

#include <array>
#include <chrono>

#include "gpu/device_check.h"
#include "gpu/device_checker.h"

namespace evo {

using namespace worker_device;
using nlohmann::json;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

WorkerEvent check_on_device(const std::vector<Problem*>& problems, const CaseSpec& c, const Support& support,
                            const Task& task, CUstream stream,
                            const std::function<void(LaunchKind)>& launch_candidate) {
  const auto t0 = std::chrono::steady_clock::now();
  const DeviceChecker checker(support, task, stream);
  auto input_hashes = [&] {
    std::vector<std::array<uint64_t, 3>> h;
    for (const Problem* p : problems) h.push_back(checker.inputs(*p));
    return h;
  };
  auto output_hash = [&] {  // a sum of keyed hashes: any changed output word changes it
    uint64_t h = 0;
    for (const Problem* p : problems) h += checker.hash(p->o);
    return h;
  };
  // O's bytes outside its elements (gaps, slack, an offset view's lead), as the case's junk left
  // them: the same after every launch, or the kernel wrote memory that is not O's (hacker round 4,
  // o_zeroes_row_slack.cu). Only where O has such bytes: a dense O's buffer is its elements.
  auto gap_hashes = [&] {
    std::vector<uint64_t> h;
    for (const Problem* p : problems) h.push_back(p->o_has_gaps() ? checker.outside_elements(*p) : 0);
    return h;
  };
  // A split kernel's tile counters back at 0 after each launch (evo_launch.h): a count kept there
  // is state between calls (hacker round 7). Waits for the launch on this stream.
  bool split = false, counters_zero = true;
  auto check_counters = [&] {
    for (const Problem* p : problems) {
      split = split || p->workspace.bytes > 0;
      counters_zero = counters_zero && checker.counters_zero(*p);
    }
  };
  const auto before = input_hashes();
  const auto gaps = gap_hashes();
  launch_candidate(LaunchKind::gate_first);
  const uint64_t first = output_hash();
  bool gaps_intact = gap_hashes() == gaps;  // the next launch's pre-fill rewrites O's elements
  check_counters();
  launch_candidate(LaunchKind::gate_second);  // another pre-fill: an element left alone differs
  const uint64_t second = output_hash();
  // Nothing of the candidate may still run when the inputs are re-hashed and the reference
  // computed from them (a grid on another stream, a child grid): wait for the whole context.
  check(cu().cuCtxSynchronize(), "evo_attn_fwd", "crash");
  check_counters();
  const bool inputs_intact = input_hashes() == before;
  bool guards_intact = true;
  for (const Problem* p : problems) guards_intact = guards_intact && p->guards_intact();
  const auto t_ref = std::chrono::steady_clock::now();
  DeviceCheckFacts facts;
  for (const Problem* p : problems) add_facts(facts, checker.compare(*p, c.device_check.atol, c.device_check.rtol));
  gaps_intact = gaps_intact && gap_hashes() == gaps;  // after the comparison has read O's elements
  guards_intact = guards_intact && gaps_intact;       // a changed gap is a write outside the tensors
  facts.reference_s = since(t_ref);
  facts.seconds = since(t0);
  WorkerEvent done = case_done_event(c.id, "", first == second, inputs_intact, guards_intact,  // no output file
                                     split ? std::optional<bool>(counters_zero) : std::nullopt);
  done.device_check = facts;
  return done;
}

}  // namespace evo
