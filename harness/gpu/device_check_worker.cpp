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

ProblemProbes side_effect_probes(const DeviceChecker& checker, const Problem& p) {
  ProblemProbes probes;
  // Only where O has bytes outside its elements: a dense O's buffer is its elements.
  probes.gaps = [&checker, &p] { return p.o_has_gaps() ? checker.outside_elements(p) : 0; };
  probes.split = [&p] { return p.workspace.bytes > 0; };
  probes.counters_zero = [&checker, &p] { return checker.counters_zero(p); };
  probes.workspace = [&checker, &p] { return checker.hash(p.workspace); };
  return probes;
}

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
  // O's gaps, the tile counters, the repeat launch's workspace (gpu/gate_side_effects.h; run_gate
  // does the same). Each probe waits for the launch on this stream.
  std::vector<ProblemProbes> probes;
  for (const Problem* p : problems) probes.push_back(side_effect_probes(checker, *p));
  const auto before = input_hashes();
  GateSideEffects effects(std::move(probes));
  launch_candidate(LaunchKind::gate_first);
  const uint64_t first = output_hash();
  effects.check_gaps();  // the next launch's pre-fill rewrites O's elements, not its gaps
  effects.after_launch();
  launch_candidate(LaunchKind::gate_second);  // another pre-fill, the workspace the first left
  const uint64_t second = output_hash();
  // Nothing of the candidate may still run when the inputs are re-hashed and the reference
  // computed from them (a grid on another stream, a child grid): wait for the whole context.
  check(cu().cuCtxSynchronize(), "evo_attn_fwd", "crash");
  effects.after_launch();
  const bool inputs_intact = input_hashes() == before;
  bool guards_intact = true;
  for (const Problem* p : problems) guards_intact = guards_intact && p->guards_intact();
  const auto t_ref = std::chrono::steady_clock::now();
  DeviceCheckFacts facts;
  for (const Problem* p : problems) add_facts(facts, checker.compare(*p, c.device_check.atol, c.device_check.rtol));
  effects.check_gaps();                                    // after the comparison has read O's elements
  guards_intact = guards_intact && effects.gaps_intact();  // a changed gap is a write outside the tensors
  facts.reference_s = since(t_ref);
  facts.seconds = since(t0);
  WorkerEvent done = case_done_event(c.id, "", first == second, inputs_intact, guards_intact,  // no output file
                                     effects.counters_zero(), effects.workspace_repeat_same());
  done.device_check = facts;
  return done;
}

}  // namespace evo
