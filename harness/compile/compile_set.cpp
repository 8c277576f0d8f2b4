#include "compile/compile_set.h"

#include <future>
#include <thread>

#include "core/thread_pool.h"

namespace evo {

std::vector<CompileResult> compile_all(const Compiler& compiler, const std::vector<Candidate>& candidates,
                                       unsigned jobs) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  ThreadPool pool(jobs);
  std::vector<std::future<CompileResult>> futures;
  for (const auto& c : candidates) futures.push_back(pool.submit([&compiler, &c] { return compiler.compile(c); }));
  std::vector<CompileResult> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

}  // namespace evo
