#include "accelgate/common/log.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace accelgate {
namespace {

constexpr const char* kLevelNames[] = {"debug", "info", "notice", "warn",
                                       "error", "crit", "alert",  "emerg"};

// The sink. |g_fd| and |g_level| are read lock-free on every log call; |g_mutex| serialises
// opening and reopening, which are rare (start, reload, SIGUSR1).
std::atomic<int> g_fd{STDERR_FILENO};
std::atomic<int> g_level{static_cast<int>(LogLevel::kNotice)};
std::mutex g_mutex;
std::string g_path = "stderr";

Result<int> open_log_file(const std::string& path) {
  if (path == "stderr") return STDERR_FILENO;
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("open(\"" + path + "\")", errno);
  return fd;
}

void swap_fd(int fd) {
  int old = g_fd.exchange(fd);
  // A writer that loaded |old| just before the swap may still write to it: the write then fails
  // with EBADF or lands in the old file, and either is acceptable for one line during a reopen.
  if (old != STDERR_FILENO && old != fd) ::close(old);
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view name) {
  for (size_t i = 0; i < std::size(kLevelNames); ++i) {
    if (name == kLevelNames[i]) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

const char* log_level_name(LogLevel level) { return kLevelNames[static_cast<int>(level)]; }

namespace log {

Status open_error_log(const std::string& path, LogLevel level) {
  std::lock_guard lock(g_mutex);
  auto fd = open_log_file(path);
  if (!fd) return fd.error();
  g_path = path;
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
  swap_fd(*fd);
  return {};
}

Status reopen_error_log() {
  std::lock_guard lock(g_mutex);
  auto fd = open_log_file(g_path);
  if (!fd) return fd.error();
  swap_fd(*fd);
  return {};
}

bool enabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void vwrite(LogLevel level, const char* fmt, va_list args) {
  char line[2048];
  time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  int n = static_cast<int>(std::strftime(line, sizeof(line), "%Y/%m/%d %H:%M:%S", &tm));
  static thread_local long tid = ::syscall(SYS_gettid);
  n += std::snprintf(line + n, sizeof(line) - n, " [%s] %d#%ld: ", log_level_name(level),
                     static_cast<int>(::getpid()), tid);
  int m = std::vsnprintf(line + n, sizeof(line) - n - 1, fmt, args);
  if (m < 0) m = 0;
  n = std::min<int>(n + m, sizeof(line) - 2);
  line[n++] = '\n';
  ssize_t rc = ::write(g_fd.load(std::memory_order_relaxed), line, n);
  (void)rc;  // nowhere left to report a failed log write
}

void write(LogLevel level, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vwrite(level, fmt, args);
  va_end(args);
}

}  // namespace log
}  // namespace accelgate
