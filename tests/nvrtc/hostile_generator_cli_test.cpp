// `evo evolve` with generator programs written to break it (issue 26), through the real binary
// and NVRTC, without a GPU (the compile phase, then exit 2). Each test writes a small Python
// generator that answers by generation number (request "run.generation").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A generator program: `body` reads `req` (the request) and `gen`, and prints its answer. Every
// request is also saved as requests/<gen>.json beside it.
std::string generator(const fs::path& dir, const std::string& body) {
  fs::create_directories(dir / "requests");
  write_text(dir / "gen.py",
             "import json, os, sys\n"
             "req = json.load(sys.stdin)\n"
             "gen = req['run']['generation']\n"
             "open(os.path.join(os.path.dirname(sys.argv[0]), 'requests', f'{gen}.json'), 'w')"
             ".write(json.dumps(req))\n"
             "SWIZZLE = open(" +
                 json((source_root() / "variants" / "5-swizzle" / "swizzle.cu").string()).dump() +
                 ").read()\n"
                 "def answer(cands):\n"
                 "    json.dump({'candidates': cands}, sys.stdout, ensure_ascii=False)\n" +
                 body);
  return "exec:python3 " + (dir / "gen.py").string();
}

CliResult evolve(const fs::path& dir, const std::string& gen, const std::string& args) {
  return run_evo("evolve --task fp16-d64 --results-dir " + shell_quote(dir / "results") + " --populations-dir " +
                 shell_quote(dir / "pops") + " --generator " + shell_quote(gen) + " " + args);
}

std::vector<json> trace_of(const fs::path& dir) {
  const fs::path traces = dir / "results" / "evolve";
  if (!fs::exists(traces) || fs::is_empty(traces)) return {};
  return read_jsonl(fs::directory_iterator(traces)->path());
}

TEST(HostileGeneratorCli, GarbageCutUtf8FloodsAndTracebacksKeepEveryTraceLine) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "a GPU is present: this covers the compile phase only";
  const fs::path dir = scratch_dir("hostile-cli-bytes");
  const std::string gen = generator(dir, R"(
if gen == 0:
    sys.stdout.buffer.write(b"\xff\xfe binary garbage \x80\x00")
elif gen == 1:
    answer([{"source": "not a kernel", "parent": "p" * 5000, "rationale": "a" + "\u00e9" * 1500,
             "notes": "\u00e9" * 40000}])
elif gen == 2:
    answer([{"source": f"not a kernel {i}"} for i in range(10000)])
else:
    def fail(n):
        if n == 0:
            raise RuntimeError("the model endpoint is down")
        fail(n - 1)
    fail(20)
)");
  const auto r = evolve(dir, gen, "--stage 5 --generations 4 --population 2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  const auto trace = trace_of(dir);
  ASSERT_EQ(trace.size(), 4u) << "one trace line per generation\n" << r.out;
  EXPECT_NE(trace[0]["response"]["error"].get<std::string>().find("not JSON"), std::string::npos) << trace[0];
  EXPECT_NE(trace[0]["response"]["raw"].get<std::string>().find("\xEF\xBF\xBD binary garbage"), std::string::npos);
  ASSERT_EQ(trace[1]["verdicts"].size(), 1u) << trace[1];
  EXPECT_EQ(trace[1]["verdicts"][0]["outcome"], "input");
  EXPECT_EQ(trace[1]["verdicts"][0]["rationale"].get<std::string>().size(), 1999u);
  EXPECT_EQ(trace[1]["verdicts"][0]["parent"], "");
  EXPECT_LE(trace[1]["response"]["raw"].get<std::string>().size(), 65536u);
  EXPECT_EQ(trace[2]["verdicts"].size(), 2u) << "--population 2 caps the 10,000 answers";
  EXPECT_EQ(trace[2]["response"]["rejected"][0], "candidates 2 to 9999: over the 2 wanted (--population), dropped");
  EXPECT_NE(trace[3]["response"]["error"].get<std::string>().find("RuntimeError: the model endpoint is down"),
            std::string::npos)
      << trace[3]["response"];
  // What went wrong reaches the generator in the next request.
  const json last = json::parse(read_text(dir / "requests" / "3.json"));
  std::string failures = last["failures"].dump();
  EXPECT_NE(failures.find("over the 2 wanted"), std::string::npos) << failures;
  EXPECT_NE(failures.find("parent of 5000 bytes"), std::string::npos) << failures;
}

TEST(HostileGeneratorCli, SameCodeUnderAnotherTextIsADuplicateBeforeTheGpu) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "a GPU is present: this covers the compile phase only";
  const fs::path dir = scratch_dir("hostile-cli-code");
  // Generation 1 edits the #ifndef default and reorders the front matter's BLOCK_N domain, then
  // asks for BLOCK_N=64 through params: the configuration of generation 0 under a new text.
  const std::string gen = generator(dir, R"(
edited = SWIZZLE.replace('"BLOCK_N": [64, 32]', '"BLOCK_N": [32, 64]').replace(
    "#ifndef BLOCK_N\n#define BLOCK_N 64", "#ifndef BLOCK_N\n#define BLOCK_N 32")
assert edited != SWIZZLE
if gen == 0:
    answer([{"source": SWIZZLE, "rationale": "the stage's kernel"}])
elif gen == 1:
    answer([{"source": edited, "params": {"BLOCK_N": 64}, "rationale": "a tweak that is none"}])
elif gen == 2:
    answer([{"source": edited, "params": {"BLOCK_M": 128}, "rationale": "a real change"}])
else:
    answer([{"source": edited, "params": {"STAGES": 3}, "rationale": "a tunable it does not have"}])
)");
  const auto r = evolve(dir, gen, "--stage 5 --generations 4 --population 1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  const auto trace = trace_of(dir);
  ASSERT_EQ(trace.size(), 4u) << r.out;
  const json first = trace[0]["verdicts"][0], same = trace[1]["verdicts"][0], other = trace[2]["verdicts"][0];
  EXPECT_EQ(first["outcome"], "ok") << first;
  EXPECT_EQ(same["params"], (json{{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"NWARPS", 4}})) << same;
  EXPECT_NE(same["candidate_id"], first["candidate_id"]) << "a new text: the source novelty lets it through";
  EXPECT_EQ(same["outcome"], "duplicate") << same;
  EXPECT_EQ(same["same_code_as"], first["candidate_id"]) << same;
  EXPECT_EQ(other["outcome"], "ok") << other;
  EXPECT_EQ(other["params"], (json{{"BLOCK_M", 128}, {"BLOCK_N", 32}, {"NWARPS", 4}}))
      << "named tunables over the edited front matter's first values";
  EXPECT_EQ(trace[3]["verdicts"][0]["outcome"], "input");
  EXPECT_NE(trace[3]["verdicts"][0]["reason"].get<std::string>().find("params.STAGES: not a tunable"),
            std::string::npos);

  // The request of generation 3: where the run stands, every verdict so far, each source once.
  const json req = json::parse(read_text(dir / "requests" / "3.json"));
  EXPECT_EQ(req["schema_version"], "2.0");
  EXPECT_EQ(req["run"]["id"], trace[0]["run"]);
  EXPECT_EQ(req["run"]["generation"], 3);
  EXPECT_EQ(req["run"]["wanted"], 1);
  EXPECT_EQ(req["run"]["generations_left"], 1);
  EXPECT_TRUE(req["run"]["gpu_s_left"].is_null()) << "no --budget-gpu-s";
  ASSERT_EQ(req["history"].size(), 3u) << req["history"];
  EXPECT_EQ(req["history"][1]["outcome"], "duplicate");
  EXPECT_EQ(req["history"][2]["params"], other["params"]);
  for (const auto& h : req["history"]) EXPECT_TRUE(h["params"].is_object()) << h;
  for (const auto& f : req["failures"]) {
    if (f.contains("params")) {
      EXPECT_TRUE(f["params"].is_object()) << f;
    }
  }
  ASSERT_TRUE(req["i2"]["elites"].empty()) << "no records on this GPU";
  ASSERT_FALSE(req["i2"]["variants"].empty()) << "the stage's variant sources instead";
  for (const auto& v : req["i2"]["variants"])
    EXPECT_TRUE(req["sources"].contains(v["source_sha256"].get<std::string>())) << v;
  EXPECT_EQ(req["sources"].size(), req["i2"]["variants"].size()) << "each source once";
}

TEST(HostileGeneratorCli, CpAsyncKernelFailsTheStage7TechniqueGate) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "a GPU is present: this covers the compile phase only";
  const fs::path dir = scratch_dir("hostile-cli-technique");
  const fs::path cp_async = source_root() / "variants" / "1-cp-async" / "cp_async_kv.cu";
  const std::string gen = generator(dir, "answer([{'source': open(" + json(cp_async.string()).dump() +
                                             ").read(), 'rationale': 'stage 1 passed off as stage 7'}])\n");
  const auto r = run_evo("evolve --task fp16-d128 --stage 7 --generations 1 --population 1 --results-dir " +
                         shell_quote(dir / "results") + " --populations-dir " + shell_quote(dir / "pops") +
                         " --generator " + shell_quote(gen));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  const auto trace = trace_of(dir);
  ASSERT_EQ(trace.size(), 1u) << r.out;
  EXPECT_EQ(trace[0]["verdicts"][0]["outcome"], "technique") << trace[0]["verdicts"];
  EXPECT_NE(trace[0]["verdicts"][0]["reason"].get<std::string>().find("the stage requires"), std::string::npos);
  // evo eval holds a file from anywhere to the same gate.
  const auto eval = run_evo("eval " + shell_quote(cp_async) + " --stage 7 --task fp16-d128 --json --results-dir " +
                            shell_quote(dir / "results") + " --populations-dir " + shell_quote(dir / "pops"));
  EXPECT_EQ(eval.exit_code, 2) << eval.out;
  const json v = json::parse(eval.out.substr(0, eval.out.rfind('}') + 1));
  EXPECT_EQ(v["verdicts"][0]["outcome"], "technique") << eval.out;
}

TEST(HostileGeneratorCli, RunsStartedInTheSameSecondWithOneSeedGetTheirOwnIds) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "a GPU is present: this covers the compile phase only";
  const fs::path dir = scratch_dir("hostile-cli-ids");
  const std::string one = std::string(EVO_BINARY) + " evolve --stage 5 --task fp16-d64 --generations 1 " +
                          "--population 1 --rng-seed 7 --results-dir " + shell_quote(dir / "results") +
                          " --populations-dir " + shell_quote(dir / "pops") +
                          " --generator 'exec:echo {\\\"candidates\\\": []}' >/dev/null 2>&1";
  const auto r = run_shell(one + " & " + one + " & " + one + " & wait");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> traces;
  for (const auto& e : fs::directory_iterator(dir / "results" / "evolve")) traces.insert(e.path().filename().string());
  EXPECT_EQ(traces.size(), 3u) << "three runs, three ids and traces";
  for (const auto& t : traces) EXPECT_EQ(read_jsonl(dir / "results" / "evolve" / t).size(), 1u) << t;
}

}  // namespace
}  // namespace evo::test
