#include "transient/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "transient/core/error.h"

namespace transient {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path, 0, what + ": " + std::strerror(errno));
}

std::string parent_of(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(dir, "cannot open the directory to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail(dir, "cannot sync the directory");
}

void require_writable_output(const std::string& path, const std::string& flag,
                             const std::string& what) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InputError(
        path, 0,
        flag + ": is a directory; accepted: a file name" + (what.empty() ? "" : " for " + what));
  }
  const auto parent = std::filesystem::absolute(path, error).lexically_normal().parent_path();
  if (!std::filesystem::is_directory(parent, error) || ::access(parent.c_str(), W_OK) != 0) {
    throw InputError(path, 0,
                     flag + ": the directory " + parent.string() +
                         " does not exist or is not writable; accepted: a file in a writable "
                         "directory");
  }
}

namespace {

// Writes `contents` to a new temporary file beside `path`, flushed to disk and closed, and returns
// its name. Throws InputError naming `path` (and removes the temporary) if a step fails.
std::string write_temporary(const std::string& path, std::string_view contents,
                            unsigned mode = 0644) {
  // The temporary name is unique per process and call, so concurrent writers never share one.
  std::random_device entropy;
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(entropy());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) fail(path, "cannot create a temporary file beside it");
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      errno = saved;
      fail(path, "cannot write");
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail(path, "cannot flush to disk");
  }
  return temporary;
}

// Gives `temporary` the name `path` unless something has that name: a rename that refuses to
// replace where the file system has one, else a hard link (which refuses too) and the
// temporary's removal. Returns 0, or -1 with errno set (EEXIST: `path` exists).
int publish_without_replacing(const std::string& temporary, const std::string& path) {
  if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) {
    return 0;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
  if (::link(temporary.c_str(), path.c_str()) != 0) return -1;
  ::unlink(temporary.c_str());
  return 0;
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents, unsigned mode) {
  const std::string temporary = write_temporary(path, contents, mode);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail(path, "cannot rename the temporary file into place");
  }
  sync_directory(parent_of(path));
}

void write_new_file_atomically(const std::string& path, std::string_view contents) {
  const std::string temporary = write_temporary(path, contents);
  if (publish_without_replacing(temporary, path) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    if (saved == EEXIST) {
      throw InputError(path, 0,
                       "the file exists; accepted: a new file name (remove the old one first)");
    }
    errno = saved;
    fail(path, "cannot move the temporary file into place");
  }
  sync_directory(parent_of(path));
}

std::string read_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw InputError(path, 0, "is a directory; accepted: a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "cannot open the file (does it exist and is it readable?)");
  // One read of the size the file says (a data set's tens of megabytes are not copied again),
  // then whatever it did not say (files whose size is not their length, such as /proc's).
  std::string contents;
  const auto size = static_cast<std::streamsize>(std::filesystem::file_size(path, error));
  if (!error && size > 0) {
    contents.resize(static_cast<std::size_t>(size));
    in.read(contents.data(), size);
    contents.resize(static_cast<std::size_t>(in.gcount()));
    if (in.bad()) throw InputError(path, 0, "cannot read the file");
    in.clear();  // a file shorter than its size said: end of file, the rest is empty
  }
  std::ostringstream rest;
  rest << in.rdbuf();
  if (in.bad()) throw InputError(path, 0, "cannot read the file");
  contents += rest.str();
  return contents;
}

}  // namespace transient
