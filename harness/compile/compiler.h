// Candidate -> cubin: source policy, final source with injected #defines and #line, NVRTC in
// a child process under time and memory limits, a content-addressed cache, the ptxas report
// and the resource gate. The outcome is always a value.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compile/cubin.h"
#include "compile/ptxas_report.h"
#include "compile/sass_technique.h"
#include "core/candidate.h"
#include "core/outcome.h"
#include "policy/config.h"

namespace evo {

struct CompileResult {
  Verdict verdict;
  std::string key;  // cache key (sha256)
  bool cached = false;
  double seconds = 0;  // wall time of this call (lookup or compile)
  std::vector<std::string> options;
  std::string log;  // sanitized, capped
  std::optional<PtxasResources> resources;
  std::optional<LaunchGeometry> launch;
  std::optional<TechniqueCounts> technique;  // SASS counts; set when the cubin could be disassembled
  std::string technique_error;               // why there are no counts (nvdisasm missing or failed)
  std::string code_sha256;                   // what runs: the cubin without its debug info (cubin.h)
  std::filesystem::path cubin_path;          // set when the cubin exists (outcome ok or resources)
};

class Compiler {
 public:
  Compiler(std::filesystem::path root, std::filesystem::path cache_dir, const GatesConfig& gates);
  CompileResult compile(const Candidate& c) const;
  const std::string& nvrtc_version() const { return nvrtc_version_; }
  // The source NVRTC sees: task and tunable #defines, then #line 1 "<file>", then the file.
  static std::string final_source(const Candidate& c);
  // Where the cache keeps an entry: <cache_dir>/nvrtc/<key[0:2]>/<key><extension> (".json" the
  // verdict, log and SASS counts, ".cubin" the cubin); empty unless key is 64 hex digits.
  static std::filesystem::path cache_entry_path(const std::filesystem::path& cache_dir, const std::string& key,
                                                const char* extension);
  // evo's own GPU support kernels (inputs, reference), through the same cache.
  std::filesystem::path compile_support(const std::string& arch) const;
  // The candidate's PTX for a virtual architecture ("compute_80"), through the same cache
  // (`evo export` ships it beside the cubin where the variant needs no sm_90a instruction).
  struct Ptx {
    Verdict verdict;
    std::string key, text;
  };
  Ptx compile_ptx(const Candidate& c, const std::string& virtual_arch) const;

 private:
  struct RawCompile {
    Verdict verdict;
    std::string key, log, cubin, cubin_sha256;
    bool cached = false;
    std::filesystem::path cubin_path;
    std::optional<TechniqueCounts> technique;  // counted by an earlier compile of this entry
  };
  RawCompile compile_cached(const std::string& source, const std::string& name,
                            const std::vector<std::string>& options) const;
  // The cache entry's verdict, log and cubin, or false when it is missing or damaged.
  static bool read_cache_entry(const std::filesystem::path& meta_path, const std::filesystem::path& cubin_path,
                               RawCompile& r);
  // NVRTC in its child process under the limits; fills log and verdict, the cubin on success.
  // False when the failure may be the machine's (timeout, memory): such results are not cached.
  bool compile_in_child(const std::string& source, const std::string& name, const std::vector<std::string>& options,
                        const std::filesystem::path& dir, RawCompile& r) const;
  std::vector<std::string> options(const std::string& arch) const;
  void check_technique(const Candidate& c, const RawCompile& raw, CompileResult& r) const;
  std::filesystem::path entry_path(const std::string& key, const char* extension) const {
    return cache_entry_path(cache_dir_, key, extension);
  }
  std::filesystem::path root_, cache_dir_;
  const GatesConfig& gates_;
  std::string nvrtc_version_, common_hash_;
  std::optional<std::filesystem::path> cuda_include_;
};

// Body of the hidden `evo __compile REQUEST OUT_PREFIX` child: reads a JSON request with the
// source, name and options, writes OUT_PREFIX.cubin and OUT_PREFIX.log, exits 0 on success,
// 10 when NVRTC rejected the source.
int compile_child_main(const std::string& request_path, const std::string& out_prefix);

}  // namespace evo
