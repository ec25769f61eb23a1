#pragma once

// Transport is the byte stream under an HTTP connection: plain TCP now, TLS later (the TLS issue
// puts an SSL object here; a paused async handshake job reports kAgain and resumes through the
// same readiness path). The connection state machine only ever talks to a Transport.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace accelgate::http {

struct IoResult {
  enum Status { kOk, kAgain, kEof, kError };
  Status status = kOk;
  size_t bytes = 0;
  int sys_errno = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int fd() const = 0;
  // read fills up to |len| bytes. kOk with bytes > 0, kAgain (would block), kEof, or kError.
  virtual IoResult read(char* buf, size_t len) = 0;
  // writev writes from |iov|; kOk may be partial.
  virtual IoResult writev(const iovec* iov, int count) = 0;
  // sendfile sends |len| bytes of |file_fd| from |*offset| (advanced), if the transport can
  // (plain TCP); returns kError with ENOSYS where it can't, and the caller falls back to pread.
  virtual IoResult sendfile(int file_fd, off_t* offset, size_t len) = 0;
  virtual bool can_sendfile() const = 0;
  // shutdown_write half-closes the stream (TLS: sends close_notify first).
  virtual void shutdown_write() = 0;
};

// PlainTransport is TCP without TLS. It owns |fd| and closes it when destroyed.
class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  ~PlainTransport() override;
  int fd() const override { return fd_; }
  IoResult read(char* buf, size_t len) override;
  IoResult writev(const iovec* iov, int count) override;
  IoResult sendfile(int file_fd, off_t* offset, size_t len) override;
  bool can_sendfile() const override { return true; }
  void shutdown_write() override;

 private:
  int fd_;
};

}  // namespace accelgate::http
