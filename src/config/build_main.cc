// Directives of the main context and of `events { }`.

#include <unistd.h>

#include <algorithm>

#include "builder.h"

namespace accelgate::config {
namespace {

constexpr uint64_t kMaxWorkers = 1024;

void worker_processes(Builder& b, const Directive& d) {
  if (d.args[0] == "auto") {
    long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    b.config().worker_processes = static_cast<int>(std::clamp<long>(cpus, 1, kMaxWorkers));
    return;
  }
  auto n = number_arg(d, 0, 1, kMaxWorkers);
  b.config().worker_processes = static_cast<int>(n);
}

void pid(Builder& b, const Directive& d) {
  if (d.args[0].empty()) invalid_value(d, d.args[0]);
  b.config().pid_path = b.resolve_path(d.args[0]);
}

void error_log(Builder& b, const Directive& d) {
  const std::string& file = d.args[0];
  if (file.empty()) invalid_value(d, file);
  if (file.starts_with("syslog:") || file.starts_with("memory:")) {
    invalid_value(d, file, "only a file or \"stderr\" is supported");
  }
  b.config().error_log_path = file == "stderr" ? file : b.resolve_path(file);
  if (d.args.size() == 2) {
    auto level = parse_log_level(d.args[1]);
    if (!level) {
      invalid_value(d, d.args[1],
                    "expecting debug, info, notice, warn, error, crit, alert or emerg");
    }
    b.config().error_log_level = *level;
  } else {
    b.config().error_log_level = LogLevel::kError;
  }
}

void worker_rlimit_nofile(Builder& b, const Directive& d) {
  b.config().worker_rlimit_nofile = static_cast<uint32_t>(number_arg(d, 0, 1, UINT32_MAX));
}

void daemon(Builder&, const Directive& d) {
  if (!flag_arg(d, 0)) return;
  fail(d.where,
       "\"daemon on\" is not supported: accelgate always runs in the foreground "
       "(use a service manager to run it in the background)");
}

void events(Builder& b, const Directive& d) { b.run_block(d, kEvents); }

void http(Builder& b, const Directive& d) {
  b.http().present = true;
  b.run_block(d, kHttp);
}

void worker_connections(Builder& b, const Directive& d) {
  b.config().worker_connections = static_cast<uint32_t>(number_arg(d, 0, 1, 1u << 24));
}

void use(Builder&, const Directive& d) {
  if (d.args[0] != "epoll") invalid_value(d, d.args[0], "only \"epoll\" is supported");
}

void multi_accept(Builder& b, const Directive& d) { b.config().multi_accept = flag_arg(d, 0); }

using F = DirectiveSpec::Flags;

constexpr DirectiveSpec kMainDirectives[] = {
    {"worker_processes", kMain, 1, 1, F::kOnce, worker_processes},
    {"pid", kMain, 1, 1, F::kOnce, pid},
    {"error_log", kMain, 1, 2, F::kOnce, error_log},
    {"worker_rlimit_nofile", kMain, 1, 1, F::kOnce, worker_rlimit_nofile},
    {"daemon", kMain, 1, 1, F::kOnce, daemon},
    {"events", kMain, 0, 0, F::kBlock | F::kOnce, events},
    {"http", kMain, 0, 0, F::kBlock | F::kOnce, http},
    {"worker_connections", kEvents, 1, 1, F::kOnce, worker_connections},
    {"use", kEvents, 1, 1, F::kOnce, use},
    {"multi_accept", kEvents, 1, 1, F::kOnce, multi_accept},
};

}  // namespace

std::span<const DirectiveSpec> main_directives() { return kMainDirectives; }

}  // namespace accelgate::config
