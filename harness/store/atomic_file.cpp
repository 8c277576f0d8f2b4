#include "store/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "core/errors.h"

namespace evo {

namespace {

[[noreturn]] void io_error(const std::string& what, const std::filesystem::path& p) {
  throw usage_error(what + " " + p.string() + ": " + std::strerror(errno));
}

void write_all(int fd, const std::string& data, const std::filesystem::path& p) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_error("cannot write", p);
    }
    off += size_t(n);
  }
}

// Offset just past the last '\n' before `size` (0 if there is none), read backwards in chunks.
off_t start_of_last_line(int fd, off_t size) {
  char buf[4096];
  off_t end = size;
  while (end > 0) {
    const off_t begin = end > off_t(sizeof(buf)) ? end - off_t(sizeof(buf)) : 0;
    const ssize_t n = ::pread(fd, buf, size_t(end - begin), begin);
    if (n <= 0) return 0;
    for (ssize_t i = n - 1; i >= 0; --i)
      if (buf[i] == '\n') return begin + i + 1;
    end = begin;
  }
  return 0;
}

void fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Temp file in the same directory, renamed over `path`; fsync'ed first when `durable`.
void replace_file(const std::filesystem::path& path, const std::string& data, bool durable) {
  static std::atomic<unsigned> counter{0};
  const auto dir = path.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  const std::filesystem::path tmp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_error("cannot create", tmp);
  try {
    write_all(fd, data, tmp);
    if (durable && ::fsync(fd) != 0) io_error("cannot fsync", tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    io_error("cannot rename into", path);
  }
  if (durable) fsync_dir(dir);
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, const std::string& data) { replace_file(path, data, true); }

void write_scratch_file(const std::filesystem::path& path, const std::string& data) { replace_file(path, data, false); }

void append_line_durable(const std::filesystem::path& path, const std::string& line) {
  const auto dir = path.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  bool created = !std::filesystem::exists(path);
  // Read-write: the last byte is read back to detect a torn line.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) io_error("cannot open", path);
  if (::flock(fd, LOCK_EX) != 0) {
    ::close(fd);
    io_error("cannot lock", path);
  }
  try {
    // A last line without its '\n' is a writer that died in the middle of its write (lines are
    // written whole under this lock). Its record was never reported written: cut it off, so it
    // does not stay behind as a bad line in the middle of the log. A tail that is a complete JSON
    // value (a file edited by hand, say) is kept and ended instead.
    off_t size = ::lseek(fd, 0, SEEK_END);
    std::string data = line + "\n";
    if (size > 0) {
      char last = '\n';
      if (::pread(fd, &last, 1, size - 1) == 1 && last != '\n') {
        const off_t start = start_of_last_line(fd, size);
        std::string tail(size_t(size - start), '\0');
        const bool read_ok = ::pread(fd, tail.data(), tail.size(), start) == ssize_t(tail.size());
        if (read_ok && nlohmann::json::accept(tail)) {
          data = "\n" + data;
        } else if (::ftruncate(fd, start) != 0) {
          data = "\n" + data;  // could not cut it: at least keep this record on a line of its own
        }
      }
    }
    write_all(fd, data, path);
    if (::fsync(fd) != 0) io_error("cannot fsync", path);
  } catch (...) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
    throw;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (created) fsync_dir(dir);
}

FileLock::FileLock(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("cannot open lock file", path);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) io_error("cannot lock", path);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace evo
