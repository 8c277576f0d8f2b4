// Generator programs written to break evo (issue 26): bytes that are not UTF-8, replies cut
// inside a character, tracebacks, files larger than the stdout cap, setsid() daemons, floods of
// candidates, oversize fields. Each runs as a real program through ask_external (the
// `evo __generator` runner): evo must name what went wrong, keep only valid UTF-8, and leave
// no process behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "core/utf8.h"
#include "evolve/generator.h"
#include "evolve/generator_process.h"
#include "evolve/source_store.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A Python generator program in a scratch file; the command that runs it.
std::string python_generator(const std::string& name, const std::string& body) {
  const fs::path file = scratch_dir("hostile-" + name) / (name + ".py");
  write_text(file, "import json, os, sys, time\n" + body);
  return "python3 " + shell_quote(file);
}

// Dumping the reply into JSON is what ended runs with type_error.316: it must not throw.
void expect_storable(const GeneratorReply& r) {
  json trace = {{"raw", r.raw}, {"error", r.error}, {"rejected", r.rejected}};
  for (const auto& p : r.proposals) trace["p"].push_back({p.source, p.parent, p.rationale});
  EXPECT_NO_THROW((void)trace.dump()) << "every string of the reply is valid UTF-8";
}

TEST(HostileGenerator, BinaryGarbageOnStdoutIsNamedNotFatal) {
  const auto r = ask_external("printf '\\377\\376\\000garbage\\200\\300\\n'", json::object(), {});
  EXPECT_TRUE(r.proposals.empty());
  EXPECT_NE(r.error.find("not JSON"), std::string::npos) << r.error;
  EXPECT_NE(r.raw.find("\xEF\xBF\xBD"), std::string::npos) << "invalid bytes become U+FFFD";
  expect_storable(r);
}

TEST(HostileGenerator, InvalidUtf8InsideTheJsonStringsIsReplaced) {
  const auto r =
      ask_external("printf '{\"candidates\": [{\"source\": \"kernel \\377 here\", \"rationale\": \"half \\303\"}]}'",
                   json::object(), {});
  ASSERT_EQ(r.proposals.size(), 1u) << r.error;
  EXPECT_EQ(r.proposals[0].source, "kernel \xEF\xBF\xBD here");
  EXPECT_EQ(r.proposals[0].rationale, "half \xEF\xBF\xBD");
  expect_storable(r);
}

TEST(HostileGenerator, HonestReplyOver64KiBAndRationaleCutInsideACharacter) {
  // 40,000 two-byte characters (80 KB) in the source: the trace keeps 64 KiB, which would end
  // inside a character at an odd offset; the rationale's byte 2000 is inside one too.
  const auto r = ask_external(python_generator("long", R"(
src = "/*evo {} */ // " + "\u00e9" * 40000
json.dump({"candidates": [{"source": src, "parent": "p", "rationale": "a" + "\u00e9" * 1500}]},
          sys.stdout, ensure_ascii=False)
)"),
                              json::object(), {});
  ASSERT_EQ(r.proposals.size(), 1u) << r.error;
  EXPECT_EQ(r.proposals[0].source.size(), 15u + 80000u);
  EXPECT_LE(r.proposals[0].rationale.size(), kMaxRationaleBytes);
  EXPECT_EQ(r.proposals[0].rationale.size(), 1999u) << "cut before the character that crosses byte 2000";
  EXPECT_LE(r.raw.size(), kMaxRawBytes);
  EXPECT_GT(r.raw.size(), kMaxRawBytes - 4);
  EXPECT_EQ(valid_utf8(r.raw), r.raw);
  expect_storable(r);
}

TEST(HostileGenerator, StderrEndIsTheExceptionOfATraceback) {
  const auto r = ask_external(python_generator("trace", R"(
def deep(n):
    if n == 0:
        raise ValueError("the endpoint refused the API key")
    deep(n - 1)
sys.stderr.write("warming up " * 100 + "\n")
deep(30)
)"),
                              json::object(), {});
  EXPECT_NE(r.error.find("exit 1"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("ValueError: the endpoint refused the API key"), std::string::npos) << r.error;
  EXPECT_EQ(stderr_end("Traceback (most recent call last):\n  File \"x\", line 1\n    boom()\nKeyError: 'k'\n\n"),
            "File \"x\", line 1 | boom() | KeyError: 'k'");
  EXPECT_EQ(stderr_end("\xFF\tbad\n"), "\xEF\xBF\xBD bad");
}

TEST(HostileGenerator, FilesItWritesAreNotLimitedOnlyItsStdout) {
  const fs::path big = scratch_dir("hostile-files") / "model-cache.bin";
  ExternalLimits lim;
  lim.max_output_bytes = 1 << 20;
  const auto r = ask_external("head -c 3000000 /dev/zero > " + shell_quote(big) + " && echo '{\"candidates\": []}'",
                              json::object(), lim);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(fs::file_size(big), 3000000u) << "a file of its own larger than the stdout cap";
  const auto t0 = std::chrono::steady_clock::now();
  const auto flood = ask_external("yes 'a kernel'", json::object(), lim);
  EXPECT_NE(flood.error.find("more than 1048576 bytes on stdout"), std::string::npos) << flood.error;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0)
      << "an endless stdout is stopped at the cap, not at the timeout";
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

TEST(HostileGenerator, SetsidDaemonsAreKilledWithTheGenerator) {
  const fs::path pids = scratch_dir("hostile-setsid") / "pids";
  // A daemon the classic way (fork, setsid, fork) and a plain background child; the program
  // answers and exits while both sleep on.
  const auto r = ask_external(python_generator("setsid", R"(
out = open(sys.argv[1], "w")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        out.write(f"{os.getpid()}\n"); out.flush(); time.sleep(300); os._exit(0)
    os._exit(0)
if os.fork() == 0:
    out.write(f"{os.getpid()}\n"); out.flush(); time.sleep(300); os._exit(0)
deadline = time.time() + 60
while open(sys.argv[1]).read().count("\n") < 2 and time.time() < deadline:
    time.sleep(0.05)
print(json.dumps({"candidates": []}))
)") + " " + shell_quote(pids),
                              json::object(), {});
  EXPECT_TRUE(r.error.empty()) << r.error;
  const std::string text = read_text(pids);
  std::vector<pid_t> children;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    children.push_back(pid_t(std::stol(text.substr(at, nl - at))));
    at = nl + 1;
  }
  ASSERT_EQ(children.size(), 2u) << text;
  for (pid_t pid : children) EXPECT_FALSE(alive(pid)) << "process " << pid << " outlived the generator";
  EXPECT_EQ(r.stray_processes, 2);
  ASSERT_FALSE(r.rejected.empty());
  EXPECT_NE(r.rejected.back().find("left 2 process(es) running"), std::string::npos) << r.rejected.back();
}

TEST(HostileGenerator, HangingDaemonTreeIsKilledAtTheTimeout) {
  const fs::path pids = scratch_dir("hostile-hang") / "pids";
  ExternalLimits lim;
  lim.timeout = std::chrono::milliseconds(4000);
  const auto r = ask_external(python_generator("hang", R"(
if os.fork() == 0:
    os.setsid()
    open(sys.argv[1], "w").write(f"{os.getpid()}\n")
    time.sleep(300)
time.sleep(300)
)") + " " + shell_quote(pids),
                              json::object(), lim);
  EXPECT_NE(r.error.find("did not answer within"), std::string::npos) << r.error;
  const pid_t daemon = pid_t(std::stol(read_text(pids)));
  EXPECT_FALSE(alive(daemon));
}

TEST(HostileGenerator, TenThousandCandidatesAreCappedAtPopulation) {
  ExternalLimits lim;
  lim.max_candidates = 4;
  const auto r = ask_external(python_generator("flood", R"(
json.dump({"candidates": [{"source": f"kernel {i}"} for i in range(10000)]}, sys.stdout)
)"),
                              json::object(), lim);
  ASSERT_EQ(r.proposals.size(), 4u) << r.error;
  EXPECT_EQ(r.proposals[3].source, "kernel 3");
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0], "candidates 4 to 9999: over the 4 wanted (--population), dropped");
}

TEST(HostileGenerator, OversizeParentIsDroppedAndParamsAreTyped) {
  const std::string parent(5000, 'p');
  const auto r = parse_generator_output(R"({"candidates": [{"source": "k1", "parent": ")" + parent +
                                            R"(", "params": {"BLOCK_N": 64}},
                                              {"source": "k2", "params": "BLOCK_N=64"},
                                              {"source": "k3", "params": {"BLOCK_N": 6.5}}]})",
                                        {});
  ASSERT_EQ(r.proposals.size(), 1u);
  EXPECT_EQ(r.proposals[0].parent, "") << "a 5000-byte parent is no candidate id";
  EXPECT_TRUE(r.proposals[0].params_given);
  EXPECT_EQ(r.proposals[0].params, (ParamSet{{"BLOCK_N", 64}}));
  ASSERT_EQ(r.rejected.size(), 3u);
  EXPECT_NE(r.rejected[0].find("parent of 5000 bytes"), std::string::npos) << r.rejected[0];
  EXPECT_NE(r.rejected[1].find("\"params\" must be an object"), std::string::npos) << r.rejected[1];
  EXPECT_NE(r.rejected[2].find("params.BLOCK_N: not an integer"), std::string::npos) << r.rejected[2];
}

TEST(HostileGenerator, AnswerParamsMustBeTheSourcesTunables) {
  Variant v;
  v.id = "5-swizzle/x-1";
  v.params = {{"BLOCK_M", {64, 128}}, {"BLOCK_N", {64, 32}}};
  EXPECT_EQ(answer_params(v, {{"BLOCK_N", 32}}), (ParamSet{{"BLOCK_M", 64}, {"BLOCK_N", 32}}))
      << "named tunables over the front matter's first values";
  EXPECT_EQ(answer_params(v, {}), (ParamSet{{"BLOCK_M", 64}, {"BLOCK_N", 64}}));
  std::string message;
  EXPECT_EQ(exit_code_of([&] { answer_params(v, {{"STAGES", 3}}); }, &message), 1);
  EXPECT_EQ(message, "params.STAGES: not a tunable of this source (its front matter declares BLOCK_M, BLOCK_N)");
}

TEST(Utf8, PrefixAndSuffixNeverCutACharacter) {
  const std::string s = "a\u00e9\u20ac\U0001F600";  // 1 + 2 + 3 + 4 bytes
  EXPECT_EQ(utf8_prefix(s, 2), "a");
  EXPECT_EQ(utf8_prefix(s, 3), "a\u00e9");
  EXPECT_EQ(utf8_prefix(s, 9), "a\u00e9\u20ac");
  EXPECT_EQ(utf8_suffix(s, 5), "\U0001F600");
  EXPECT_EQ(utf8_suffix(s, 7), "\u20ac\U0001F600");
  EXPECT_EQ(valid_utf8("\xC0\xAF ok \xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD ok \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD")
      << "overlong forms and surrogates are not UTF-8";
}

}  // namespace
}  // namespace evo::test
