// evo docs [--check] [--results DIR] [FILE...]: the figures marked in the docs
// (`<!-- evo:figures NAME key=value -->…<!-- /evo:figures -->`, report/doc_figures.h) regenerated
// from the records, as COMPARE.md is. Without FILEs: README.md and every docs/*.md with a mark.
// --check writes nothing and exits 1 naming each doc whose figures differ from the records.
#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "core/errors.h"
#include "core/paths.h"
#include "report/compare.h"
#include "report/doc_figures.h"
#include "store/atomic_file.h"

namespace evo {

namespace {

namespace fs = std::filesystem;

struct DocsOptions {
  std::vector<std::string> files;
  std::string results;
  bool check = false;
};

// README.md and the docs/*.md that hold a figure mark, in name order.
std::vector<fs::path> marked_docs(const fs::path& root) {
  std::vector<fs::path> docs = {root / "README.md"};
  if (fs::is_directory(root / "docs"))
    for (const auto& e : fs::directory_iterator(root / "docs"))
      if (e.path().extension() == ".md" && read_file(e.path()).find("<!-- evo:figures ") != std::string::npos)
        docs.push_back(e.path());
  std::sort(docs.begin() + 1, docs.end());
  return docs;
}

void run_docs(const DocsOptions& o) {
  std::vector<fs::path> docs(o.files.begin(), o.files.end());
  if (docs.empty()) docs = marked_docs(repo_root());
  const fs::path results = o.results.empty() ? repo_root() / "results" : fs::path(o.results);
  const Comparison comparison = build_comparison(load_compare_input(results), {});
  // Every doc is filled before any is written: a bad mark anywhere changes nothing.
  std::vector<std::pair<FilledDoc, bool>> filled;  // the doc, and whether it changed
  for (const fs::path& doc : docs) {
    const std::string text = read_file(doc);
    FilledDoc f = fill_figures(text, comparison, doc.string());
    const bool changed = f.text != text;
    filled.emplace_back(std::move(f), changed);
  }
  std::vector<std::string> stale;
  for (size_t i = 0; i < docs.size(); ++i) {
    const auto& [doc, changed] = filled[i];
    if (changed && o.check) stale.push_back(docs[i].string());
    if (changed && !o.check) write_file_atomic(docs[i], doc.text);
    std::cout << docs[i].string() << ": " << doc.figures << " figures, "
              << (!changed  ? "up to date"
                  : o.check ? "STALE"
                            : "updated")
              << "\n";
  }
  if (stale.empty()) return;
  std::string names;
  for (const auto& s : stale) names += (names.empty() ? "" : ", ") + s;
  throw usage_error("figures differ from the records in " + names + ": run `evo docs` and commit the result");
}

}  // namespace

void add_docs_command(CLI::App& app) {
  auto o = std::make_shared<DocsOptions>();
  auto* cmd = app.add_subcommand(
      "docs", "Regenerate the figures marked in README.md and docs/*.md from the records; no GPU needed");
  cmd->add_option("files", o->files, "docs to fill (default: README.md and every docs/*.md with an evo:figures mark)");
  cmd->add_option("--results", o->results, "results directory with *.jsonl and peers/*.json (default: <repo>/results)");
  cmd->add_flag("--check", o->check, "write nothing; exit 1 when a doc's figures differ from the records (CI)");
  cmd->callback([o] { run_docs(*o); });
}

}  // namespace evo
