#include "compile/compiler.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "compile/nvrtc.h"
#include "compile/resources.h"
#include "compile/source_policy.h"
#include "core/errors.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "core/subprocess.h"
#include "store/atomic_file.h"
#include "support/support_source.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kCacheFormat = "evo-nvrtc-cache-1";

// The first line of the log that carries an error, without the file path noise.
std::string first_error_line(const std::string& log, const std::string& needle) {
  size_t pos = log.find(needle);
  if (pos == std::string::npos) return "";
  size_t begin = log.rfind('\n', pos);
  begin = begin == std::string::npos ? 0 : begin + 1;
  size_t end = log.find('\n', pos);
  return log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

Verdict classify_nvrtc_failure(const std::string& log) {
  // static_assert(cond, "evo:constraint ...") marks an invalid combination of tunables.
  // std::regex recurses per character: it only ever sees the first 4 KiB of a line.
  std::string line = first_error_line(log, "evo:constraint").substr(0, 4096);
  if (!line.empty()) {
    static const std::regex re(R"(^(.*?\(\d+\)): error: static assertion failed with \"evo:constraint (.*)\"$)");
    std::smatch m;
    if (std::regex_match(line, m, re)) return {Outcome::constraints, m[1].str() + ": " + m[2].str()};
    return {Outcome::constraints, line};
  }
  line = first_error_line(log, "error").substr(0, 4096);
  return {Outcome::compile, line.empty() ? "NVRTC failed without an error line" : line};
}

}  // namespace

Compiler::Compiler(fs::path root, fs::path cache_dir, const GatesConfig& gates)
    : root_(std::move(root)), cache_dir_(std::move(cache_dir)), gates_(gates) {
  nvrtc_version_ = evo::nvrtc_version();
  cuda_include_ = cuda_include_dir();
  if (!cuda_include_)
    throw environment_error("CUDA toolkit headers not found: set CUDA_HOME to the toolkit (with include/cuda_fp16.h)");
  // The device ABI headers are part of every compile: their content is part of every key.
  Sha256 h;
  std::vector<fs::path> headers;
  for (const auto& e : fs::directory_iterator(root_ / "variants" / "common")) headers.push_back(e.path());
  std::sort(headers.begin(), headers.end());
  for (const auto& p : headers) h.update(p.filename().string()).update(read_file(p));
  common_hash_ = h.hex();
}

std::vector<std::string> Compiler::options(const std::string& arch) const {
  std::vector<std::string> o{"--gpu-architecture=" + arch, "-std=c++17",
                             "-I" + (root_ / "variants" / "common").string(), "-I" + cuda_include_->string()};
  if (fs::exists(*cuda_include_ / "cccl")) o.push_back("-I" + (*cuda_include_ / "cccl").string());
  o.push_back("--ptxas-options=-v");
  o.push_back("-lineinfo");
  return o;
}

std::string Compiler::final_source(const Candidate& c) {
  std::string s = fmt::format("#define EVO_DTYPE {}\n#define EVO_HEAD_DIM {}\n#define EVO_CAUSAL {}\n",
                              c.task.dtype_code(), c.task.head_dim, c.task.causal ? 1 : 0);
  for (const auto& [name, value] : c.params) s += fmt::format("#define {} {}\n", name, value);
  s += fmt::format("#line 1 \"{}\"\n", c.variant->path.string());
  return s + c.variant->source;
}

fs::path Compiler::cache_entry_path(const fs::path& cache_dir, const std::string& key, const char* extension) {
  if (key.size() != 64 || key.find_first_not_of("0123456789abcdef") != std::string::npos) return {};
  return cache_dir / "nvrtc" / key.substr(0, 2) / (key + extension);
}

// SASS technique counts for every cubin that passed the resource gate (when nvdisasm exists);
// a stage that requires counts rejects a candidate without them as `technique`, and one whose
// SASS cannot be read at all stops the run (environment): it never passes unchecked. The counts
// go into the cache entry: nvdisasm costs ~0.15 s a cubin, most of a warm `evo compile`.
void Compiler::check_technique(const Candidate& c, const RawCompile& raw, CompileResult& r) const {
  if (raw.technique) {
    r.technique = raw.technique;
  } else if (auto sass = disassemble(r.cubin_path, &r.technique_error)) {
    r.technique = count_techniques(*sass);
    r.technique_error.clear();
    const fs::path meta_path = entry_path(r.key, ".json");
    json meta = fs::exists(meta_path) ? json::parse(read_file(meta_path), nullptr, false) : json();
    if (meta.is_object() && meta.value("cubin_sha256", "") == raw.cubin_sha256) {
      meta["technique"] = *r.technique;
      meta["technique_version"] = kTechniqueCountsVersion;
      write_file_atomic(meta_path, meta.dump());
    }
  }
  if (c.variant->requires_sass.empty()) return;
  if (!r.technique) throw environment_error(fmt::format("{}: {}", c.variant->id, r.technique_error));
  if (auto why = unmet_requirement(*r.technique, c.variant->requires_sass)) r.verdict = {Outcome::technique, *why};
}

CompileResult Compiler::compile(const Candidate& c) const {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  CompileResult r;
  r.options = options(c.arch);

  if (!c.variant->supports(c.task)) {
    r.verdict = {Outcome::unsupported, fmt::format("{} does not declare {} / head dim {}", c.variant->id,
                                                   c.task.dtype_name(), c.task.head_dim)};
    return r;
  }
  int arch_sm = std::stoi(c.arch.substr(3, 2));
  if (arch_sm < c.variant->min_sm) {
    r.verdict = {Outcome::unsupported,
                 fmt::format("needs sm_{} or newer; compiling for {}", c.variant->min_sm, c.arch)};
    return r;
  }
  if (auto why = check_source(c.variant->source, SourcePolicy{gates_.limits.source_bytes})) {
    r.verdict = {Outcome::compile, c.variant->path.string() + ": " + *why};
    return r;
  }

  const std::string source = final_source(c);
  // NVRTC looks for quoted includes next to the program name first; a name in a directory that
  // cannot exist stops a header dropped beside the variant from shadowing an allowed one.
  // Diagnostics still name the author's file through the #line in the source.
  RawCompile raw =
      compile_cached(source, "/nonexistent-evo-include-dir/" + c.variant->path.filename().string(), r.options);
  r.key = raw.key;
  r.cached = raw.cached;
  r.log = raw.log;
  r.verdict = raw.verdict;
  std::string cubin = raw.cubin;
  if (!raw.verdict.ok()) {
    r.seconds = elapsed();
    return r;
  }
  r.cubin_path = raw.cubin_path;

  {
    r.resources = parse_ptxas_report(r.log);
    std::string why;
    r.launch = read_launch_geometry(cubin, &why);
    if (!r.resources) {
      r.verdict = {Outcome::compile,
                   "no ptxas report for evo_attn_fwd: the entry point must be "
                   "extern \"C\" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams)"};
    } else if (!r.launch) {
      r.verdict = {Outcome::compile, why};
    } else if (auto bad = check_resources(*r.resources, *r.launch, gates_.caps(c.arch))) {
      r.verdict = {Outcome::resources, *bad};
    }
  }
  r.code_sha256 = code_identity(cubin);
  if (r.verdict.ok()) check_technique(c, raw, r);
  r.seconds = elapsed();
  return r;
}

bool Compiler::read_cache_entry(const fs::path& meta_path, const fs::path& cubin_path, RawCompile& r) {
  if (!fs::exists(meta_path)) return false;
  try {
    json meta = json::parse(read_file(meta_path));
    r.log = meta.at("log");
    if (meta.at("nvrtc_ok").get<bool>()) {
      r.cubin = read_file(cubin_path);
      r.cubin_sha256 = sha256_hex(r.cubin);
      if (r.cubin_sha256 != meta.at("cubin_sha256").get<std::string>()) throw std::runtime_error("cubin hash mismatch");
      r.cubin_path = cubin_path;
      if (meta.value("technique_version", 0) == kTechniqueCountsVersion && meta.contains("technique"))
        r.technique = meta["technique"].get<TechniqueCounts>();
    } else {
      r.verdict = classify_nvrtc_failure(r.log);
    }
    r.cached = true;
    return true;
  } catch (const std::exception&) {
    return false;  // a damaged entry is simply rebuilt
  }
}

bool Compiler::compile_in_child(const std::string& source, const std::string& name,
                                const std::vector<std::string>& options, const fs::path& dir, RawCompile& r) const {
  const std::string tag = fmt::format("{}.{}.{}", r.key.substr(0, 16), ::getpid(),
                                      std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000003);
  const fs::path req = dir / (tag + ".req.json"), out_prefix = dir / tag;
  fs::create_directories(dir);
  write_file_atomic(req, json{{"source", source}, {"name", name}, {"options", options}}.dump());
  auto run = run_with_timeout({evo_executable().string(), "__compile", req.string(), out_prefix.string()},
                              std::chrono::milliseconds(long(gates_.limits.compile_s * 1000)),
                              ResourceLimits{gates_.limits.compile_memory_mb, long(gates_.limits.compile_s) + 5});
  std::error_code ec;
  fs::remove(req, ec);
  const fs::path log_file = out_prefix.string() + ".log", out_cubin = out_prefix.string() + ".cubin";
  r.log = sanitize_log(fs::exists(log_file) ? read_file(log_file) : "", size_t(gates_.limits.log_bytes));
  fs::remove(log_file, ec);
  if (run.status.timed_out || run.status.signal == SIGXCPU) {
    fs::remove(out_cubin, ec);
    r.verdict = {Outcome::timeout,
                 fmt::format("NVRTC ran past {} s (gates.json limits.compile_s)", gates_.limits.compile_s)};
    return false;  // a timeout may depend on machine load
  }
  if (!run.status.exited || (run.status.code != 0 && run.status.code != 10)) {
    fs::remove(out_cubin, ec);
    r.verdict = {Outcome::compile, fmt::format("NVRTC process failed ({}; memory limit {} MB)", run.status.describe(),
                                               gates_.limits.compile_memory_mb)};
    return false;  // may be the machine (memory pressure)
  }
  if (run.status.code == 0) {
    r.cubin = read_file(out_cubin);
    fs::remove(out_cubin, ec);
  } else {
    r.verdict = classify_nvrtc_failure(r.log);
  }
  return true;
}

Compiler::RawCompile Compiler::compile_cached(const std::string& source, const std::string& name,
                                              const std::vector<std::string>& options) const {
  RawCompile r;
  Sha256 key;
  key.update(kCacheFormat).update("\0", 1).update(source).update("\0", 1).update(nvrtc_version_).update(common_hash_);
  for (const auto& o : options) key.update("\0", 1).update(o);
  const std::string hex = key.hex();  // once: hex() finishes the hash
  r.key = hex;
  const fs::path meta_path = entry_path(r.key, ".json"), cubin_path = entry_path(r.key, ".cubin");
  const fs::path dir = meta_path.parent_path();
  if (read_cache_entry(meta_path, cubin_path, r)) return r;
  r = RawCompile{};  // a damaged entry is simply rebuilt
  r.key = hex;
  if (!compile_in_child(source, name, options, dir, r)) return r;  // not cached
  const bool ok = r.verdict.ok();
  if (ok) {
    write_file_atomic(cubin_path, r.cubin);
    r.cubin_path = cubin_path;
    r.cubin_sha256 = sha256_hex(r.cubin);
  }
  json meta{
      {"format", kCacheFormat}, {"nvrtc_ok", ok}, {"log", r.log}, {"name", name}, {"cubin_sha256", r.cubin_sha256}};
  write_file_atomic(meta_path, meta.dump());
  return r;
}

std::filesystem::path Compiler::compile_support(const std::string& arch) const {
  auto opts = options(arch);
  RawCompile r = compile_cached(support_kernels_source(), "evo_support_kernels.cu", opts);
  if (!r.verdict.ok())
    throw environment_error("evo's own support kernels failed to compile for " + arch + ": " + r.verdict.reason);
  return r.cubin_path;
}

Compiler::Ptx Compiler::compile_ptx(const Candidate& c, const std::string& virtual_arch) const {
  std::vector<std::string> opts;
  for (const auto& o : options(c.arch))  // no ptxas runs for PTX
    if (o.rfind("--ptxas-options", 0) != 0)
      opts.push_back(o.rfind("--gpu-architecture=", 0) == 0 ? "--gpu-architecture=" + virtual_arch : o);
  RawCompile raw =
      compile_cached(final_source(c), "/nonexistent-evo-include-dir/" + c.variant->path.filename().string(), opts);
  return {raw.verdict, raw.key, raw.verdict.ok() ? raw.cubin : std::string()};
}

int compile_child_main(const std::string& request_path, const std::string& out_prefix) {
  json req = json::parse(read_file(request_path));
  NvrtcOutput out = nvrtc_compile(req.at("source"), req.at("name"), req.at("options").get<std::vector<std::string>>());
  write_file_atomic(out_prefix + ".log", out.log);
  if (!out.ok) return 10;
  write_file_atomic(out_prefix + ".cubin", out.cubin);
  return 0;
}

}  // namespace evo
