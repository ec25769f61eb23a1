#include "access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "accelgate/common/log.h"
#include "accelgate/http/connection.h"

namespace accelgate::http {
namespace {

void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      AG_LOG_ERROR("access log write failed: %s", std::strerror(errno));
      return;
    }
    off += static_cast<size_t>(n);
  }
}

int open_log(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

}  // namespace

AccessLogFiles& AccessLogFiles::global() {
  static AccessLogFiles files;
  return files;
}

int AccessLogFiles::fd(const std::string& path) {
  std::lock_guard lock(mutex_);
  auto it = fds_.find(path);
  if (it != fds_.end()) return it->second;
  int fd = open_log(path);
  if (fd < 0) AG_LOG_ERROR("open() \"%s\" failed: %s", path.c_str(), std::strerror(errno));
  fds_.emplace(path, fd);
  return fd;
}

void AccessLogFiles::reopen() {
  std::lock_guard lock(mutex_);
  for (auto& [path, fd] : fds_) {
    int fresh = open_log(path);
    if (fresh < 0) {
      AG_LOG_ERROR("reopen() \"%s\" failed: %s", path.c_str(), std::strerror(errno));
      continue;
    }
    if (fd < 0) {
      fd = fresh;
    } else {
      ::dup2(fresh, fd);  // atomically points the old number at the new file
      ::close(fresh);
    }
  }
}

void reopen_access_logs() { AccessLogFiles::global().reopen(); }

void AccessLogBuffer::append(const config::AccessLog& log, const std::string& line) {
  int fd = AccessLogFiles::global().fd(log.path);
  if (fd < 0) return;
  if (log.buffer_size == 0) {
    write_all(fd, line);
    return;
  }
  std::string& buf = buffers_[fd];
  if (buf.size() + line.size() > log.buffer_size && !buf.empty()) {
    write_all(fd, buf);
    pending_bytes_ -= buf.size();
    buf.clear();
  }
  buf += line;
  pending_bytes_ += line.size();
}

void AccessLogBuffer::flush_all() {
  for (auto& [fd, buf] : buffers_) {
    if (!buf.empty()) write_all(fd, buf);
    buf.clear();
  }
  pending_bytes_ = 0;
}

}  // namespace accelgate::http
