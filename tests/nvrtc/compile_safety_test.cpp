// Compile safety: what an untrusted candidate can make `evo compile` do. Every probe is a real
// variant file in a scratch repo, compiled through the CLI (`evo compile --json`), and each test
// checks the verdict and that nothing from outside the source reaches the output, the records
// or the compile cache (docs/safety.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A scratch repo like test::make_repo's (gates.json, variants/common, the given files), built
// here because make_repo copies variants/common before variants/ exists.
std::filesystem::path scratch_repo(const std::string& name,
                                   const std::vector<std::pair<std::string, std::string>>& files) {
  const std::filesystem::path root = scratch_dir(name);
  std::filesystem::create_directories(root / "gates");
  std::filesystem::create_directories(root / "variants");
  std::filesystem::copy_file(source_root() / "gates" / "gates.json", root / "gates" / "gates.json");
  std::filesystem::copy(source_root() / "variants" / "common", root / "variants" / "common",
                        std::filesystem::copy_options::recursive);
  for (const auto& [path, text] : files) write_text(root / path, text);
  return root;
}

const std::string kFrontMatter =
    "/*evo\n{\"summary\": \"compile-safety probe\", \"dtypes\": [\"fp16\"], \"head_dims\": [64]}\n*/\n";

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// A host file whose content must never show up: random per test binary, so a hit cannot be a
// coincidence, and written so that, were it ever included, NVRTC would echo it in an error.
struct Secret {
  fs::path path;
  std::string marker;
};
const Secret& secret() {
  static const Secret s = [] {
    std::random_device rd;
    Secret out;
    out.marker = "evo_secret_marker_" + std::to_string(rd()) + std::to_string(rd());
    out.path = scratch_dir("compile-safety-secret") / "secret.txt";
    write_text(out.path, out.marker + " leaked from the host;\n");
    return out;
  }();
  return s;
}

// Lines of /etc/passwd long enough not to occur by chance (empty when the file is absent).
std::vector<std::string> passwd_lines() {
  std::vector<std::string> lines;
  std::ifstream in("/etc/passwd");
  for (std::string line; std::getline(in, line);)
    if (line.size() >= 12) lines.push_back(line);
  return lines;
}

struct CompileRun {
  CliResult cli;
  std::map<std::string, json> records;  // variant id -> `kind: compile` record
  fs::path root, cache;
  double seconds = 0;
};

// Builds a scratch repo with `files` in variants/0-probe/ (and gates.json edited by `gates`),
// then runs `evo compile --stage 0 --json` from inside the repo, as a user would.
CompileRun compile_probes(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files,
                          const std::function<void(json&)>& gates = nullptr) {
  std::vector<std::pair<std::string, std::string>> paths;
  for (const auto& [file, text] : files) paths.emplace_back("variants/0-probe/" + file, text);
  CompileRun run;
  run.root = scratch_repo(name, paths);
  run.cache = run.root / "cache";
  if (gates) {
    json g = json::parse(read_text(run.root / "gates" / "gates.json"));
    gates(g);
    write_text(run.root / "gates" / "gates.json", g.dump(2));
  }
  const auto t0 = std::chrono::steady_clock::now();
  run.cli = run_evo("compile --stage 0 --task fp16-d64 --arch sm_90a -j 2 --json --cache-dir " + quoted(run.cache),
                    "cd " + quoted(run.root) + " && EVO_ROOT=" + quoted(run.root));
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t start = 0;
  while (start < run.cli.out.size()) {
    size_t end = run.cli.out.find('\n', start);
    if (end == std::string::npos) end = run.cli.out.size();
    const std::string line = run.cli.out.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] != '{') continue;
    // nlohmann rejects invalid UTF-8, so this also checks every printed record is clean.
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << name << ": `evo compile --json` printed a line that is not valid JSON/UTF-8:\n"
                                   << line.substr(0, 300);
    if (!j.is_discarded()) run.records[j.value("variant", "?")] = j;
  }
  return run;
}

// Every byte evo left behind: its output and every file in the cache dir.
std::vector<std::pair<std::string, std::string>> everything_written(const CompileRun& run) {
  std::vector<std::pair<std::string, std::string>> out{{"evo's output", run.cli.out}};
  if (fs::exists(run.cache))
    for (const auto& e : fs::recursive_directory_iterator(run.cache))
      if (e.is_regular_file()) out.emplace_back(e.path().string(), read_text(e.path()));
  return out;
}

void expect_nothing_leaked(const CompileRun& run, const std::string& hint = "") {
  const auto passwd = passwd_lines();
  for (const auto& [where, text] : everything_written(run)) {
    EXPECT_EQ(text.find(secret().marker), std::string::npos) << "the secret host file leaked into " << where << hint;
    for (const auto& line : passwd)
      EXPECT_EQ(text.find(line), std::string::npos) << "a line of /etc/passwd leaked into " << where << ": " << line;
  }
}

TEST(CompileSafety, IncludesOfHostFilesAreRejectedInEveryDisguise) {
  const std::string s = secret().path.string();
  // file -> body after the front matter. Each tries to make NVRTC read a host file.
  const std::vector<std::pair<std::string, std::string>> probes{
      {"plain_passwd.cu", "#include \"/etc/passwd\"\n"},
      {"angle_passwd.cu", "#include </etc/passwd>\n"},
      {"plain_secret.cu", "#include \"" + s + "\"\n"},
      {"relative_secret.cu", "#include \"../../../../../../../../.." + s + "\"\n"},
      {"macro_indirect.cu", "#define EVIL \"" + s + "\"\n#include EVIL\n"},
      {"macro_function.cu", "#define STR(x) #x\n#define PATH(x) STR(x)\n#include PATH(/etc/passwd)\n"},
      {"digraph.cu", "%:include \"" + s + "\"\n"},
      {"digraph_spaced.cu", "  %:  include \"/etc/passwd\"\n"},
      {"line_continued.cu", "#inc\\\nlude \"" + s + "\"\n"},
      {"line_continued_crlf.cu", "#\\\r\ninclude \"" + s + "\"\n"},
      {"has_include.cu", "#if __has_include(\"/etc/passwd\")\nint x;\n#endif\n"},
      {"has_include_pasted.cu", "#define H(x) __has_##x\n#if H(include)(\"/etc/passwd\")\nint x;\n#endif\n"},
      {"comment_before_hash.cu", "/**/#include \"" + s + "\"\n"},
      {"comment_after_hash.cu", "#/**/include \"" + s + "\"\n"},
      {"comment_then_space.cu", "/* looks harmless */ #include \"" + s + "\"\n"},
      {"multiline_comment.cu", "/*\n*/ #include \"" + s + "\"\n"},
      {"vertical_tab.cu", "#\vinclude \"" + s + "\"\n"},
      {"form_feed.cu", "\f#include \"" + s + "\"\n"},
      {"carriage_return.cu", "int evo_probe_x;\r#include \"" + s + "\"\n"},
      {"ucn_spelling.cu", "#\\u0069nclude \"" + s + "\"\n"},
      {"include_next.cu", "#include_next \"" + s + "\"\n"},
      {"import.cu", "#import \"" + s + "\"\n"},
      {"embed.cu", "const char data[] = {\n#embed \"" + s + "\"\n};\n"},
      {"trigraph.cu", "?\?=include \"" + s + "\"\n"},
  };
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [file, body] : probes) files.emplace_back(file, kFrontMatter + body);
  const CompileRun run = compile_probes("compile-safety-includes", files);
  EXPECT_EQ(run.cli.exit_code, 1) << "a variant that does not compile makes `evo compile` exit 1:\n" << run.cli.out;
  for (const auto& [file, body] : probes) {
    const std::string id = "0-probe/" + fs::path(file).stem().string();
    auto it = run.records.find(id);
    ASSERT_NE(it, run.records.end()) << id << ": no record in the output:\n" << run.cli.out;
    EXPECT_EQ(it->second["outcome"], "compile") << id << ": " << it->second["reason"];
    // Rejected by the source policy before NVRTC ran: the reason names the file, no NVRTC log.
    EXPECT_NE(it->second["reason"].get<std::string>().find("variants/0-probe/" + file + ": "), std::string::npos)
        << id << " reached NVRTC instead of being refused by the source policy: " << it->second["reason"];
  }
  expect_nothing_leaked(run);
}

TEST(CompileSafety, HarmlessLookalikesStillCompile) {
  // The policy reads the source like the preprocessor; these must not be false alarms.
  const std::string body =
      "#include \"evo_attn.cuh\"  // the ABI\n"
      "#include <cuda_fp16.h> /* a toolkit header */\n"
      "EVO_EXPORT_LAUNCH(32, 0, 1, 1, 0);\n"
      "__device__ const char evo_probe_text[] = R\"x(#include \"/etc/passwd\" /* not a directive */)x\";\n"
      "__device__ const char evo_probe_quote = '\"';\n"
      "__device__ const int evo_probe_big = 1'000'000;\n"
      "#define EVO_PROBE_STR(x) #x\n"
      "extern \"C\" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {\n"
      "  if (p.flags == 1234567u) static_cast<evo_t*>(p.o)[0] = evo_from_float(evo_probe_big + evo_probe_quote);\n"
      "}\n";
  const CompileRun run = compile_probes("compile-safety-lookalikes", {{"lookalike.cu", kFrontMatter + body}});
  ASSERT_EQ(run.records.count("0-probe/lookalike"), 1u) << run.cli.out;
  EXPECT_EQ(run.records.at("0-probe/lookalike")["outcome"], "ok") << run.records.at("0-probe/lookalike")["reason"];
  EXPECT_EQ(run.cli.exit_code, 0) << run.cli.out;
}

TEST(CompileSafety, HeaderBesideTheVariantCannotShadowAnAllowedHeader) {
  // `#include "mma.h"` is allowed; NVRTC searches the directory of the source name before -I,
  // so a header dropped next to the variant would be compiled instead of the toolkit's.
  const std::string body = "#include \"mma.h\"\n__device__ int evo_probe_y;\n";
  const CompileRun run =
      compile_probes("compile-safety-sibling",
                     {{"sibling.cu", kFrontMatter + body}, {"mma.h", "#include \"" + secret().path.string() + "\"\n"}});
  ASSERT_EQ(run.records.count("0-probe/sibling"), 1u) << run.cli.out;
  expect_nothing_leaked(run,
                        "\nNVRTC resolved `#include \"mma.h\"` to the file beside the variant: the program "
                        "name given to NVRTC must not be a real directory (see docs/safety.md)");
}

TEST(CompileSafety, LongLinesInSourceAndLogDoNotCrashEvo) {
  // libstdc++'s std::regex recurses per character: a ~30 KB line crashes the matching process,
  // here the parent `evo` (every candidate of the run with it). A candidate controls such lines
  // in its source, in an EVO_CONSTRAINT message NVRTC prints, and in warnings that echo a line.
  const std::string abi = "#include \"evo_attn.cuh\"\n";
  const std::string kernel =
      "EVO_EXPORT_LAUNCH(32, 0, 1, 1, 0);\n"
      "extern \"C\" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {\n";
  const CompileRun run =
      compile_probes("compile-safety-long-lines",
                     {{"long_include.cu", kFrontMatter + "#include \"" + std::string(200000, 'a') + "\"\n"},
                      {"long_constraint.cu", kFrontMatter + abi + "EVO_CONSTRAINT(EVO_HEAD_DIM == 1, \"" +
                                                 std::string(40000, 'x') + "\");\n"},
                      {"long_warning.cu", kFrontMatter + abi + kernel + "  int wgmma_unused = 0; /* " +
                                              std::string(40000, 'y') + " serialized */\n  (void)p;\n}\n"}});
  EXPECT_TRUE(run.cli.exit_code == 0 || run.cli.exit_code == 1)
      << "evo compile died (exit " << run.cli.exit_code << "): a std::regex over a long line?\n"
      << run.cli.out.substr(0, 2000);
  for (const char* id : {"0-probe/long_include", "0-probe/long_constraint", "0-probe/long_warning"})
    EXPECT_EQ(run.records.count(id), 1u) << id << ": no record";
  if (run.records.count("0-probe/long_include")) {
    EXPECT_EQ(run.records.at("0-probe/long_include")["outcome"], "compile");
  }
  if (run.records.count("0-probe/long_constraint")) {
    EXPECT_EQ(run.records.at("0-probe/long_constraint")["outcome"], "constraints");
  }
}

TEST(CompileSafety, OversizedSourceAndNulByteAreRejectedBeforeNvrtc) {
  json gates = json::parse(read_text(source_root() / "gates" / "gates.json"));
  const long limit = gates["limits"]["source_bytes"];
  const std::string big = kFrontMatter + "// " + std::string(size_t(limit), 'x') + "\n";
  std::string nul = kFrontMatter + "__device__ int evo_probe_z;\n";
  nul.insert(nul.size() - 3, 1, '\0');
  const CompileRun run = compile_probes("compile-safety-size", {{"oversized.cu", big}, {"nul_byte.cu", nul}});
  ASSERT_EQ(run.records.count("0-probe/oversized"), 1u) << run.cli.out;
  ASSERT_EQ(run.records.count("0-probe/nul_byte"), 1u) << run.cli.out;
  EXPECT_EQ(run.records.at("0-probe/oversized")["outcome"], "compile");
  EXPECT_NE(run.records.at("0-probe/oversized")["reason"].get<std::string>().find("the limit is"), std::string::npos)
      << run.records.at("0-probe/oversized")["reason"];
  EXPECT_EQ(run.records.at("0-probe/nul_byte")["outcome"], "compile");
  EXPECT_NE(run.records.at("0-probe/nul_byte")["reason"].get<std::string>().find("NUL byte"), std::string::npos)
      << run.records.at("0-probe/nul_byte")["reason"];
  // Neither reached NVRTC, so neither left a cache entry.
  EXPECT_FALSE(fs::exists(run.cache / "nvrtc") && !fs::is_empty(run.cache / "nvrtc"));
}

// Every cache meta file's log must be valid UTF-8 (nlohmann's parser checks) and within the cap.
std::vector<std::string> cached_logs(const fs::path& cache) {
  std::vector<std::string> logs;
  if (!fs::exists(cache / "nvrtc")) return logs;
  for (const auto& e : fs::recursive_directory_iterator(cache / "nvrtc")) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    const json meta = json::parse(read_text(e.path()), nullptr, false);
    EXPECT_FALSE(meta.is_discarded()) << e.path() << " is not valid JSON / UTF-8";
    if (!meta.is_discarded()) logs.push_back(meta.value("log", ""));
  }
  return logs;
}

TEST(CompileSafety, CompileBombTimesOutAndTheCommandFinishes) {
  // 2^40 distinct template instantiations: NVRTC would run for hours; the limit is 3 s here.
  const std::string bomb =
      "template <int N, unsigned long long M> struct Bomb {\n"
      "  static constexpr unsigned long long v = Bomb<N - 1, 2 * M>::v + Bomb<N - 1, 2 * M + 1>::v;\n"
      "};\n"
      "template <unsigned long long M> struct Bomb<0, M> { static constexpr unsigned long long v = M; };\n"
      "__device__ unsigned long long evo_probe_bomb = Bomb<40, 0>::v;\n";
  const double limit_s = 3;
  const CompileRun run = compile_probes("compile-safety-bomb", {{"bomb.cu", kFrontMatter + bomb}},
                                        [&](json& g) { g["limits"]["compile_s"] = limit_s; });
  ASSERT_EQ(run.records.count("0-probe/bomb"), 1u) << run.cli.out;
  EXPECT_EQ(run.records.at("0-probe/bomb")["outcome"], "timeout") << run.records.at("0-probe/bomb")["reason"];
  EXPECT_EQ(run.cli.exit_code, 1) << run.cli.out;
  EXPECT_LT(run.seconds, limit_s + 20) << "evo compile must end soon after the compile limit";
  // A timeout is not cached (it may depend on machine load): the next run tries again.
  EXPECT_TRUE(cached_logs(run.cache).empty()) << "a timed-out compile left a cache entry";
}

TEST(CompileSafety, LogsAreStoredAsValidUtf8AndCapped) {
  // Invalid UTF-8 never reaches NVRTC (it would be echoed into logs and break every JSON
  // writer); terminal control characters that NVRTC echoes are dropped; the log is capped.
  const std::string invalid_utf8 = kFrontMatter + "__device__ int evo_probe_bad = \xff\xfe\xc0\xaf evo_undefined;\n";
  const std::string control_chars =
      kFrontMatter + "__device__ int evo_probe_esc = evo_undefined_\x1b[2J\x1b]0;pwned\x07\x01\x7f;\n";
  // Hundreds of errors: far more log than the 2 KiB cap set below.
  std::string many = kFrontMatter;
  for (int i = 0; i < 300; ++i)
    many += "__device__ int evo_probe_e" + std::to_string(i) + " = evo_undefined_" + std::to_string(i) + ";\n";
  const long cap = 2048;
  const CompileRun run =
      compile_probes("compile-safety-logs",
                     {{"invalid_utf8.cu", invalid_utf8}, {"control_chars.cu", control_chars}, {"many_errors.cu", many}},
                     [&](json& g) { g["limits"]["log_bytes"] = cap; });
  EXPECT_EQ(run.cli.exit_code, 1) << run.cli.out.substr(0, 2000);
  for (const char* id : {"0-probe/invalid_utf8", "0-probe/control_chars", "0-probe/many_errors"}) {
    ASSERT_EQ(run.records.count(id), 1u) << id << ": no record\n" << run.cli.out.substr(0, 2000);
    EXPECT_EQ(run.records.at(id)["outcome"], "compile") << id;
  }
  EXPECT_NE(run.records.at("0-probe/invalid_utf8")["reason"].get<std::string>().find("not valid UTF-8"),
            std::string::npos)
      << run.records.at("0-probe/invalid_utf8")["reason"];
  const auto logs = cached_logs(run.cache);
  ASSERT_EQ(logs.size(), 2u) << "one cache entry per NVRTC failure (the invalid UTF-8 never reached NVRTC)";
  bool truncated = false;
  for (const auto& log : logs) {
    // The cap, plus at most one multi-byte character and the truncation marker.
    EXPECT_LE(log.size(), size_t(cap) + 3 + std::string("\n[log truncated]").size());
    for (unsigned char c : log)
      EXPECT_TRUE(c >= 0x20 || c == '\n' || c == '\t') << "control character " << int(c) << " kept in a stored log";
    truncated |= log.find("[log truncated]") != std::string::npos;
  }
  EXPECT_TRUE(truncated) << "the long log should be cut with a marker";
  for (const auto& [id, r] : run.records)
    for (unsigned char c : r["reason"].get<std::string>())
      EXPECT_TRUE(c >= 0x20) << id << ": control character in reason";
}

TEST(CompileSafety, VariantFileNameThatIsNotPlainIsAUsageError) {
  // The file name becomes the variant id in every record; a byte that is not UTF-8 there made
  // `evo compile` die with an internal JSON error.
  const CompileRun run = compile_probes("compile-safety-file-name", {{"bad\xff\x1b.cu", kFrontMatter + "int x;\n"}});
  EXPECT_EQ(run.cli.exit_code, 1) << run.cli.out;
  EXPECT_NE(run.cli.out.find("variant file name may use only"), std::string::npos) << run.cli.out;
  EXPECT_EQ(run.cli.out.find("internal error"), std::string::npos) << run.cli.out;
}

}  // namespace
}  // namespace evo::test
