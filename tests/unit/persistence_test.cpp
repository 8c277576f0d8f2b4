// Persistence under SIGKILL and concurrency: the results logs and the populations derived from
// them must always parse, and nothing evo reported as written may be lost (docs/safety.md §4).
// The vehicle is `evo merge`, killed at random points hundreds of times; then eight processes
// appending to one log at once; then damaged and future-version population files.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/errors.h"
#include "store/population.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using test::read_text;
using test::run_evo;
using test::scratch_dir;
using test::write_text;

// Where write_population puts a derived population.
fs::path population_file(const fs::path& dir, const Population& pop) {
  return population_path(dir, pop.gpu, pop.task, pop.benchmark.value_or(""));
}

// A run record as `evo run` writes it (docs/records.md), with a unique candidate_id so that
// "printed as written" maps to exactly one line. Identities (variant, params, task, source)
// repeat across records so that populations pick latest and best among several.
json make_record(std::mt19937_64& rng, const std::string& run_id, size_t serial) {
  static const char* gpus[] = {"nvidia-h200", "nvidia-a100-sxm4-80gb", "nvidia-l40s", "nvidia-h100-80gb-hbm3"};
  static const char* tasks[] = {"fp16-d64", "fp16-d128", "bf16-d64", "bf16-d128-causal"};
  static const char* outcomes[] = {"ok", "ok", "ok", "correctness", "timeout", "crash", "nondeterministic"};
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  const int stage = int(pick(4));
  const std::string variant = fmt::format("{}-stage/v{}", stage, pick(4));
  const std::string outcome = outcomes[pick(7)];
  const double median = 50 + double(rng() % 100000) / 100.0;
  json timing = json::array();
  for (int s = 0; s < 3; ++s)
    timing.push_back({{"shape", fmt::format("8x16x16x{}x{}x64", 512 << s, 512 << s)},
                      {"set", "long"},
                      {"median_us", median * (1 + s)},
                      {"p10_us", median * (1 + s) * 0.99},
                      {"p90_us", median * (1 + s) * 1.02},
                      {"n", 40},
                      {"rse", 0.003},
                      {"tflops", 100.0 + s}});
  json r = {
      {"schema_version", "1.0"},
      {"kind", "run"},
      {"run_id", run_id},
      {"time",
       fmt::format("2026-11-{:02}T{:02}:{:02}:{:02}Z", 1 + serial % 28, serial % 24, serial % 60, (serial / 60) % 60)},
      {"candidate_id", fmt::format("{:016x}", std::hash<std::string>{}(run_id) ^ (serial * 0x9E3779B97F4A7C15ull))},
      {"variant", variant},
      {"stage", stage},
      {"parent", nullptr},
      {"source_path", "variants/" + variant + ".cu"},
      {"source_sha256", fmt::format("{:064x}", pick(3))},
      {"params", {{"BLOCK_M", 32 << pick(3)}, {"BLOCK_N", 64}}},
      {"task", tasks[pick(4)]},
      {"arch", "sm_90a"},
      {"origin", "domain"},
      {"env", {{"gpu", "test"}, {"gpu_key", gpus[pick(4)]}, {"cc", 90}, {"sms", 132}}},
      {"compile", {{"cached", true}, {"resources", {{"registers", 128}}}, {"launch", {{"threads", 128}}}}},
      {"outcome", outcome},
      {"reason", outcome == "ok" ? "" : "synthetic failure for the persistence test"},
      {"gates", {{"correctness", {{"pass", outcome == "ok"}, {"checks", json::array()}}}}},
      {"timing", outcome == "ok" ? timing : json::array()},
      {"pruned", false},
      {"gpu_seconds", 1.5}};
  r["fitness"] = outcome == "ok" ? json{{"geomean_median_us", median * 1.8},
                                        {"geomean_p90_us", median * 1.85},
                                        {"shapes", 3},
                                        {"complete", true}}
                                 : json(nullptr);
  return r;
}

// `machines` logs of `per_file` records each, as other machines would have written them.
std::vector<fs::path> make_inputs(const fs::path& dir, int machines, int per_file, uint64_t seed,
                                  std::set<std::string>* ids = nullptr) {
  std::mt19937_64 rng(seed);
  std::vector<fs::path> files;
  for (int m = 0; m < machines; ++m) {
    const std::string run_id = fmt::format("20261121T0{}0000Z-{:04x}", m, seed % 0xffff);
    std::string text;
    for (int i = 0; i < per_file; ++i) {
      json r = make_record(rng, run_id, size_t(m) * 100000 + size_t(i));
      if (ids) ids->insert(r["candidate_id"].get<std::string>());
      text += r.dump() + "\n";
    }
    files.push_back(dir / fmt::format("machine{}.jsonl", m));
    write_text(files.back(), text);
  }
  return files;
}

// `evo merge` as a child with its stdout on a pipe we drain while it runs.
class MergeProcess {
 public:
  MergeProcess(const std::vector<fs::path>& inputs, const fs::path& results, const fs::path& populations) {
    args_ = {EVO_BINARY, "merge"};
    for (const auto& f : inputs) args_.push_back(f.string());
    args_.insert(args_.end(), {"--results-dir", results.string(), "--populations-dir", populations.string()});
    std::vector<char*> argv;
    for (auto& a : args_) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_fd_ = fds[0];
    ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  }
  ~MergeProcess() {
    if (out_fd_ >= 0) ::close(out_fd_);
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Drains stdout until `deadline` or the child's exit; true if it is still running.
  bool run_until(Clock::time_point deadline) {
    while (true) {
      drain();
      if (exited()) return false;
      const auto now = Clock::now();
      if (now >= deadline) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      if (left >= 2) {
        pollfd p{out_fd_, POLLIN, 0};
        ::poll(&p, 1, int(left - 1));
      }  // under 2 ms: spin, so kills land microseconds apart
    }
  }
  // SIGKILL; true if the signal is what ended it (it had not finished on its own).
  bool kill_now() {
    ::kill(pid_, SIGKILL);
    return wait_exit() == -SIGKILL;
  }
  int wait_exit() {
    if (!reaped_) {
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
    }
    int flags = ::fcntl(out_fd_, F_GETFL);
    ::fcntl(out_fd_, F_SETFL, flags & ~O_NONBLOCK);
    drain();  // to EOF: everything it printed before it died
    return WIFSIGNALED(status_) ? -WTERMSIG(status_) : WEXITSTATUS(status_);
  }
  // Candidate ids from complete "wrote <id>" lines.
  std::vector<std::string> written() const {
    std::vector<std::string> ids;
    size_t start = 0;
    for (size_t nl = out_.find('\n'); nl != std::string::npos; start = nl + 1, nl = out_.find('\n', start))
      if (out_.compare(start, 6, "wrote ") == 0) ids.push_back(out_.substr(start + 6, nl - start - 6));
    return ids;
  }
  const std::string& output() const { return out_; }

 private:
  void drain() {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(out_fd_, buf, sizeof(buf))) > 0) out_.append(buf, size_t(n));
  }
  bool exited() {
    if (reaped_) return true;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  int out_fd_ = -1, status_ = 0;
  bool reaped_ = false;
  std::string out_;
};

struct StoreCheck {
  size_t files = 0, records = 0;
  std::set<std::string> ids;
  std::vector<std::string> failures;
};

// Every results file parses (a torn last line may only be a warning), every population file
// parses and validates.
StoreCheck check_store(const fs::path& results, const fs::path& populations) {
  StoreCheck c;
  if (!fs::exists(results)) return c;  // killed before it created the results dir: nothing written
  const RecordSet rs = read_records(results);
  for (const auto& p : rs.problems) c.failures.push_back("results: " + p);
  for (const auto& w : rs.warnings)
    if (w.find("torn last line") == std::string::npos) c.failures.push_back("results warning: " + w);
  for (const auto& r : rs.records) c.ids.insert(r["candidate_id"].get<std::string>());
  c.records = rs.records.size();
  for (const auto& e : fs::directory_iterator(results))
    if (e.path().extension() == ".jsonl") ++c.files;
  if (fs::exists(populations))
    for (const auto& e : fs::recursive_directory_iterator(populations)) {
      if (!e.is_regular_file() || e.path().extension() != ".json") continue;  // *.json.tmp.*: never renamed in
      ++c.files;
      try {
        read_population(e.path());
      } catch (const std::exception& ex) {
        c.failures.push_back(std::string("population: ") + ex.what());
      }
    }
  return c;
}

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

TEST(Persistence, MergeKilledAtRandomPointsLosesNothing) {
  const fs::path dir = scratch_dir("persistence-kill");
  const fs::path results = dir / "results", populations = dir / "populations";
  std::set<std::string> all_ids;
  const auto inputs = make_inputs(dir / "incoming", 4, 300, 20261121, &all_ids);

  // One complete merge: when the first record lands, how long it all takes, and a complete
  // repo to start the population-phase rounds from.
  Clock::duration first_write{}, total{};
  {
    const auto t0 = Clock::now();
    MergeProcess m(inputs, results, populations);
    while (m.run_until(Clock::now() + std::chrono::milliseconds(1)) && m.written().empty()) {
    }
    first_write = Clock::now() - t0;
    ASSERT_EQ(m.wait_exit(), 0) << m.output();
    total = Clock::now() - t0;
    ASSERT_EQ(m.written().size(), all_ids.size());
  }
  const fs::path complete = dir / "complete";
  copy_tree(results, complete / "results");
  copy_tree(populations, complete / "populations");
  {
    const double pop_files = double(std::distance(fs::recursive_directory_iterator(populations), {}));
    ASSERT_GE(pop_files, 8) << "the kill test wants many population files to interrupt";
  }
  // On a complete repo a run appends nothing: it reads, derives and rewrites the populations.
  double rederive_s = 0;
  {
    const auto t0 = Clock::now();
    MergeProcess m(inputs, results, populations);
    ASSERT_EQ(m.wait_exit(), 0) << m.output();
    rederive_s = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  const double first_s = std::chrono::duration<double>(first_write).count();
  const double total_s = std::chrono::duration<double>(total).count();

  // Rounds of 20 kills. Even rounds start from an empty repo and kill while records are being
  // appended (delays log-uniform from 1 µs to 100 ms after the first write, a fifth before
  // it); odd rounds start from the complete repo and kill anywhere in the re-derivation and
  // the population writes.
  std::mt19937_64 rng(4711);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  size_t kills = 0, attempts = 0, files_checked = 0, lost = 0, reported = 0;
  const size_t rounds = 10, per_round = 20;
  for (size_t round = 0; round < rounds; ++round) {
    const bool appending = round % 2 == 0;
    if (appending) {
      fs::remove_all(results);
      fs::remove_all(populations);
    } else {
      copy_tree(complete / "results", results);
      copy_tree(complete / "populations", populations);
    }
    for (size_t round_kills = 0; round_kills < per_round;) {
      ASSERT_LT(++attempts, 4 * rounds * per_round) << "runs keep finishing before the kill";
      const double delay_s = !appending        ? unit(rng) * rederive_s * 0.9
                             : unit(rng) < 0.2 ? unit(rng) * first_s
                                               : first_s + 1e-6 * std::pow(1e5, unit(rng));
      MergeProcess m(inputs, results, populations);
      const bool alive = m.run_until(Clock::now() + std::chrono::nanoseconds(long(delay_s * 1e9)));
      if (alive && m.kill_now()) {
        ++kills;
        ++round_kills;
      } else {
        m.wait_exit();
      }
      const StoreCheck c = check_store(results, populations);
      files_checked += c.files;
      for (const auto& f : c.failures) ADD_FAILURE() << "after kill " << kills << " (round " << round << "): " << f;
      for (const auto& id : m.written()) {
        ++reported;
        if (!c.ids.count(id)) {
          ++lost;
          ADD_FAILURE() << "candidate " << id << " was reported written, then lost (kill " << kills << ")";
        }
      }
      if (HasFailure()) return;
    }
  }
  // Finally let one run finish: every input record present exactly once.
  MergeProcess last(inputs, results, populations);
  ASSERT_EQ(last.wait_exit(), 0) << last.output();
  const RecordSet rs = read_records(results);
  EXPECT_TRUE(rs.problems.empty());
  std::multiset<std::string> ids;
  for (const auto& r : rs.records) ids.insert(r["candidate_id"].get<std::string>());
  EXPECT_EQ(ids.size(), all_ids.size()) << "duplicates or missing records after the final merge";
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()), all_ids);
  for (const auto& [key, pop] : derive_populations(rs.records))
    EXPECT_EQ(population_json(read_population(population_file(populations, pop))), population_json(pop))
        << key << " differs from the records' population";

  RecordProperty("kills", int(kills));
  RecordProperty("files_checked", int(files_checked));
  RecordProperty("records_lost", int(lost));
  std::cout << fmt::format(
      "kills={} files_checked={} records_lost={} (records reported written and checked: {}; "
      "runs that finished before their kill: {}; full merge {:.0f} ms, re-derive {:.0f} ms)\n",
      kills, files_checked, lost, reported, attempts - kills, total_s * 1000, rederive_s * 1000);
}

TEST(Persistence, EightProcessesAppendingToOneLogLoseNoLine) {
  const fs::path dir = scratch_dir("persistence-appenders");
  const fs::path log = dir / "results" / "shared.jsonl";
  const int writers = 8, each = 250;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> pids;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 0) ::_exit(3);  // all start when the parent closes the pipe
      std::mt19937_64 rng{uint64_t(w)};
      try {
        for (int i = 0; i < each; ++i) append_record(log, make_record(rng, fmt::format("writer{}", w), size_t(i)));
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(0);  // not exit(): the scratch dir's cleanup belongs to the parent
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << pid << " failed";
  }
  const std::string text = read_text(log);
  EXPECT_EQ(size_t(std::count(text.begin(), text.end(), '\n')), size_t(writers * each));
  const RecordSet rs = read_records(log);
  EXPECT_TRUE(rs.problems.empty()) << rs.problems.front();
  EXPECT_TRUE(rs.warnings.empty());
  std::set<std::string> ids;
  for (const auto& r : rs.records) ids.insert(r["candidate_id"].get<std::string>());
  EXPECT_EQ(ids.size(), size_t(writers * each)) << "a line was lost or interleaved";
  std::cout << fmt::format("concurrent appenders: writers={} lines_expected={} distinct_records_read={} lost={}\n",
                           writers, writers * each, ids.size(), writers * each - int(ids.size()));
}

TEST(Persistence, EightConcurrentMergesLoseNoRecord) {
  const fs::path dir = scratch_dir("persistence-merges");
  const fs::path results = dir / "results", populations = dir / "populations";
  std::set<std::string> all_ids;
  std::vector<std::unique_ptr<MergeProcess>> merges;
  for (int w = 0; w < 8; ++w) {
    auto files = make_inputs(dir / fmt::format("incoming{}", w), 1, 100, 1000 + uint64_t(w), &all_ids);
    merges.push_back(std::make_unique<MergeProcess>(files, results, populations));
  }
  for (auto& m : merges) EXPECT_EQ(m->wait_exit(), 0) << m->output();
  const std::string text = read_text(results / "merged.jsonl");
  EXPECT_EQ(size_t(std::count(text.begin(), text.end(), '\n')), all_ids.size());
  const StoreCheck c = check_store(results, populations);
  EXPECT_TRUE(c.failures.empty()) << c.failures.front();
  EXPECT_EQ(c.ids, all_ids);
  const RecordSet rs = read_records(results);
  for (const auto& [key, pop] : derive_populations(rs.records))
    EXPECT_EQ(population_json(read_population(population_file(populations, pop))), population_json(pop)) << key;
  size_t found = 0;
  for (const auto& id : all_ids) found += c.ids.count(id);
  std::cout << fmt::format("concurrent merges: writers=8 records_expected={} records_present={} lost={}\n",
                           all_ids.size(), found, all_ids.size() - found);
}

TEST(Persistence, MergeSkipsDuplicatesAndBadLinesAndNamesThem) {
  const fs::path dir = scratch_dir("persistence-merge-input");
  const fs::path results = dir / "results", populations = dir / "populations";
  std::set<std::string> ids;
  auto files = make_inputs(dir / "incoming", 2, 20, 99, &ids);
  // A bad line in the middle and a torn one at the end of the first file.
  std::string text = read_text(files[0]);
  text.insert(text.find('\n') + 1, "{\"schema_version\": \"1.0\", \"kind\": \"run\"}\nnot json at all\n");
  text += "{\"schema_version\": \"1.0\", \"kind\": \"ru";
  write_text(files[0], text);
  auto r = run_evo("merge " + test::shell_quote(files[0]) + " " + test::shell_quote(files[1]) + " --results-dir " +
                   test::shell_quote(results) + " --populations-dir " + test::shell_quote(populations));
  EXPECT_EQ(r.exit_code, 1) << "invalid lines were skipped: exit 1 so scripts notice\n" << r.out;
  EXPECT_NE(r.out.find("machine0.jsonl:2: field"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("machine0.jsonl:3: not valid JSON"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torn last line"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged 40 records"), std::string::npos) << r.out;
  // Again, plus the merged file itself: nothing new.
  r = run_evo("merge " + test::shell_quote(files[1]) + " " + test::shell_quote(results / "merged.jsonl") +
              " --results-dir " + test::shell_quote(results) + " --populations-dir " + test::shell_quote(populations));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("merged 0 records"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wrote "), std::string::npos) << r.out;
  const StoreCheck c = check_store(results, populations);
  EXPECT_EQ(c.ids, ids);
  EXPECT_EQ(c.records, ids.size());
  // A missing input is a usage error that names it, before anything is written.
  r = run_evo("merge " + test::shell_quote(dir / "nope.jsonl") + " --results-dir " + test::shell_quote(dir / "other"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("nope.jsonl"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "other" / "merged.jsonl"));
}

// A population file damaged on disk, or written by a future evo, is refused with a message
// that names it and says how to restore it; `evo population rebuild` restores it from the logs.
TEST(Persistence, DamagedOrFutureVersionPopulationIsRefusedAndRebuilt) {
  const fs::path dir = scratch_dir("persistence-population");
  const fs::path results = dir / "results", populations = dir / "populations";
  const auto files = make_inputs(dir / "incoming", 1, 200, 7);
  fs::create_directories(results);
  fs::copy_file(files[0], results / "run.jsonl");
  auto r = run_evo("population rebuild --results-dir " + test::shell_quote(results) + " --populations-dir " +
                   test::shell_quote(populations));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto derived = derive_populations(read_records(results).records);
  ASSERT_FALSE(derived.empty());
  const fs::path file = population_file(populations, derived.begin()->second);
  const std::string good = read_text(file);

  auto expect_refused = [&](const std::string& text, const std::string& why, const std::string& expected) {
    write_text(file, text);
    try {
      read_population(file);
      ADD_FAILURE() << why << ": read_population accepted it";
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage) << why;
      const std::string m = e.what();
      EXPECT_NE(m.find(file.string()), std::string::npos) << why << ": the message must name the file: " << m;
      EXPECT_NE(m.find("evo population rebuild"), std::string::npos)
          << why << ": the message must say how to restore: " << m;
      EXPECT_NE(m.find(expected), std::string::npos) << why << ": " << m;
    }
    r = run_evo("population rebuild --results-dir " + test::shell_quote(results) + " --populations-dir " +
                test::shell_quote(populations));
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(read_text(file), good) << why << ": rebuild did not restore the file from the logs";
  };
  expect_refused(good.substr(0, good.size() / 2), "truncated file", "not a valid population JSON object");
  expect_refused(std::string("\x00\x01garbage\xff", 10), "binary garbage", "not a valid population JSON object");
  expect_refused("[1, 2, 3]", "a JSON list", "not a valid population JSON object");
  expect_refused("{}", "an empty object", "missing schema_version");
  json future = json::parse(good);
  future["schema_version"] = "2.0";
  expect_refused(future.dump(2), "a future major version", "schema_version 2.0 is not supported");
  json broken = json::parse(good);
  broken["stages"] = json::object();
  broken["stages"]["0"] = json::array({json{{"rank", 1}}});
  expect_refused(broken.dump(2), "an elite without its fields", "has an elite without");

  // A newer minor version is read, with a warning.
  json minor = json::parse(good);
  minor["schema_version"] = "1.7";
  minor["a_field_from_the_future"] = true;
  write_text(file, minor.dump(2));
  std::string warning;
  EXPECT_NO_THROW(read_population(file, &warning));
  EXPECT_NE(warning.find("newer"), std::string::npos) << warning;
}

}  // namespace
}  // namespace evo
