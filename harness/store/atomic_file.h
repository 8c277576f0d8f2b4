// Durable file writes: temp file in the same directory, fsync, rename, fsync the directory.
// A reader sees the old file or the new one, never a torn one, even after SIGKILL or power loss.
#pragma once
#include <filesystem>
#include <string>

namespace evo {

void write_file_atomic(const std::filesystem::path& path, const std::string& data);

// Whole-file replace by rename, without fsync: for scratch files another process reads at once
// and deletes (a worker's outputs). A reader never sees a torn file; a crash may lose the file,
// which costs nothing but the evaluation in flight. Skipping fsync keeps concurrent evaluations
// (--devices) from queueing on the disk for files that never need to reach it.
void write_scratch_file(const std::filesystem::path& path, const std::string& data);

// Appends one line (data must not contain '\n') under an exclusive flock on the file and
// fsyncs before returning: when this returns, the line is on disk.
void append_line_durable(const std::filesystem::path& path, const std::string& line);

// An exclusive advisory lock (flock) on `path` (created if missing), held for the object's life.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace evo
