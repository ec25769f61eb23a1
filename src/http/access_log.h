#pragma once

// Access logging in nginx's "combined" format. Files are process-wide (one fd per path, shared by
// all workers, reopened in place with dup2 so no writer ever sees a closed fd); each worker keeps
// its own buffer per file and writes whole lines, so lines from two workers never interleave.

#include <map>
#include <mutex>
#include <string>

#include "accelgate/config/config.h"

namespace accelgate::http {

// AccessLogFiles is the process-wide set of open access log files.
class AccessLogFiles {
 public:
  static AccessLogFiles& global();
  // fd returns the descriptor for |path|, opening it on first use; -1 (logged once) on failure.
  int fd(const std::string& path);
  // reopen reopens every file at its path (SIGUSR1), keeping the descriptor numbers.
  void reopen();

 private:
  std::mutex mutex_;
  std::map<std::string, int> fds_;
};

// AccessLogBuffer is one worker's buffered writer. Not thread-safe: one per worker thread.
class AccessLogBuffer {
 public:
  ~AccessLogBuffer() { flush_all(); }
  // append adds one line for |log|; writes at once when unbuffered or the buffer is full.
  void append(const config::AccessLog& log, const std::string& line);
  // flush_all writes every buffered line (flush timer, worker exit, reopen).
  void flush_all();
  bool empty() const { return pending_bytes_ == 0; }

 private:
  std::map<int, std::string> buffers_;  // by fd
  size_t pending_bytes_ = 0;
};

}  // namespace accelgate::http
