#include "accelgate/tls/tls_transport.h"

#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "accelgate/common/assert.h"
#include "accelgate/common/log.h"
#include "accelgate/common/metrics.h"

namespace accelgate::tls {
namespace {

metrics::Family<metrics::Counter>& handshakes() {
  static auto& f = metrics::Registry::global().counter(
      "accelgate_tls_handshakes_total", "Completed TLS handshakes.", {"version", "resumed"});
  return f;
}

metrics::Family<metrics::Counter>& handshake_errors() {
  static auto& f = metrics::Registry::global().counter(
      "accelgate_tls_handshake_errors_total", "Failed TLS handshakes by reason.", {"reason"});
  return f;
}

// count_handshake counts a completed handshake. The children are cached per thread and
// protocol version (TLS 1.2 and 1.3 only; ssl_protocols refuses older ones), so the label lookup
// is not paid per handshake.
void count_handshake(int version, bool resumed) {
  thread_local metrics::Counter* cache[2][2] = {};
  const int v = version == TLS1_3_VERSION ? 1 : 0;
  metrics::Counter*& c = cache[v][resumed ? 1 : 0];
  if (c == nullptr) {
    c = &handshakes().with({v == 1 ? "TLSv1.3" : "TLSv1.2", resumed ? "true" : "false"});
  }
  c->inc();
}

int ex_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

// AsyncFdWatcher watches one wait fd of a paused job; readable means the job can go on.
class TlsTransport::AsyncFdWatcher final : public event::IoHandler {
 public:
  AsyncFdWatcher(TlsTransport* owner, int fd) : owner_(owner), fd_(fd) {}
  void on_io(uint32_t) override { owner_->on_job_ready(); }
  int fd() const { return fd_; }

 private:
  TlsTransport* owner_;
  int fd_;
};

TlsTransport::TlsTransport(int fd, SSL_CTX* ctx, event::EventLoop* loop,
                           ServerNameResolver resolver, std::string peer)
    : fd_(fd),
      ssl_(SSL_new(ctx)),
      loop_(loop),
      resolver_(std::move(resolver)),
      peer_(std::move(peer)) {
  AG_RELEASE_ASSERT(ssl_ != nullptr);
  SSL_set_fd(ssl_, fd_);
  SSL_set_accept_state(ssl_);
  SSL_set_ex_data(ssl_, ex_index(), this);
  SSL_set_async_callback(ssl_, on_async_callback);
  SSL_set_async_callback_arg(ssl_, this);
}

TlsTransport::~TlsTransport() {
  AG_RELEASE_ASSERT(!job_paused_);
  for (auto& w : async_fds_) loop_->remove(w->fd());
  SSL_free(ssl_);
  ::close(fd_);
}

TlsTransport* TlsTransport::from_ssl(const SSL* ssl) {
  return static_cast<TlsTransport*>(SSL_get_ex_data(ssl, ex_index()));
}

SSL_CTX* TlsTransport::resolve_server_name(std::string_view name) const {
  return resolver_ ? resolver_(name) : nullptr;
}

int TlsTransport::on_async_callback(SSL*, void* arg) {
  // Any thread (an engine's completion thread): only hand the resumption to the owning loop.
  // The offload dispatcher completes ops on the loop's own thread: then no system call is made.
  auto* self = static_cast<TlsTransport*>(arg);
  if (event::EventLoop::running_on_this_thread() == self->loop_) {
    self->loop_->defer([self] { self->on_job_ready(); });
  } else {
    self->loop_->post([self] { self->on_job_ready(); });
  }
  return 1;
}

void TlsTransport::on_job_ready() {
  if (!job_paused_) return;
  job_paused_ = false;
  if (wakeup_) wakeup_();
}

void TlsTransport::on_job_paused() {
  job_paused_ = true;
  sync_async_fds(false);
}

void TlsTransport::sync_async_fds(bool job_ended) {
  // Engines that signal through fds (vendor engines in notify=event mode) change them here.
  // OpenSSL resets the changes only when a paused job resumes, so an fd that a job closed in its
  // last run is reported as deleted after the job ended (and again at the next job's pause).
  // That is when its watcher must go: the number may be reused at once by another connection's
  // job on this loop, and a later EPOLL_CTL_DEL would take that one's registration away (it
  // would then never resume). Additions are taken only at a pause, so none is watched twice.
  size_t add_count = 0, del_count = 0;
  SSL_get_changed_async_fds(ssl_, nullptr, &add_count, nullptr, &del_count);
  if (add_count == 0 && del_count == 0) return;
  // The counts include fds added and deleted in the same run, which are not listed: -1 fills
  // their places.
  std::vector<OSSL_ASYNC_FD> added(add_count, -1), deleted(del_count, -1);
  SSL_get_changed_async_fds(ssl_, added.data(), &add_count, deleted.data(), &del_count);
  if (job_ended) added.clear();
  for (OSSL_ASYNC_FD fd : deleted) {
    for (auto it = async_fds_.begin(); it != async_fds_.end(); ++it) {
      if ((*it)->fd() == fd) {
        loop_->remove(fd);
        async_fds_.erase(it);
        break;
      }
    }
  }
  for (OSSL_ASYNC_FD fd : added) {
    if (fd < 0) continue;
    auto watcher = std::make_unique<AsyncFdWatcher>(this, fd);
    if (Status st = loop_->add_readable(fd, watcher.get()); !st) {
      AG_LOG_ALERT("cannot watch an async wait fd: %s", st.error().message.c_str());
      continue;
    }
    async_fds_.push_back(std::move(watcher));
  }
}

event::IoResult TlsTransport::map_error(int ret) {
  int err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return {event::IoResult::kAgain, 0, EAGAIN};
    case SSL_ERROR_WANT_ASYNC:
      on_job_paused();
      return {event::IoResult::kAgain, 0, EAGAIN};
    case SSL_ERROR_WANT_ASYNC_JOB:
      // No async job could be started (the pool is exhausted): try again on the next event, as
      // OpenSSL documents; the job pool grows on demand so this is transient.
      loop_->defer([this] {
        if (wakeup_) wakeup_();
      });
      return {event::IoResult::kAgain, 0, EAGAIN};
    case SSL_ERROR_ZERO_RETURN:
      return {event::IoResult::kEof, 0, 0};
    case SSL_ERROR_SYSCALL: {
      int e = errno;
      ERR_clear_error();
      if (!handshake_done_) handshake_error_ = "peer_closed";
      if (ret == 0 || e == 0) return {event::IoResult::kEof, 0, 0};
      return {event::IoResult::kError, 0, e};
    }
    default: {
      unsigned long e = ERR_peek_last_error();
      if (!handshake_done_) {
        int reason = ERR_GET_REASON(e);
        // OpenSSL 3 reports a peer that vanished mid-handshake as an SSL error, not EOF.
        handshake_error_ = reason == SSL_R_NO_SHARED_CIPHER               ? "no_shared_cipher"
                           : reason == SSL_R_UNEXPECTED_EOF_WHILE_READING ? "peer_closed"
                                                                          : "protocol";
      }
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      // Logged once here, with the client; the caller does not log EPROTO again.
      AG_LOG_INFO("SSL error from %s%s: %s", peer_.c_str(),
                  handshake_done_ ? "" : " in the handshake", buf);
      ERR_clear_error();
      return {event::IoResult::kError, 0, EPROTO};
    }
  }
}

event::IoResult TlsTransport::handshake() {
  io_started_ = true;
  ERR_clear_error();
  int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    sync_async_fds(true);
    handshake_done_ = true;
    // Only the handshake has private-key operations (renegotiation is refused): run the record
    // layer outside async jobs, which saves a job start and switch per SSL_read/SSL_write
    // (about 7 job starts per short connection before; callgrind).
    SSL_clear_mode(ssl_, SSL_MODE_ASYNC);
    count_handshake(SSL_version(ssl_), SSL_session_reused(ssl_) == 1);
    return {event::IoResult::kOk, 0, 0};
  }
  event::IoResult r = map_error(ret);
  if (!job_paused_) sync_async_fds(true);  // the job ended (or none could start)
  if (r.status == event::IoResult::kEof || r.status == event::IoResult::kError) {
    record_handshake_error(*handshake_error_ ? handshake_error_ : "peer_closed");
  }
  return r;
}

bool TlsTransport::finish_paused_job() {
  if (job_paused_) return false;
  if (!handshake_done_) {
    // Repeat the paused call so the job runs to its end and releases what it holds.
    ERR_clear_error();
    int ret = SSL_do_handshake(ssl_);
    if (ret != 1 && SSL_get_error(ssl_, ret) == SSL_ERROR_WANT_ASYNC) {
      on_job_paused();
      return false;
    }
    sync_async_fds(true);
    ERR_clear_error();
  }
  return true;
}

event::IoResult TlsTransport::read(char* buf, size_t len) {
  if (job_paused_) return {event::IoResult::kAgain, 0, EAGAIN};
  if (!handshake_done_) {
    event::IoResult r = handshake();
    if (r.status != event::IoResult::kOk) return r;
  }
  ERR_clear_error();
  size_t n = 0;
  int ret = SSL_read_ex(ssl_, buf, len, &n);
  if (ret == 1) return {event::IoResult::kOk, n, 0};
  return map_error(ret);
}

event::IoResult TlsTransport::writev(const iovec* iov, int count) {
  if (job_paused_) return {event::IoResult::kAgain, 0, EAGAIN};
  if (!handshake_done_) {
    event::IoResult r = handshake();
    if (r.status != event::IoResult::kOk) return r;
  }
  // SSL has no writev: write the first buffer; the caller loops. A partial SSL_write is enabled
  // (SSL_MODE_ENABLE_PARTIAL_WRITE) and a retried write may come from a moved buffer
  // (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len == 0) continue;
    ERR_clear_error();
    size_t n = 0;
    int ret = SSL_write_ex(ssl_, iov[i].iov_base, iov[i].iov_len, &n);
    if (ret == 1) return {event::IoResult::kOk, n, 0};
    return map_error(ret);
  }
  return {event::IoResult::kOk, 0, 0};
}

event::IoResult TlsTransport::sendfile(int, off_t*, size_t) {
  return {event::IoResult::kError, 0, ENOSYS};
}

void TlsTransport::end_before_close() {
  if (shutdown_sent_) return;
  shutdown_sent_ = true;
  if (handshake_done_ && !job_paused_) {
    ERR_clear_error();
    SSL_shutdown(ssl_);  // sends close_notify; the peer's is not awaited (as nginx)
    ERR_clear_error();
  }
}

void TlsTransport::shutdown_write() {
  if (shutdown_sent_) return;
  end_before_close();
  ::shutdown(fd_, SHUT_WR);
}

void record_handshake_error(const char* reason) { handshake_errors().with({reason}).inc(); }

}  // namespace accelgate::tls
