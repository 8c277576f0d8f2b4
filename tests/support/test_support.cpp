#include "support/test_support.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "gpu/cuda_driver.h"
#include "policy/config.h"
#include "store/records.h"

namespace evo::test {

namespace fs = std::filesystem;

fs::path source_root() { return EVO_SOURCE_ROOT; }

void without_round30_close(GatesConfig& g) {
  g.sampled.batched_model_cases = g.sampled.gemma_27b_cases = g.sampled.long_fused_qkv_cases = false;
  g.sampled.bhsd_long_value_cases = g.sampled.padded_decode_cases = false;
  without_round30_second_close(g);
}

void without_round30_second_close(GatesConfig& g) {
  g.sampled.beam_prefill_cases = g.sampled.gqa_training_step_cases = false;
  g.sampled.phi4_prefill_cases = g.sampled.model_layout_cases = false;
  without_round31_close(g);
}

void without_round31_close(GatesConfig& g) {
  g.sampled.model_ranges = g.sampled.released_heads_cases = false;
  without_round31_narrowed_close(g);
}

void without_round31_narrowed_close(GatesConfig& g) {
  g.sampled.model_range_ends = false;
  without_round32_close(g);
}

void without_round32_close(GatesConfig& g) {
  g.sampled.tensor_parallel_shards = g.sampled.fixed_length_steps = g.sampled.fixed_length_calls = false;
  g.sampled.joint_attention_calls = false;
  without_round32_view_close(g);
}

void without_round32_view_close(GatesConfig& g) {
  g.sampled.view_layout_cases = false;
  without_round33_close(g);
}

void without_round33_close(GatesConfig& g) {
  g.sampled.kv_packed_cases = false;
  without_round33_holes_close(g);
}

void without_round33_holes_close(GatesConfig& g) {
  g.sampled.whole_window_calls = g.sampled.vision_tower_calls = g.sampled.long_gqa_prefill_cases = false;
}

GatesConfig repo_gates() { return load_gates_config(source_root() / "gates" / "gates.json"); }

GatesConfig repo_gates_before_round31_close() {
  GatesConfig g = repo_gates();
  without_round31_close(g);
  return g;
}

GatesConfig repo_gates_before_round31_narrowed_close() {
  GatesConfig g = repo_gates();
  without_round31_narrowed_close(g);
  return g;
}

GatesConfig repo_gates_before_round33_close() {
  GatesConfig g = repo_gates();
  without_round33_close(g);
  return g;
}

GatesConfig repo_gates_before_round33_holes_close() {
  GatesConfig g = repo_gates();
  without_round33_holes_close(g);
  return g;
}

GatesConfig repo_gates_before_round32_view_close() {
  GatesConfig g = repo_gates();
  without_round32_view_close(g);
  return g;
}

GatesConfig repo_gates_before_round32_close() {
  GatesConfig g = repo_gates();
  without_round32_close(g);
  return g;
}

namespace {
// Child processes (__compile, __worker) must be the evo binary, not this test binary.
const bool kExecutableSet = [] { return ::setenv("EVO_EXECUTABLE", EVO_BINARY, 0) == 0; }();
}  // namespace

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

int exit_code_of(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const EvoError& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return 0;
}

CliResult run_shell(const std::string& command) {
  CliResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

CliResult run_evo(const std::string& args, const std::string& env) {
  return run_shell(env + (env.empty() ? "" : " ") + std::string(EVO_BINARY) + " " + args);
}

std::string shell_quote(const fs::path& p) { return "'" + p.string() + "'"; }

fs::path records_file(const fs::path& p) {
  if (fs::exists(p) || !fs::exists(p.string() + ".gz")) return p;
  return p.string() + ".gz";
}

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  const fs::path file = records_file(p);
  std::istringstream in(file.extension() == ".gz" ? read_records_file(file) : read_text(file));
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(nlohmann::json::parse(l));
  return out;
}

bool crashed_during_gate_case(const nlohmann::json& record, const std::string& case_prefix) {
  return record.value("outcome", "") == "crash" &&
         record.value("reason", "").find("(during gate " + case_prefix) != std::string::npos;
}

fs::path scratch_dir(const std::string& name) {
  fs::path base = fs::temp_directory_path() / ("evo-test-" + std::to_string(::getpid()));
  fs::path d = base / name;
  fs::remove_all(d);
  fs::create_directories(d);
  static struct Cleanup {
    fs::path base;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(base, ec);
    }
  } cleanup{base};
  return d;
}

fs::path nvrtc_cache(const std::string& name) {
  const char* shared = std::getenv("EVO_TEST_NVRTC_CACHE");
  if (!shared || !*shared) return scratch_dir(name);
  fs::create_directories(shared);
  return shared;
}

fs::path make_repo(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  fs::path root = scratch_dir(name);
  fs::create_directories(root / "gates");
  fs::create_directories(root / "variants");
  fs::copy_file(source_root() / "gates" / "gates.json", root / "gates" / "gates.json");
  fs::copy(source_root() / "variants" / "common", root / "variants" / "common", fs::copy_options::recursive);
  for (const auto& [path, text] : files) write_text(root / path, text);
  return root;
}

void set_deep_gate(const fs::path& repo, bool on) {
  const fs::path file = repo / "gates" / "gates.json";
  auto gates = nlohmann::json::parse(read_text(file));
  gates["deep_gate"]["enabled"] = on;
  write_text(file, gates.dump(2));
}

bool gpu_available(std::string* reason) {
  std::string why;
  if (!cuda_driver_available(&why)) {
    *reason = "libcuda.so.1 not loadable (" + why + ")";
    return false;
  }
  const auto& cu = cuda_driver();
  if (cu.cuInit(0) != CUDA_SUCCESS) {
    *reason = "cuInit failed";
    return false;
  }
  int n = 0;
  cu.cuDeviceGetCount(&n);
  if (n == 0) {
    *reason = "no CUDA device";
    return false;
  }
  return true;
}

fs::path committed_results() { return committed_results_of(source_root()); }

fs::path committed_results_of(const fs::path& root) {
  const CliResult listed = run_shell("git -C " + shell_quote(root) + " ls-files results 2>/dev/null");
  if (listed.exit_code != 0 || listed.out.empty()) return root / "results";
  const fs::path copy = scratch_dir("committed-results");
  std::set<std::string> landed;
  std::istringstream lines(listed.out);
  for (std::string rel; std::getline(lines, rel);)
    if (!rel.empty()) landed.insert(rel);
  // Packed records are landed records too: evo writes plain .jsonl, only scripts/pack_results.sh
  // writes .jsonl.gz, before a commit. The device's copy of the working tree carries them while its
  // git index may be older (the H200, 2026-11-30: fp8-d64-causal's new records were there but not
  // listed, so ExportedLaunch found no population), and records a run wrote there stay plain.
  // Kernel sources are stored by content hash: one no record names changes nothing.
  for (const auto& e : fs::directory_iterator(root / "results"))
    if (e.path().filename().string().ends_with(".jsonl.gz")) landed.insert("results/" + e.path().filename().string());
  if (fs::is_directory(root / "results" / "sources"))
    for (const auto& e : fs::directory_iterator(root / "results" / "sources"))
      landed.insert("results/sources/" + e.path().filename().string());
  for (const std::string& rel : landed) {
    if (!fs::exists(root / rel)) continue;  // a deletion not committed yet
    const fs::path to = copy / fs::path(rel).lexically_relative("results");
    fs::create_directories(to.parent_path());
    fs::copy_file(root / rel, to, fs::copy_options::overwrite_existing);
  }
  return copy;
}

}  // namespace evo::test
