#pragma once

// Transport is the byte stream under a connection: plain TCP (PlainTransport, here) or TLS
// (tls::TlsTransport). The HTTP state machine only ever talks to a Transport. A TLS transport
// runs its handshake inside read()/writev() and reports kAgain while it waits for the socket or
// for a paused async job (then it calls the wake-up callback once the job can go on).

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace accelgate::event {

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
  // sendfile sends |len| bytes of |file_fd| from |*offset| (advanced); only where
  // can_sendfile() (plain TCP).
  virtual IoResult sendfile(int file_fd, off_t* offset, size_t len) = 0;
  virtual bool can_sendfile() const = 0;
  // socket_readiness_is_exact says whether "the socket has no bytes" means "read() has no
  // bytes". True for plain TCP; false for TLS, which buffers decrypted records and may need to
  // write during a read.
  virtual bool socket_readiness_is_exact() const = 0;
  // shutdown_write half-closes the stream (TLS: sends close_notify first).
  virtual void shutdown_write() = 0;
  // end_before_close ends the stream when the connection is closed right after: TLS sends its
  // close_notify (RFC 8446 §6.1); the FIN comes with close(), so no shutdown(2) is made (one
  // system call less per connection, as nginx). Plain TCP: nothing.
  virtual void end_before_close() {}
  // busy says whether an operation is paused inside the transport (a TLS async job): the
  // transport must then not be destroyed; the wake-up callback fires when it can go on.
  virtual bool busy() const { return false; }
  // set_wakeup registers what to call (on the owning loop's thread) when a paused operation can
  // continue.
  virtual void set_wakeup(std::function<void()> wakeup) = 0;
};

// PlainTransport is TCP without TLS. It owns |fd| and closes it when destroyed.
class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  ~PlainTransport() override;
  PlainTransport(const PlainTransport&) = delete;
  PlainTransport& operator=(const PlainTransport&) = delete;
  int fd() const override { return fd_; }
  IoResult read(char* buf, size_t len) override;
  IoResult writev(const iovec* iov, int count) override;
  IoResult sendfile(int file_fd, off_t* offset, size_t len) override;
  bool can_sendfile() const override { return true; }
  bool socket_readiness_is_exact() const override { return true; }
  void shutdown_write() override;
  // A plain socket never pauses, so it never wakes anyone up.
  void set_wakeup(std::function<void()> /*wakeup*/) override {}

 private:
  int fd_;
};

}  // namespace accelgate::event
