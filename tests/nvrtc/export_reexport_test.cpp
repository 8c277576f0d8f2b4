// `evo export --out DIR` onto an earlier export, end to end (issue 32): the second export replaces
// only what the first one's manifest lists; the user's own files in the package's folders stay.
// (export/export_folder.h's rules are unit-tested in tests/unit/export_folder_test.cpp.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).generic_string());
  return out;
}

TEST(ExportCli, ReExportKeepsTheUsersFilesAndReplacesOnlyTheManifestsOwn) {
  const fs::path dir = scratch_dir("export-reexport");
  const fs::path pops = dir / "pops", out = dir / "pkg";
  auto r = run_evo("population rebuild --results-dir " + shell_quote(committed_results()) + " --populations-dir " +
                   shell_quote(pops));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string export_cmd =
      "export --gpu nvidia-h200 --populations-dir " + shell_quote(pops) + " --out " + shell_quote(out) + " --task ";
  r = run_evo(export_cmd + "fp16-d64,fp16-d128-causal");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json first = json::parse(read_text(out / "manifest.json"));
  const std::set<std::string> listed = first["files"].get<std::set<std::string>>();
  EXPECT_EQ(listed, files_under(out)) << "the manifest lists every file the export wrote";
  EXPECT_TRUE(listed.count("manifest.json"));

  for (const char* mine : {"src/my_op.cpp", "python/my_helpers.py", "kernels/notes.txt", "NOTES.md"})
    write_text(out / mine, std::string("mine: ") + mine);
  r = run_evo(export_cmd + "fp16-d64");  // fewer kernels: the first export's others must go
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* mine : {"src/my_op.cpp", "python/my_helpers.py", "kernels/notes.txt", "NOTES.md"})
    EXPECT_EQ(read_text(out / mine), std::string("mine: ") + mine) << mine;
  const json second = json::parse(read_text(out / "manifest.json"));
  std::set<std::string> expected = second["files"].get<std::set<std::string>>();
  for (const char* mine : {"src/my_op.cpp", "python/my_helpers.py", "kernels/notes.txt", "NOTES.md"})
    expected.insert(mine);
  EXPECT_EQ(files_under(out), expected) << "nothing of the first export is left beside the second";
  EXPECT_LT(second["kernels"].size(), first["kernels"].size());

  // A folder of the user's that is not an export: refused before anything is compiled or touched.
  write_text(dir / "mine" / "README.md", "mine");
  r = run_evo("export --gpu nvidia-h200 --populations-dir " + shell_quote(pops) + " --task fp16-d64 --out " +
              shell_quote(dir / "mine"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not empty and holds no earlier export"), std::string::npos) << r.out;
  EXPECT_EQ(files_under(dir / "mine"), std::set<std::string>{"README.md"});
}

}  // namespace
}  // namespace evo::test
