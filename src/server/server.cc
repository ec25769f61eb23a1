#include "accelgate/server/server.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>

#include "accelgate/common/log.h"
#include "accelgate/http/connection.h"
#include "accelgate/offload/registry.h"
#include "accelgate/tls/tls_context.h"
#include "listeners.h"
#include "worker.h"

namespace accelgate::server {
namespace {

constexpr int kSignals[] = {SIGHUP, SIGQUIT, SIGTERM, SIGINT, SIGUSR1};

// ServerState is what the main thread owns while the server runs.
class ServerState {
 public:
  explicit ServerState(config::LoadOptions options) : options_(std::move(options)) {}

  Status start(const std::shared_ptr<const config::Config>& config);
  void reload();
  void graceful_stop();
  void fast_stop();
  bool all_finished() const;
  void join();
  const config::Config& config() const { return *config_; }

 private:
  // bindings_for builds each worker's listener list for |config|, binding new addresses and
  // reusing the sockets of addresses that were already bound.
  Result<std::vector<std::vector<ListenerBinding>>> bindings_for(
      const std::shared_ptr<const config::Config>& config);

  config::LoadOptions options_;
  std::shared_ptr<const config::Config> config_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<std::string, BoundAddress> bound_;
  bool stopping_ = false;
};

// log_offload_choice says in the error log which engine serves private-key operations, and
// warns when a batching engine runs with one accept per loop iteration (its batches then stay
// at one op: README, "Multi-buffer in the server").
void log_offload_choice(const config::Config& config) {
  const config::OffloadSettings& offload = config.offload;
  if (offload.crypto == "off") {
    AG_LOG_NOTICE("offload: crypto off: private keys stay with OpenSSL's default provider");
    return;
  }
  std::string engine = offload::resolve_crypto(offload);
  const offload::EngineFactory* factory = offload::find_engine(engine);
  std::string reason = factory == nullptr ? "unknown engine" : factory->probe(offload);
  if (!reason.empty()) engine = "sw";  // Dispatcher::create has warned why
  AG_LOG_NOTICE("offload: crypto %s: engine \"%s\", fallback %s", offload.crypto.c_str(),
                engine.c_str(), offload.fallback ? "on" : "off");
  if (engine == "mb" && !config.multi_accept) {
    AG_LOG_WARN(
        "offload: engine \"mb\" batches the handshakes a loop iteration sees, and with "
        "multi_accept off it accepts one connection per iteration, so batches stay small: "
        "set \"multi_accept on\" in the events block");
  }
}

Status write_pid_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("open() \"" + path + "\"", errno);
  std::string text = std::to_string(::getpid()) + "\n";
  ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return sys_error("write() \"" + path + "\"", errno);
  return {};
}

Result<std::vector<std::vector<ListenerBinding>>> ServerState::bindings_for(
    const std::shared_ptr<const config::Config>& config) {
  int workers = static_cast<int>(workers_.empty() ? config->worker_processes : workers_.size());
  std::vector<std::string> warnings;
  auto tls = tls::TlsContexts::create(config, &warnings);
  if (!tls) return tls.error();
  for (const std::string& w : warnings) AG_LOG_WARN("%s", w.c_str());
  auto hosts = build_virtual_hosts(config, *tls);
  std::map<std::string, BoundAddress> next;
  std::vector<BoundAddress> fresh;
  for (auto& [key, vhosts] : hosts) {
    auto it = bound_.find(key);
    if (it != bound_.end()) {
      // Already bound: keep the sockets (and, for port 0, the port the kernel chose), so a
      // reload never drops a queued connection.
      next.emplace(key, it->second);
      continue;
    }
    config::ListenAddress address = vhosts->default_server->listen.front();
    for (const config::ListenAddress& l : vhosts->default_server->listen) {
      if (address_key(l) == key) address = l;
    }
    auto bound = bind_address(address, workers);
    if (!bound) {
      for (BoundAddress& b : fresh) {
        for (int fd : b.fds) ::close(fd);
      }
      return bound.error();
    }
    AG_LOG_NOTICE("listening on %s (port %u)", key.c_str(), bound->port);
    fresh.push_back(*bound);
    next.emplace(key, std::move(*bound));
  }
  std::vector<std::vector<ListenerBinding>> per_worker(workers);
  for (auto& [key, b] : next) {
    auto vhosts = hosts.at(key);
    vhosts->port = b.port;
    for (int i = 0; i < workers; ++i) per_worker[i].push_back({b.fds[i], vhosts});
  }
  bound_ = std::move(next);
  return per_worker;
}

Status ServerState::start(const std::shared_ptr<const config::Config>& config) {
  config_ = config;
  auto bindings = bindings_for(config);
  if (!bindings) return bindings.error();
  for (int i = 0; i < config->worker_processes; ++i) {
    auto worker = std::make_unique<Worker>(i);
    if (Status st = worker->start(config, std::move((*bindings)[i])); !st) return st;
    workers_.push_back(std::move(worker));
  }
  AG_LOG_NOTICE("accelgate %s started: %d worker threads", "0.1.0", config->worker_processes);
  log_offload_choice(*config);
  return {};
}

void ServerState::reload() {
  if (stopping_) return;
  AG_LOG_NOTICE("reloading configuration \"%s\"", options_.file.c_str());
  auto next = config::load_config(options_);
  if (!next) {
    AG_LOG_ERROR("reload refused, the old configuration keeps serving: %s",
                 next.error().message.c_str());
    return;
  }
  std::shared_ptr<const config::Config> config = *next;
  for (const std::string& w : config->warnings) AG_LOG_WARN("%s", w.c_str());
  if ((config->offload.crypto == "off") != (config_->offload.crypto == "off")) {
    AG_LOG_WARN(
        "\"crypto off\" changed: the offload provider is loaded or dropped only at a "
        "restart; the engines follow the new settings");
  }
  if (config->worker_processes != static_cast<int>(workers_.size())) {
    AG_LOG_WARN("worker_processes changed to %d: applies after a restart, %zu workers keep running",
                config->worker_processes, workers_.size());
  }
  auto bindings = bindings_for(config);
  if (!bindings) {
    AG_LOG_ERROR("reload refused, the old configuration keeps serving: %s",
                 bindings.error().message.c_str());
    return;
  }
  if (config->error_log_path != config_->error_log_path ||
      config->error_log_level != config_->error_log_level) {
    if (Status st = log::open_error_log(config->error_log_path, config->error_log_level); !st) {
      AG_LOG_ERROR("cannot open the new error log: %s", st.error().message.c_str());
    }
  }
  config_ = config;
  for (size_t i = 0; i < workers_.size(); ++i) {
    workers_[i]->reload(config, std::move((*bindings)[i]));
  }
  AG_LOG_NOTICE("configuration reloaded");
}

void ServerState::graceful_stop() {
  stopping_ = true;
  for (auto& w : workers_) w->graceful_stop();
}

void ServerState::fast_stop() {
  stopping_ = true;
  for (auto& w : workers_) w->fast_stop();
}

bool ServerState::all_finished() const {
  for (const auto& w : workers_) {
    if (!w->finished()) return false;
  }
  return true;
}

void ServerState::join() {
  for (auto& w : workers_) w->join();
}

}  // namespace

void block_server_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kSignals) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

int run_server(const config::LoadOptions& options) {
  auto loaded = config::load_config(options);
  if (!loaded) {
    std::fprintf(stderr, "accelgate: [emerg] %s\n", loaded.error().message.c_str());
    return 1;
  }
  std::shared_ptr<const config::Config> config = *loaded;
  if (Status st = log::open_error_log(config->error_log_path, config->error_log_level); !st) {
    std::fprintf(stderr, "accelgate: [emerg] %s\n", st.error().message.c_str());
    return 1;
  }
  for (const std::string& w : config->warnings) AG_LOG_WARN("%s", w.c_str());
  tls::use_offload_provider(config->offload.crypto != "off");
  block_server_signals();
  ServerState state(options);
  if (Status st = state.start(config); !st) {
    AG_LOG(LogLevel::kEmerg, "%s", st.error().message.c_str());
    std::fprintf(stderr, "accelgate: [emerg] %s\n", st.error().message.c_str());
    state.fast_stop();
    state.join();
    return 1;
  }
  if (Status st = write_pid_file(config->pid_path); !st) {
    AG_LOG_ALERT("%s", st.error().message.c_str());
  }

  sigset_t set;
  sigemptyset(&set);
  for (int s : kSignals) sigaddset(&set, s);
  bool stopping = false;
  for (;;) {
    if (stopping && state.all_finished()) break;
    timespec wait{0, 100L * 1000 * 1000};
    int sig = ::sigtimedwait(&set, nullptr, &wait);
    if (sig < 0) continue;  // timeout or EINTR: check the workers again
    switch (sig) {
      case SIGHUP:
        state.reload();
        break;
      case SIGUSR1:
        AG_LOG_NOTICE("reopening logs");
        if (Status st = log::reopen_error_log(); !st) {
          AG_LOG_ALERT("%s", st.error().message.c_str());
        }
        http::reopen_access_logs();
        break;
      case SIGQUIT:
        AG_LOG_NOTICE("gracefully shutting down");
        state.graceful_stop();
        stopping = true;
        break;
      case SIGTERM:
      case SIGINT:
        AG_LOG_NOTICE("exiting");
        state.fast_stop();
        stopping = true;
        break;
    }
  }
  state.join();
  ::unlink(state.config().pid_path.c_str());
  AG_LOG_NOTICE("exit");
  return 0;
}

}  // namespace accelgate::server
