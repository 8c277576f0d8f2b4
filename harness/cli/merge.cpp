// evo merge FILE... [--results-dir D] [--populations-dir D]: brings run logs from other machines
// (shards under Slurm, other GPUs; docs/safety.md §4) into this repo's results. Each valid record not
// already present is appended to <results-dir>/merged.jsonl, durably, and only then reported
// ("wrote <candidate_id>"); populations are then derived again from every record. Killed at any
// point, it leaves whole files behind and nothing it reported is lost: run it again to finish.
#include <fmt/format.h>

#include <iostream>
#include <set>
#include <tuple>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/errors.h"
#include "core/paths.h"
#include "store/atomic_file.h"
#include "store/population.h"
#include "store/records.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct MergeOptions : StoreDirs {
  std::vector<std::string> files;
};

// One evaluation is one (run, candidate, time): the same record merged twice, or a log merged
// back into the repo it came from, adds nothing.
using RecordKey = std::tuple<std::string, std::string, std::string>;
RecordKey key_of(const json& r) { return {r.value("run_id", ""), r.value("candidate_id", ""), r.value("time", "")}; }

void run_merge(const MergeOptions& o) {
  if (o.files.empty()) throw usage_error("evo merge: name at least one results file (*.jsonl) to merge");
  // Read every input before writing anything: a missing file is a usage error, not half a merge.
  std::vector<RecordSet> inputs;
  for (const auto& f : o.files) {
    if (!fs::is_regular_file(f)) throw usage_error(fmt::format("evo merge: {} is not a readable file", f));
    RecordSet rs;
    parse_records_text(read_file(f), f, rs);
    inputs.push_back(std::move(rs));
  }
  ensure_writable_dir(o.results_dir, "results dir", "--results-dir");
  ensure_writable_dir(o.populations_dir, "populations dir", "--populations-dir");
  const fs::path target = fs::path(o.results_dir) / "merged.jsonl";
  // Merges of the same logs running at once would both see a record as new, and a rebuild
  // running beside this one could write populations derived before these appends: one at a time.
  // (Appends themselves are safe without this: each takes the file's own lock.)
  const auto merging = lock_results(o.results_dir);

  std::set<RecordKey> present;
  RecordSet existing = read_records(o.results_dir);
  for (const auto& r : existing.records) present.insert(key_of(r));
  // A revoked record is still in the logs: merging it again would only add a duplicate line.
  for (const auto& w : existing.withdrawn)
    for (const auto& r : w.records) present.insert(key_of(r));

  size_t written = 0, duplicates = 0, skipped = 0;
  for (const auto& rs : inputs) {
    for (const auto& w : rs.warnings) std::cerr << "evo: warning: " << w << "\n";
    for (const auto& p : rs.problems) std::cerr << "evo: skipped " << p << "\n";
    skipped += rs.problems.size();
    for (const auto& r : rs.records) {
      if (!present.insert(key_of(r)).second) {
        ++duplicates;
        continue;
      }
      append_record(target, r);  // returns after fsync: the line is on disk
      std::cout << "wrote " << r["candidate_id"].get<std::string>() << std::endl;
      ++written;
    }
  }

  // Populations are a pure function of the records: derive them from everything now present.
  RecordSet all = read_records(o.results_dir);
  for (const auto& w : all.warnings) std::cerr << "evo: warning: " << w << "\n";
  for (const auto& p : all.problems) std::cerr << "evo: skipped " << p << "\n";
  const auto populations = derive_populations(all.records);
  for (const auto& [key, pop] : populations) write_population(o.populations_dir, pop);
  std::cout << fmt::format(
      "merged {} records into {} ({} already present, {} invalid lines skipped); {} populations "
      "written to {}\n",
      written, target.string(), duplicates, skipped, populations.size(), o.populations_dir);
  if (skipped > 0 || !all.problems.empty()) throw CommandFailed(kExitUsage);  // the lines are named above
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  auto* cmd = app.add_subcommand("merge", "Merge results logs from other machines; populations follow from the logs");
  cmd->add_option("files", o->files, "results files (*.jsonl) to merge")->required();
  add_store_dirs(cmd, *o, "results of this repo; merged records go to merged.jsonl there");
  cmd->callback([o] { run_merge(*o); });
}

}  // namespace evo
