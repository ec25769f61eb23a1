#pragma once

// TlsTransport: a Transport over an OpenSSL SSL object on a non-blocking socket. The handshake
// runs inside read()/writev(). Every SSL runs in async mode (SSL_MODE_ASYNC): when an offload
// engine pauses the handshake's job, the transport reports kAgain and busy(); it resumes
//   - by the ASYNC_WAIT_CTX callback (SSL_set_async_callback): the callback may come from any
//     thread and only posts a task to the owning loop, no system call on the loop's side, or
//   - by the job's wait fds (SSL_get_changed_async_fds), which are watched in epoll,
// and then calls the wake-up callback so the connection drives the state machine again.
//
// All methods except the async callback run on the owning loop's thread. A busy transport must
// not be destroyed: the owner waits for the wake-up, then calls finish_paused_job().

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "accelgate/event/event_loop.h"
#include "accelgate/event/transport.h"

namespace accelgate::tls {

class TlsTransport final : public event::Transport {
 public:
  // ServerNameResolver maps a client's SNI name to the SSL_CTX of the matching server (nullptr:
  // keep the default server's).
  using ServerNameResolver = std::function<SSL_CTX*(std::string_view)>;

  // The transport owns |fd| and closes it when destroyed. |peer| names the client in logs.
  TlsTransport(int fd, SSL_CTX* ctx, event::EventLoop* loop, ServerNameResolver resolver,
               std::string peer);
  ~TlsTransport() override;
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  static TlsTransport* from_ssl(const SSL* ssl);
  SSL_CTX* resolve_server_name(std::string_view name) const;

  int fd() const override { return fd_; }
  event::IoResult read(char* buf, size_t len) override;
  event::IoResult writev(const iovec* iov, int count) override;
  event::IoResult sendfile(int file_fd, off_t* offset, size_t len) override;
  bool can_sendfile() const override { return false; }
  // Exact until OpenSSL first reads the socket: before that it holds no bytes of its own.
  bool socket_readiness_is_exact() const override { return !io_started_; }
  void shutdown_write() override;
  void end_before_close() override;
  bool busy() const override { return job_paused_; }
  void set_wakeup(std::function<void()> wakeup) override { wakeup_ = std::move(wakeup); }

  // handshake_done says whether the handshake has completed (then it has been counted in
  // accelgate_tls_handshakes_total).
  bool handshake_done() const { return handshake_done_; }
  // handshake_error says why the handshake failed ("protocol", "no_shared_cipher",
  // "peer_closed"), for accelgate_tls_handshake_errors_total; "" while none failed.
  const char* handshake_error() const { return handshake_error_; }
  // finish_paused_job lets a paused job run to its end after the connection was closed (OpenSSL
  // requires the paused call to be repeated); returns true when nothing is paused any more.
  bool finish_paused_job();

 private:
  class AsyncFdWatcher;
  event::IoResult handshake();
  event::IoResult map_error(int ret);
  void on_job_paused();
  // sync_async_fds applies the job's changed wait fds to the loop's watchers: additions and
  // deletions when the job paused, deletions only when it has ended.
  void sync_async_fds(bool job_ended);
  static int on_async_callback(SSL* ssl, void* arg);
  void on_job_ready();

  int fd_;
  SSL* ssl_;
  event::EventLoop* loop_;
  ServerNameResolver resolver_;
  std::string peer_;
  std::function<void()> wakeup_;
  bool handshake_done_ = false;
  bool io_started_ = false;  // SSL_do_handshake was called: OpenSSL may hold socket bytes
  bool job_paused_ = false;
  bool shutdown_sent_ = false;
  const char* handshake_error_ = "";
  std::vector<std::unique_ptr<AsyncFdWatcher>> async_fds_;
};

// record_handshake_error counts one failed handshake in accelgate_tls_handshake_errors_total
// (reason: timeout, protocol, no_shared_cipher, peer_closed).
void record_handshake_error(const char* reason);

}  // namespace accelgate::tls
