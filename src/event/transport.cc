#include "accelgate/event/transport.h"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace accelgate::event {
namespace {

IoResult from_syscall(ssize_t n) {
  if (n > 0) return {IoResult::kOk, static_cast<size_t>(n), 0};
  if (n == 0) return {IoResult::kEof, 0, 0};
  if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoResult::kAgain, 0, errno};
  return {IoResult::kError, 0, errno};
}

}  // namespace

PlainTransport::~PlainTransport() { ::close(fd_); }

IoResult PlainTransport::read(char* buf, size_t len) {
  ssize_t n;
  do {
    n = ::recv(fd_, buf, len, 0);
  } while (n < 0 && errno == EINTR);
  return from_syscall(n);
}

IoResult PlainTransport::writev(const iovec* iov, int count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = count;
  ssize_t n;
  do {
    n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n == 0) return {IoResult::kAgain, 0, 0};
  return from_syscall(n);
}

IoResult PlainTransport::sendfile(int file_fd, off_t* offset, size_t len) {
  ssize_t n;
  do {
    n = ::sendfile(fd_, file_fd, offset, len);
  } while (n < 0 && errno == EINTR);
  // sendfile returns 0 when the file shrank under us: report it as an error, not EOF of the peer.
  if (n == 0) return {IoResult::kError, 0, 0};
  return from_syscall(n);
}

void PlainTransport::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

}  // namespace accelgate::event
