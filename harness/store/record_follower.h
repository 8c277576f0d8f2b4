// A results folder's records kept in memory and brought up to date by reading only what was
// appended since the last look. A session re-derives its GPU's populations after every evaluation
// (store/population_refresh.h, from the process's follower of the folder: run/session.h
// FollowedRecords); reading and parsing the whole folder each time made each evaluation cost
// O(records) in the parent (1.3 s of a 1.8 s evo evolve screen at 660 screened records:
// lab/notes/evolve-parent-overhead.md).
//
// What it holds is what typed read_records(dir) gives: every valid record (records.h: validated,
// then read_record) of every records file (*.jsonl, *.jsonl.gz) in file-name order, then line
// order, less those <dir>/revoked.json withdraws. Records files are append-only, so a .jsonl file
// that grew is read from where the last look stopped. One that shrank below that point, was
// replaced (another inode), or whose last line read no longer ends there, is read again whole; a
// .gz file whenever its size, time or inode changes; a removed one is dropped; a file unchanged in
// inode, size and time is not read at all. A last line without its '\n' (an append in flight, a
// file ended by hand) is parsed at each look and kept only until its line is complete, as
// read_records keeps it.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/revocations.h"
#include "store/typed_record.h"

namespace evo {

class RecordFollower {
 public:
  explicit RecordFollower(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // Brings the copy up to date. Throws as read_records does: a bad revoked.json, a damaged gzip
  // file (a usage error naming the file).
  void refresh();
  // The records of the last refresh, withdrawn ones left out; valid until the next refresh.
  std::vector<const Record*> records() const;
  const std::filesystem::path& dir() const { return dir_; }

  // What the refreshes have parsed so far (lines of records, bytes read): each record is parsed
  // once, however often the folder is looked at.
  size_t lines_parsed() const { return lines_parsed_; }
  size_t bytes_read() const { return bytes_read_; }

 private:
  struct Entry {
    Record record;
    nlohmann::json match;  // the fields a revocation matches on (variant, source_sha256, params)
    bool withdrawn = false;
  };
  // What a file was at the last look, and its records.
  struct File {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    long long mtime_ns = -1;
    off_t consumed = 0;          // bytes of the complete lines read
    size_t lines = 0;            // and how many lines they were
    std::string anchor;          // the last bytes of those lines: a rewrite shows here
    std::vector<Entry> entries;  // the complete lines' records
    std::vector<Entry> pending;  // the record of an unterminated last line, if it is one
  };

  void follow(const std::filesystem::path& path, File& file);
  void read_text(const std::string& text, const std::string& origin, size_t first_line, std::vector<Entry>& into);
  void update_revocations();
  bool withdrawn(const nlohmann::json& match) const;

  std::filesystem::path dir_;
  std::map<std::filesystem::path, File> files_;  // sorted as read_records sorts them
  std::optional<std::string> revocations_text_;  // revoked.json as last read (none: absent)
  std::vector<Revocation> revocations_;
  size_t lines_parsed_ = 0, bytes_read_ = 0;
};

}  // namespace evo
