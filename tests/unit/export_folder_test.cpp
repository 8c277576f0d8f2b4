// `evo export --out DIR` onto an earlier export (issue 32): only what the earlier manifest lists
// is replaced; the user's own files, in the package's folders too, stay; a folder that is not an
// export is refused. The whole CLI round trip (NVRTC builds the kernels) is in tests/nvrtc.
#include "export/export_folder.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "export/package_writer.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Files = std::map<std::string, std::string>;

// A package as write_package gives it: files plus a manifest listing them and itself.
Files package(const std::string& version, const std::vector<std::string>& names) {
  Files files;
  json list = json::array();
  for (const auto& n : names) {
    files[n] = version + ":" + n;
    list.push_back(n);
  }
  list.push_back("manifest.json");
  files["manifest.json"] = json{{"format", kExportFormat}, {"files", list}}.dump();
  return files;
}

TEST(ExportFolder, ReExportReplacesOnlyWhatTheManifestListsAndKeepsTheUsersFiles) {
  const fs::path out = scratch_dir("export-folder") / "pkg";
  replace_export(out, package("v1", {"src/evo_attn.cpp", "python/evo_attn/__init__.py", "kernels/k0.cubin"}));
  write_text(out / "src" / "my_op.cpp", "mine");
  write_text(out / "python" / "my_helpers.py", "mine");
  write_text(out / "build" / "CMakeCache.txt", "mine");
  write_text(out / "NOTES.md", "mine");
  replace_export(out, package("v2", {"src/evo_attn.cpp", "python/evo_attn/__init__.py", "kernels/k1.cubin"}));
  EXPECT_EQ(read_text(out / "src" / "evo_attn.cpp"), "v2:src/evo_attn.cpp");
  EXPECT_EQ(read_text(out / "kernels" / "k1.cubin"), "v2:kernels/k1.cubin");
  EXPECT_FALSE(fs::exists(out / "kernels" / "k0.cubin")) << "the earlier export's own file goes";
  for (const char* mine : {"src/my_op.cpp", "python/my_helpers.py", "build/CMakeCache.txt", "NOTES.md"})
    EXPECT_EQ(read_text(out / mine), "mine") << mine;
  EXPECT_EQ(previous_export_files(out).size(), 4u);
}

TEST(ExportFolder, FoldersTheEarlierExportLeftEmptyGoTheUsersStay) {
  const fs::path out = scratch_dir("export-folder-empty") / "pkg";
  replace_export(out, package("v1", {"cmake/old/Config.cmake", "src/a.cpp"}));
  write_text(out / "src" / "mine.cpp", "mine");
  replace_export(out, package("v2", {"include/evo_attn.h"}));
  EXPECT_FALSE(fs::exists(out / "cmake")) << "left empty by the earlier export's files";
  EXPECT_TRUE(fs::exists(out / "src" / "mine.cpp"));
  EXPECT_FALSE(fs::exists(out / "src" / "a.cpp"));
}

TEST(ExportFolder, APackageFileOnAUsersFileStopsBeforeAnythingChanges) {
  const fs::path out = scratch_dir("export-folder-collision") / "pkg";
  replace_export(out, package("v1", {"src/a.cpp"}));
  write_text(out / "src" / "b.cpp", "mine");
  std::string what;
  EXPECT_EQ(exit_code_of([&] { replace_export(out, package("v2", {"src/a.cpp", "src/b.cpp"})); }, &what), kExitUsage);
  EXPECT_NE(what.find("src/b.cpp is not from the earlier export"), std::string::npos) << what;
  EXPECT_EQ(read_text(out / "src" / "b.cpp"), "mine");
  EXPECT_EQ(read_text(out / "src" / "a.cpp"), "v1:src/a.cpp") << "nothing changed";
}

TEST(ExportFolder, AFolderThatIsNotAnExportIsRefused) {
  const fs::path dir = scratch_dir("export-folder-refused");
  std::string what;
  write_text(dir / "notes" / "README.md", "mine");
  EXPECT_EQ(exit_code_of([&] { replace_export(dir / "notes", package("v1", {"src/a.cpp"})); }, &what), kExitUsage);
  EXPECT_NE(what.find("not empty and holds no earlier export"), std::string::npos) << what;
  // An export from before the list: its files cannot be told from the user's.
  write_text(dir / "old" / "manifest.json", json{{"format", kExportFormat}}.dump());
  write_text(dir / "old" / "src" / "mine.cpp", "mine");
  EXPECT_EQ(exit_code_of([&] { replace_export(dir / "old", package("v1", {"src/a.cpp"})); }, &what), kExitUsage);
  EXPECT_NE(what.find("lists no files"), std::string::npos) << what;
  EXPECT_EQ(read_text(dir / "old" / "src" / "mine.cpp"), "mine");
  // A manifest that lists a path outside the folder.
  write_text(dir / "evil" / "manifest.json", json{{"format", kExportFormat}, {"files", {"../notes/README.md"}}}.dump());
  EXPECT_EQ(exit_code_of([&] { replace_export(dir / "evil", package("v1", {"src/a.cpp"})); }, &what), kExitUsage);
  EXPECT_NE(what.find("not a path inside the folder"), std::string::npos) << what;
  EXPECT_EQ(read_text(dir / "notes" / "README.md"), "mine");
  // Empty and missing folders are fine.
  EXPECT_TRUE(previous_export_files(dir / "absent").empty());
}

}  // namespace
}  // namespace evo::test
