// Helpers shared by the test binaries: run the evo CLI, make scratch repos, skip without a GPU.
#pragma once
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace evo {
struct GatesConfig;
}

namespace evo::test {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line, stderr merged into stdout.
CliResult run_shell(const std::string& command);
// Runs the built evo binary with args (shell-quoted), extra env "K=V ..." prefix allowed.
CliResult run_evo(const std::string& args, const std::string& env = "");
// A path in single quotes for a shell command line (test paths hold no quotes).
std::string shell_quote(const std::filesystem::path& p);
// Every non-empty line of a JSONL file, parsed.
// A records file by its plain name: the file, or its packed twin <name>.gz (scripts/pack_results.sh).
std::filesystem::path records_file(const std::filesystem::path& p);
// The records of a *.jsonl file, or of its packed twin.
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& p);
// Whether a run record's candidate crashed in a gate case whose id starts with `case_prefix`
// ("" for any): a crash names the case at the end of its reason ("...: an illegal memory access
// was encountered (during gate sampled/7/...)", run/worker_client.cpp).
bool crashed_during_gate_case(const nlohmann::json& record, const std::string& case_prefix = "");

// An environment for run_evo: `evo compile` without nvdisasm's SASS technique counts. They decide a
// verdict only in a stage whose stage.json requires them (Compiler::check_technique); a test that
// reads none elsewhere need not pay for them: nvdisasm takes ~0.9 CPU-s for a sm_90a cubin, most of
// it its start, more than NVRTC takes to compile a fixture or most configurations (2026-11-30).
inline constexpr const char* kNoTechniqueCounts = "EVO_NVDISASM=/nonexistent/nvdisasm";

// A fresh scratch directory under the test temp dir, removed at exit of the test binary.
std::filesystem::path scratch_dir(const std::string& name);
// The NVRTC cache for a test that compiles the repository's own variants. Under ctest it is the
// nvrtc label's one cache (EVO_TEST_NVRTC_CACHE, emptied by the label's first test,
// tests/CMakeLists.txt): a configuration several tests compile is compiled once a run. Run by
// hand, the test binary gets a fresh scratch_dir(name).
std::filesystem::path nvrtc_cache(const std::string& name);

// A minimal repo (gates/gates.json copied from the source tree, variants/common, and the given
// variant files as variants/<stage dir>/<name>.cu) for fixture tests.
std::filesystem::path make_repo(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files);
// Turns gates.json deep_gate.enabled of such a repo on or off: a suite that judges another part
// of the gate (huge shapes, the sanitizer, fp8 tricks) keeps the deep tier's ~60 s per scalar
// would-be elite out of its time.
void set_deep_gate(const std::filesystem::path& repo, bool on);

std::filesystem::path source_root();
// The source tree's gates/gates.json, loaded.
GatesConfig repo_gates();
// Turns off hacker round 30's close (policy/sample_space.h: five kinds after every other case): a
// test that reads the tiers as an earlier round drew them, or compares a kind before them with and
// without it, turns them off (no earlier case moves; HackerRound30Close checks it).
// Both of its passes: the second too (below).
void without_round30_close(GatesConfig& g);
// Turns off round 30's second close (policy/sample_space.h: four kinds after the first close's):
// the first close's tests read the tiers as it drew them (HackerRound30OpenClose checks no earlier
// case moves).
void without_round30_second_close(GatesConfig& g);
// Turns off round 31's close (policy/sample_space.h model_ranges, released_heads_cases, and
// model_range_ends below): round 30's and round 31's prediction tests read the tiers as they were
// drawn before it.
void without_round31_close(GatesConfig& g);
// The repo's gates.json with round 31's close off (the tiers round 30's second close and round 31 read).
GatesConfig repo_gates_before_round31_close();
// Turns off the close of round 31's narrowed holes (policy/sample_space.h model_range_ends):
// round 31's close tests read the tiers as that close drew them. without_round31_close turns it off too.
void without_round31_narrowed_close(GatesConfig& g);
// The repo's gates.json with that close off (the tiers round 31's close read).
GatesConfig repo_gates_before_round31_narrowed_close();
// Turns off round 32's close (policy/sample_space.h tensor_parallel_shards, fixed_length_steps,
// fixed_length_calls, joint_attention_calls): round 32's prediction tests read the tiers as the round found them.
// without_round31_narrowed_close turns it off too.
void without_round32_close(GatesConfig& g);
// The repo's gates.json with round 32's close off (the tiers round 32 read).
GatesConfig repo_gates_before_round32_close();
// Turns off the close of round 32's open holes (policy/sample_space.h view_layout_cases): round 32's
// close tests read the tiers as that close drew them. without_round32_close turns it off too.
void without_round32_view_close(GatesConfig& g);
// The repo's gates.json with that close off (the tiers round 32's close read).
GatesConfig repo_gates_before_round32_view_close();
// Turns off the close of round 33's KV-packed hole (policy/sample_space.h kv_packed_cases): round
// 33's tests read the tiers as the round found them. without_round32_view_close turns it off too.
void without_round33_close(GatesConfig& g);
// The repo's gates.json with that close off (the tiers round 33 read).
GatesConfig repo_gates_before_round33_close();
// Turns off the close of round 33's length holes (policy/sample_space.h whole_window_calls,
// vision_tower_calls, long_gqa_prefill_cases): the KV-packed close's tests read the tiers as that close
// drew them. without_round33_close turns it off too.
void without_round33_holes_close(GatesConfig& g);
// The repo's gates.json with that close off (the tiers the KV-packed close read).
GatesConfig repo_gates_before_round33_holes_close();
// The repository's results/ as committed: a scratch copy of the files git tracks there, the
// packed records (*.jsonl.gz) and the kernel sources, so a user's own runs (scripts/setup.sh runs
// stage 0 into results/, as plain .jsonl) do not make the "committed docs match the committed
// records" tests fail. Without git, results/ itself.
std::filesystem::path committed_results();
// The same for the repository at `root`.
std::filesystem::path committed_results_of(const std::filesystem::path& root);
std::string read_text(const std::filesystem::path& p);
void write_text(const std::filesystem::path& p, const std::string& text);

// The exit code an EvoError thrown by f carries (0 when f returns), its message into `message`.
int exit_code_of(const std::function<void()>& f, std::string* message = nullptr);

// True when libcuda.so.1 loads and a device exists; otherwise `reason` says why.
bool gpu_available(std::string* reason);

}  // namespace evo::test

// Skips a GPU test with the reason when no GPU is present.
#define EVO_REQUIRE_GPU()                                                                         \
  do {                                                                                            \
    std::string evo_gpu_reason;                                                                   \
    if (!evo::test::gpu_available(&evo_gpu_reason)) GTEST_SKIP() << "no GPU: " << evo_gpu_reason; \
  } while (0)
