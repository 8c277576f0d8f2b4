// Figures in the docs come from the records (report/doc_figures.h, `evo docs`): each marked
// figure is regenerated from the comparison, a bad mark is a usage error naming the line, and the
// committed README.md and docs/*.md are what their records give.
#include "report/doc_figures.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "report/compare.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json doc_timing(const std::string& shape, double median) {
  return {{"shape", shape},
          {"median_us", median},
          {"p10_us", median * 0.99},
          {"p90_us", median * 1.01},
          {"stdev_us", median * 0.003},
          {"n", 60},
          {"rse", 0.0004}};
}

json doc_run(const std::string& task, int stage, const std::string& id, std::vector<json> timings) {
  double log_sum = 0;
  for (const auto& t : timings) log_sum += std::log(t["median_us"].get<double>());
  return {{"schema_version", "1.0"},
          {"kind", "run"},
          {"run_id", "r1"},
          {"time", "2026-11-21T00:00:00Z"},
          {"candidate_id", id},
          {"variant", std::to_string(stage) + "-s" + std::to_string(stage) + "/v"},
          {"stage", stage},
          {"params", json::object()},
          {"task", task},
          {"source_sha256", "ab"},
          {"env", {{"gpu_key", "nvidia-h200"}}},
          {"outcome", "ok"},
          {"reason", ""},
          {"timing", timings},
          {"fitness", {{"geomean_median_us", std::exp(log_sum / double(timings.size()))}, {"complete", true}}}};
}

json doc_peer(const std::string& task, const std::string& backend, const std::string& shape, double median) {
  return {{"schema_version", "1.0"},
          {"kind", "peer"},
          {"run_id", "p"},
          {"time", "2026-11-21T00:00:00Z"},
          {"candidate_id", "p-" + backend + shape},
          {"variant", "peer/pytorch-sdpa-" + backend},
          {"stage", -1},
          {"params", json::object()},
          {"task", task},
          {"shape", shape},
          {"source_sha256", "cd"},
          {"env", {{"gpu_key", "nvidia-h200"}}},
          {"outcome", "ok"},
          {"reason", ""},
          {"timing", json::array({doc_timing(shape, median)})}};
}

const std::string kShort = "1x8x8x512x512x64", kLong = "1x16x16x4096x4096x64";

// fp16-d64: stage 0 then stage 1 twice as fast; bf16-d64: stage 0 only; flash peers on fp16-d64.
Comparison sample() {
  CompareInput in;
  in.records = {doc_run("fp16-d64", 0, "a", {doc_timing(kShort, 100), doc_timing(kLong, 4000)}),
                doc_run("fp16-d64", 1, "b", {doc_timing(kShort, 50), doc_timing(kLong, 2000)}),
                doc_run("bf16-d64", 0, "c", {doc_timing(kShort, 110), doc_timing(kLong, 4400)})};
  in.peers = {doc_peer("fp16-d64", "flash", kShort, 40), doc_peer("fp16-d64", "flash", kLong, 2000)};
  return build_comparison(in, {});
}

TEST(DocFigures, SummaryTableHasEveryTaskListedOnesFirst) {
  const std::string t = render_figure(sample(), "summary", {{"tasks", "fp16-d64"}});
  EXPECT_EQ(t,
            "\n| task | stages | fastest | × first stage (fitness) | fastest × PyTorch flash | fastest × cuDNN |\n"
            "|---|---|---|---:|---:|---:|\n"
            "| fp16-d64 | 0 → 1 | 1 | 2.00× | 0.89× | - |\n"
            "| bf16-d64 | 0 → 0 | 0 | - | - | - |\n");
}

TEST(DocFigures, SummaryQuotesTheFastestStageNotTheLast) {
  CompareInput in;
  in.records = {doc_run("fp16-d64", 0, "a", {doc_timing(kShort, 100), doc_timing(kLong, 4000)}),
                doc_run("fp16-d64", 1, "b", {doc_timing(kShort, 50), doc_timing(kLong, 2000)}),
                doc_run("fp16-d64", 2, "c", {doc_timing(kShort, 60), doc_timing(kLong, 2400)})};
  const std::string t =
      render_figure(build_comparison(in, {}), "summary", {{"tasks", "fp16-d64"}, {"peers", "pytorch-sdpa-flash"}});
  EXPECT_NE(t.find("| fp16-d64 | 0 → 2 | 1 | 2.00× | - |"), std::string::npos) << t;
}

TEST(DocFigures, FitnessTableHasAColumnPerTaskAndTheChangePerStage) {
  const std::string t = render_figure(sample(), "fitness-table", {{"tasks", "fp16-d64,bf16-d64"}});
  EXPECT_EQ(t,
            "\n| stage | fp16-d64 | bf16-d64 |\n|---|---:|---:|\n"
            "| 0 s0 | 632.5 | 695.7 |\n"
            "| 1 s1 | 316.2 (-50.0 %) | - |\n");
}

TEST(DocFigures, InlineFiguresOfAStageAndItsShapes) {
  const Comparison c = sample();
  EXPECT_EQ(render_figure(c, "stage", {{"task", "fp16-d64"}}), "316.2");
  EXPECT_EQ(render_figure(c, "stage", {{"task", "fp16-d64"}, {"stage", "0"}}), "632.5");
  EXPECT_EQ(render_figure(c, "stage", {{"task", "fp16-d64"}, {"what", "base"}}), "2.00×");
  EXPECT_EQ(render_figure(c, "stage", {{"task", "fp16-d64"}, {"what", "prev"}}), "-50.0 %");
  EXPECT_EQ(render_figure(c, "stage", {{"task", "fp16-d64"}, {"what", "pytorch-sdpa-flash"}}), "0.89×");
  EXPECT_EQ(render_figure(c, "shapes", {{"tasks", "fp16-d64"}, {"what", "pytorch-sdpa-flash"}, {"list", "1"}}),
            "0.80 / 1.00×");
  EXPECT_EQ(render_figure(c, "shapes", {{"tasks", "fp16-d64"}, {"what", "prev"}}), "-50.0 %");
  const double long_tflops = 4.0 * 16 * 4096 * 4096 * 64 / 2000e6, short_tflops = 4.0 * 8 * 512 * 512 * 64 / 50e6;
  EXPECT_EQ(render_figure(c, "shapes", {{"tasks", "fp16-d64"}, {"min_seq", "2048"}}),
            fmt::format("{:.0f}", long_tflops));
  EXPECT_EQ(render_figure(c, "shapes", {{"tasks", "fp16-d64"}}),
            fmt::format("{:.0f}–{:.0f}", short_tflops, long_tflops));
  EXPECT_EQ(render_figure(c, "elite", {{"task", "fp16-d64"}, {"what", "variant"}}), "1-s1/v");
  EXPECT_EQ(render_figure(c, "elite", {{"task", "fp16-d64"}, {"what", "technique"}}), "-");
  // Two tasks' stage 0 on one shape: 4000 and 4400 µs.
  EXPECT_EQ(render_figure(c, "shapes", {{"tasks", "fp16-d64,bf16-d64"}, {"stage", "0"}, {"shape", kLong}}),
            fmt::format("{:.0f}–{:.0f}", long_tflops / 2 / 1.1, long_tflops / 2));
}

TEST(DocFigures, WhatTheRecordsDoNotHaveIsAUsageErrorNamingIt) {
  const Comparison c = sample();
  auto message = [&](const std::string& name, const FigureArgs& args) {
    try {
      render_figure(c, name, args);
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("chart", {}).find("unknown figure 'chart'"), std::string::npos);
  EXPECT_NE(message("summary", {{"colour", "red"}}).find("no argument 'colour'"), std::string::npos);
  EXPECT_NE(message("summary", {{"tasks", "fp8-d64"}}).find("no records of task 'fp8-d64'"), std::string::npos);
  EXPECT_NE(message("stage", {{"task", "fp16-d64"}, {"stage", "7"}}).find("no elite of stage 7"), std::string::npos);
  EXPECT_NE(message("stage", {{"task", "bf16-d64"}, {"what", "pytorch-sdpa-flash"}}).find("has no what="),
            std::string::npos);
  EXPECT_NE(message("shapes", {{"tasks", "fp16-d64"}, {"min_seq", "99999"}}).find("no shape has"), std::string::npos);
  EXPECT_NE(message("stage", {}).find("needs task="), std::string::npos);
}

TEST(DocFigures, FillReplacesOnlyTheTextBetweenTheMarks) {
  const std::string doc =
      "# Title\nStage 1 is <!-- evo:figures stage task=fp16-d64 what=base -->9.99×<!-- /evo:figures --> stage 0.\n"
      "<!-- evo:figures fitness-table tasks=fp16-d64 -->\nold table\n<!-- /evo:figures -->\nTail.\n";
  const FilledDoc f = fill_figures(doc, sample(), "doc.md");
  EXPECT_EQ(f.figures, 2);
  EXPECT_EQ(
      f.text,
      "# Title\nStage 1 is <!-- evo:figures stage task=fp16-d64 what=base -->2.00×<!-- /evo:figures --> stage 0.\n"
      "<!-- evo:figures fitness-table tasks=fp16-d64 -->\n| stage | fp16-d64 | bf16-d64 |\n|---|---:|---:|\n"
      "| 0 s0 | 632.5 | 695.7 |\n| 1 s1 | 316.2 (-50.0 %) | - |\n<!-- /evo:figures -->\nTail.\n");
  EXPECT_EQ(fill_figures(f.text, sample(), "doc.md").text, f.text) << "filling twice changes nothing";
  // Quoted marks (after a backtick, inside a fence) are examples: left as they are.
  const std::string quoted =
      "Write `<!-- evo:figures stage -->` ...\n```\n<!-- evo:figures nope -->x<!-- /evo:figures -->\n```\n";
  EXPECT_EQ(fill_figures(quoted, sample(), "doc.md").text, quoted);
  EXPECT_EQ(fill_figures(quoted, sample(), "doc.md").figures, 0);
}

TEST(DocFigures, BrokenMarksNameTheLine) {
  auto message = [](const std::string& doc) {
    try {
      fill_figures(doc, sample(), "doc.md");
    } catch (const EvoError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("a\n<!-- evo:figures stage task=fp16-d64 -->1.0"),
            "doc.md:2: figure 'stage' has no <!-- /evo:figures --> before the next mark");
  EXPECT_EQ(message("<!-- evo:figures stage task -->x<!-- /evo:figures -->"), "doc.md:1: 'task' is not key=value");
  EXPECT_EQ(message("\n\n<!-- evo:figures nope -->x<!-- /evo:figures -->"),
            "doc.md:3: unknown figure 'nope' (summary, fitness-table, stage, shapes, elite)");
}

TEST(DocsCli, StaleDocIsNamedByCheckAndFixedByDocs) {
  const fs::path dir = test::scratch_dir("docs-cli");
  fs::create_directories(dir / "results" / "peers");
  std::string lines;
  for (const auto& r :
       {doc_run("fp16-d64", 0, "a", {doc_timing(kShort, 100)}), doc_run("fp16-d64", 1, "b", {doc_timing(kShort, 50)})})
    lines += r.dump() + "\n";
  test::write_text(dir / "results" / "r.jsonl", lines);
  const fs::path doc = dir / "doc.md";
  test::write_text(doc, "x <!-- evo:figures stage task=fp16-d64 what=base -->1.00×<!-- /evo:figures -->\n");
  const std::string args = "docs --results '" + (dir / "results").string() + "' '" + doc.string() + "'";
  auto r = test::run_evo(args + " --check");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("run `evo docs`"), std::string::npos) << r.out;
  EXPECT_EQ(test::read_text(doc), "x <!-- evo:figures stage task=fp16-d64 what=base -->1.00×<!-- /evo:figures -->\n");
  r = test::run_evo(args);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(test::read_text(doc), "x <!-- evo:figures stage task=fp16-d64 what=base -->2.00×<!-- /evo:figures -->\n");
  EXPECT_EQ(test::run_evo(args + " --check").exit_code, 0);
}

// Like CompareCli.RepoCompareMdIsUpToDate: the figures in the committed docs are the records'.
TEST(DocsCli, RepoDocsAreUpToDate) {
  const auto r = test::run_evo("docs --check --results " + test::shell_quote(test::committed_results()),
                               "EVO_ROOT='" + test::source_root().string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << "a doc is stale: run `evo docs` and commit it";
  EXPECT_NE(r.out.find("README.md: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stages.md: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace evo
