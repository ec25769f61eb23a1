#include "worker.h"

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "accelgate/common/log.h"
#include "accelgate/common/metrics.h"

namespace accelgate::server {

// Listener accepts on one socket of one worker.
class Listener final : public event::IoHandler {
 public:
  Listener(Worker* worker, ListenerBinding binding)
      : worker_(worker), fd_(binding.fd), hosts_(std::move(binding.hosts)) {}
  ~Listener() override { ::close(fd_); }

  void on_io(uint32_t) override { accept_ready(); }

  // accept_ready accepts one connection, or with `multi_accept on` every queued one (the socket
  // is level-triggered, so the loop reports it again while more wait). When the worker is full
  // or out of descriptors it stops listening (Worker::pause_accepting) until a connection closes.
  void accept_ready() {
    http::WorkerContext& ctx = *worker_->ctx_;
    const config::Config& config = *worker_->config_;
    do {
      if (ctx.connection_count() >= config.worker_connections) {
        AG_LOG_WARN("%u worker_connections are not enough", config.worker_connections);
        worker_->pause_accepting();
        return;
      }
      sockaddr_storage peer{};
      socklen_t len = sizeof(peer);
      int fd =
          ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
          return;  // level-triggered: a connection still queued is reported again
        }
        // EMFILE/ENFILE/ENOBUFS: stop accepting until a connection closes.
        AG_LOG_CRIT("accept4() on %s failed: %s", hosts_->address.c_str(), std::strerror(errno));
        worker_->pause_accepting();
        return;
      }
      ctx.accept_connection(fd, peer, hosts_);
    } while (config.multi_accept && !worker_->accept_paused_);
  }

  int fd() const { return fd_; }
  void set_hosts(std::shared_ptr<const http::VirtualHosts> hosts) { hosts_ = std::move(hosts); }

 private:
  Worker* worker_;
  int fd_;
  std::shared_ptr<const http::VirtualHosts> hosts_;
};

Worker::Worker(int index) : index_(index) {}

Worker::~Worker() { join(); }

Status Worker::start(std::shared_ptr<const config::Config> config,
                     std::vector<ListenerBinding> bindings) {
  auto loop = event::EventLoop::create();
  if (!loop) return loop.error();
  loop_ = std::move(*loop);
  if (config->offload.crypto != "off") {
    auto dispatcher = offload::Dispatcher::create(loop_.get(), config->offload);
    if (!dispatcher) return dispatcher.error();
    dispatcher_ = std::move(*dispatcher);
  }
  ctx_ = std::make_unique<http::WorkerContext>(loop_.get(), index_);
  ctx_->configure_gzip(*config);
  ctx_->set_on_connection_closed([this] {
    if (accept_paused_ && !stopping_) resume_accepting();
    maybe_finish();
  });
  config_ = std::move(config);
  for (ListenerBinding& b : bindings) {
    auto listener = std::make_unique<Listener>(this, std::move(b));
    if (Status st = loop_->add_listener(listener->fd(), listener.get()); !st) return st;
    listeners_.push_back(std::move(listener));
  }
  thread_ = std::thread([this] { run(); });
  return {};
}

void Worker::run() {
  char name[16];
  std::snprintf(name, sizeof(name), "ag-worker-%d", index_);
  ::pthread_setname_np(::pthread_self(), name);
  if (dispatcher_) dispatcher_->make_current();
  metrics::Gauge& threads = metrics::thread_count("worker");
  threads.add(1);
  loop_->run();
  // Fast stop or the last connection of a graceful stop: release everything on this thread.
  ctx_->close_all();
  if (ctx_->paused_count() > 0) {
    // Connections closed while a TLS job is paused are freed when their job completes: run the
    // loop a little longer for them (bounded; what is left after that is not freed).
    event::Timer limit(loop_.get(), [this] { loop_->stop(); });
    limit.arm(std::chrono::seconds(5));
    ctx_->set_on_connection_closed([this] {
      if (ctx_->paused_count() == 0) loop_->stop();
    });
    loop_->run();
  }
  listeners_.clear();
  ctx_.reset();
  dispatcher_.reset();
  threads.add(-1);
  finished_ = true;
}

void Worker::pause_accepting() {
  if (accept_paused_) return;
  accept_paused_ = true;
  for (auto& l : listeners_) loop_->remove(l->fd());
}

void Worker::resume_accepting() {
  accept_paused_ = false;
  for (auto& l : listeners_) {
    if (Status st = loop_->add_listener(l->fd(), l.get()); !st) {
      AG_LOG_ALERT("cannot watch a listening socket: %s", st.error().message.c_str());
    }
  }
}

void Worker::apply_bindings(std::vector<ListenerBinding> bindings) {
  std::vector<std::unique_ptr<Listener>> kept;
  for (ListenerBinding& b : bindings) {
    bool found = false;
    for (auto& l : listeners_) {
      if (l && l->fd() == b.fd) {
        l->set_hosts(std::move(b.hosts));
        kept.push_back(std::move(l));
        found = true;
        break;
      }
    }
    if (found) continue;
    auto listener = std::make_unique<Listener>(this, std::move(b));
    // While accepting is paused, resume_accepting() registers it with the others.
    if (!accept_paused_) {
      if (Status st = loop_->add_listener(listener->fd(), listener.get()); !st) {
        AG_LOG_ALERT("cannot watch a listening socket: %s", st.error().message.c_str());
        continue;
      }
    }
    kept.push_back(std::move(listener));
  }
  for (auto& l : listeners_) {
    if (l && !accept_paused_) loop_->remove(l->fd());
  }
  listeners_ = std::move(kept);  // closes the dropped ones
}

void Worker::reload(std::shared_ptr<const config::Config> config,
                    std::vector<ListenerBinding> bindings) {
  loop_->post([this, config = std::move(config), bindings = std::move(bindings)]() mutable {
    if (stopping_) {
      for (ListenerBinding& b : bindings) {
        bool ours = false;
        for (auto& l : listeners_) ours |= l->fd() == b.fd;
        if (!ours) ::close(b.fd);
      }
      return;
    }
    if (dispatcher_) {
      // Engines are rebuilt for the new settings; their devices are shared with the old ones
      // when the settings did not change (DeviceStore), and ops in flight finish where they are.
      if (Status st = dispatcher_->reconfigure(config->offload); !st) {
        AG_LOG_ERROR("offload engines keep their old settings: %s", st.error().message.c_str());
      }
    }
    ctx_->configure_gzip(*config);
    config_ = std::move(config);
    apply_bindings(std::move(bindings));
  });
}

void Worker::graceful_stop() {
  loop_->post([this] {
    if (stopping_) return;
    stopping_ = true;
    if (!accept_paused_) {
      for (auto& l : listeners_) loop_->remove(l->fd());
    }
    listeners_.clear();
    ctx_->drain();
    maybe_finish();
  });
}

void Worker::fast_stop() {
  loop_->post([this] {
    stopping_ = true;
    loop_->stop();
  });
}

void Worker::maybe_finish() {
  if (stopping_ && ctx_->connection_count() == 0) loop_->stop();
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace accelgate::server
