#pragma once

// Worker: one thread with its own EventLoop, its own SO_REUSEPORT listening sockets and its
// connections. The main thread talks to it only by posting tasks to its loop.

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "accelgate/config/config.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/http/connection.h"
#include "accelgate/http/virtual_hosts.h"
#include "accelgate/offload/dispatcher.h"

namespace accelgate::server {

// ListenerBinding gives a worker one listening socket (which it owns from then on) and what is
// served there.
struct ListenerBinding {
  int fd = -1;
  std::shared_ptr<const http::VirtualHosts> hosts;
};

class Listener;

class Worker {
 public:
  explicit Worker(int index);
  ~Worker();

  // start creates the loop and starts the thread; |bindings| are owned by the worker from now on.
  Status start(std::shared_ptr<const config::Config> config, std::vector<ListenerBinding> bindings);
  // reload switches new connections to |config|: listeners whose fd is in |bindings| serve the
  // new hosts, new fds are added, listeners not in |bindings| are closed.
  void reload(std::shared_ptr<const config::Config> config, std::vector<ListenerBinding> bindings);
  void graceful_stop();
  void fast_stop();
  // finished says whether the thread's loop has returned.
  bool finished() const { return finished_.load(); }
  void join();

 private:
  friend class Listener;
  void run();
  void apply_bindings(std::vector<ListenerBinding> bindings);
  // pause_accepting stops listening (the worker is full or out of descriptors);
  // resume_accepting listens again (a connection closed).
  void pause_accepting();
  void resume_accepting();
  void maybe_finish();

  int index_;
  std::unique_ptr<event::EventLoop> loop_;
  std::unique_ptr<http::WorkerContext> ctx_;
  // The worker's offload dispatcher (null with `crypto off`); current on the worker's thread, so
  // the provider finds it from inside a handshake's async job. Freed after the loop's last run.
  std::unique_ptr<offload::Dispatcher> dispatcher_;
  std::shared_ptr<const config::Config> config_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  bool accept_paused_ = false;
  bool stopping_ = false;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace accelgate::server
