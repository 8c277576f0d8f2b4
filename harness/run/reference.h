// Reference outputs (FP32, logical BHSD) for every case a plan needs, computed by evo's own
// kernel in a separate worker process and kept in the cache dir: they depend only on the
// support kernels, the task and the case, so every candidate and every run reuses them.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/worker_protocol.h"
#include "policy/config.h"

namespace evo {

class ReferenceStore {
 public:
  ReferenceStore(std::filesystem::path cache_dir, std::filesystem::path support_cubin, std::string support_hash,
                 Limits limits, int device);
  // Computes the missing ones; throws an environment error if the reference worker fails.
  void prepare(const Task& task, const std::vector<CaseSpec>& cases, const std::filesystem::path& work_dir);
  std::filesystem::path path_for(const Task& task, const CaseSpec& c) const;

 private:
  std::filesystem::path dir_, support_cubin_;
  std::string support_hash_;
  Limits limits_;
  int device_;
};

}  // namespace evo
