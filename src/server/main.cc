// accelgate: the server binary. Parses the command line (nginx's flags where they mean the same)
// and hands over to run_server(). The only file not linked into tests.

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "accelgate/compress/gzip.h"
#include "accelgate/config/config.h"
#include "accelgate/offload/registry.h"
#include "accelgate/server/server.h"
#include "accelgate/tls/tls_context.h"
#include "allocator.h"

namespace {

constexpr const char* kVersion = "0.1.0";

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: accelgate [-?hvt] [-s signal] [-p prefix] [-c filename]\n\n"
               "Options:\n"
               "  -?,-h         : this help\n"
               "  -v            : show version and build options, then exit\n"
               "  -t            : test configuration and exit\n"
               "  -s signal     : send signal to the running server: stop, quit, reopen, reload\n"
               "  -p prefix     : set prefix path (default: the current directory)\n"
               "  -c filename   : set configuration file (default: conf/accelgate.conf)\n"
               "  --engines     : list the offload engines, whether each can run here and what\n"
               "                  it accelerates (with the `offload` settings of -c), then exit\n");
}

void print_version() {
  std::printf("accelgate version %s\n", kVersion);
  std::printf("built with GCC %d.%d.%d, C++%ld\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__,
              __cplusplus / 100 % 100);
#if defined(__SANITIZE_ADDRESS__)
  std::printf("build options: sanitizers=address,undefined\n");
#else
  std::printf("build options: release\n");
#endif
  std::printf("allocator: %s\n", accelgate::server::allocator_name().c_str());
}

int send_signal(const accelgate::config::LoadOptions& options, const std::string& name) {
  int sig = name == "stop"     ? SIGTERM
            : name == "quit"   ? SIGQUIT
            : name == "reopen" ? SIGUSR1
            : name == "reload" ? SIGHUP
                               : 0;
  if (sig == 0) {
    std::fprintf(stderr, "accelgate: invalid option: \"-s %s\"\n", name.c_str());
    return 1;
  }
  auto config = accelgate::config::load_config(options);
  if (!config) {
    std::fprintf(stderr, "accelgate: [emerg] %s\n", config.error().message.c_str());
    return 1;
  }
  const std::string& pid_path = (*config)->pid_path;
  std::ifstream in(pid_path);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) {
    std::fprintf(stderr, "accelgate: [error] invalid PID number in \"%s\"\n", pid_path.c_str());
    return 1;
  }
  if (::kill(static_cast<pid_t>(pid), sig) != 0) {
    std::fprintf(stderr, "accelgate: [error] kill(%ld, %d) failed: %s\n", pid, sig,
                 std::strerror(errno));
    return 1;
  }
  return 0;
}

// print_engines is `accelgate --engines`: every engine, available or why not, and which one the
// configuration's `crypto` setting picks.
int print_engines(const accelgate::config::LoadOptions& options, bool conf_given) {
  accelgate::config::OffloadSettings settings;
  auto config = accelgate::config::load_config(options);
  if (config) {
    settings = (*config)->offload;
  } else if (conf_given || ::access(options.file.c_str(), F_OK) == 0) {
    std::fprintf(stderr, "accelgate: [emerg] %s\n", config.error().message.c_str());
    return 1;
  }
  std::printf("%-8s %-10s %s\n", "engine", "status", "accelerates");
  for (const auto& e : accelgate::offload::describe_engines(settings)) {
    std::printf("%-8s %-10s %s%s\n", e.name.c_str(), e.available ? "available" : "no",
                e.accelerates.c_str(), e.chosen ? "  <- chosen" : "");
    if (!e.available) std::printf("%-8s %-10s (%s)\n", "", "", e.reason.c_str());
    if (!e.detail.empty()) std::printf("%-8s %-10s %s\n", "", "", e.detail.c_str());
  }
  std::string chosen = accelgate::offload::resolve_crypto(settings);
  std::printf("crypto %s: %s, fallback %s\n", settings.crypto.c_str(),
              settings.crypto == "off" ? "no offload (OpenSSL's default provider)"
                                       : ("engine \"" + chosen + "\"").c_str(),
              settings.fallback ? "on" : "off");
  // gzip: the codecs (all built in), what `gzip_engine auto` takes per level, where ops run.
  std::string levels;
  for (int level = accelgate::compress::kMinLevel; level <= accelgate::compress::kMaxLevel;
       ++level) {
    if (!levels.empty()) levels += ", ";
    levels += std::to_string(level) + " " +
              std::string(accelgate::compress::codec_name(
                  accelgate::compress::choose_codec(std::nullopt, level)));
  }
  std::printf("gzip engines isal, libdeflate, zlib; gzip_engine auto by level: %s\n",
              levels.c_str());
  std::printf(
      "gzip ops (bodies of gzip_offload_min_length and more): engine \"pool\", "
      "software on the loop when it is busy\n");
  return 0;
}

// check_offload is the offload part of `-t`: an engine that cannot run here is an error with
// `fallback off` and a warning with `fallback on` (software serves instead).
bool check_offload(const accelgate::config::Config& config) {
  const accelgate::config::OffloadSettings& o = config.offload;
  if (o.crypto == "off") return true;
  std::string engine = accelgate::offload::resolve_crypto(o);
  const accelgate::offload::EngineFactory* f = accelgate::offload::find_engine(engine);
  std::string reason = f == nullptr ? "unknown engine" : f->probe(o);
  if (reason.empty()) return true;
  std::string where =
      o.where.file.empty() ? config.file : o.where.file + ":" + std::to_string(o.where.line);
  std::fprintf(stderr, "accelgate: [%s] %s: offload engine \"%s\" cannot be used: %s%s\n",
               o.fallback ? "warn" : "emerg", where.c_str(), engine.c_str(), reason.c_str(),
               o.fallback ? " (fallback on: software serves)" : "");
  return o.fallback;
}

}  // namespace

int main(int argc, char** argv) {
  accelgate::config::LoadOptions options;
  std::string conf_file;
  std::string signal_name;
  bool test_only = false;
  bool engines = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto need_value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "accelgate: option \"%s\" requires a value\n", flag);
        std::exit(1);
      }
      return argv[++i];
    };
    if (arg == "-h" || arg == "-?" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if (arg == "-v" || arg == "-V" || arg == "--version") {
      print_version();
      return 0;
    } else if (arg == "--engines") {
      engines = true;
    } else if (arg == "-t") {
      test_only = true;
    } else if (arg == "-c") {
      conf_file = need_value("-c");
    } else if (arg == "-p") {
      options.prefix = need_value("-p");
    } else if (arg == "-s") {
      signal_name = need_value("-s");
    } else {
      std::fprintf(stderr, "accelgate: invalid option: \"%s\"\n", arg.c_str());
      usage(stderr);
      return 1;
    }
  }
  bool conf_given = !conf_file.empty();
  if (conf_file.empty()) conf_file = "conf/accelgate.conf";
  // As nginx: a relative -c names a file under the prefix.
  if (conf_file[0] != '/' && !options.prefix.empty()) {
    conf_file = options.prefix + "/" + conf_file;
  }
  options.file = conf_file;

  if (!signal_name.empty()) return send_signal(options, signal_name);
  if (engines) return print_engines(options, conf_given);
  if (test_only) {
    auto config = accelgate::config::load_config(options);
    if (!config) {
      std::fprintf(stderr, "accelgate: [emerg] %s\n", config.error().message.c_str());
      std::fprintf(stderr, "accelgate: configuration file %s test failed\n", conf_file.c_str());
      return 1;
    }
    // Certificates, keys and TLS settings are checked too, as nginx -t does.
    if (!check_offload(**config)) {
      std::fprintf(stderr, "accelgate: configuration file %s test failed\n", conf_file.c_str());
      return 1;
    }
    accelgate::tls::use_offload_provider((*config)->offload.crypto != "off");
    std::vector<std::string> warnings = (*config)->warnings;
    auto tls = accelgate::tls::TlsContexts::create(*config, &warnings);
    for (const std::string& w : warnings) std::fprintf(stderr, "accelgate: [warn] %s\n", w.c_str());
    if (!tls) {
      std::fprintf(stderr, "accelgate: [emerg] %s\n", tls.error().message.c_str());
      std::fprintf(stderr, "accelgate: configuration file %s test failed\n", conf_file.c_str());
      return 1;
    }
    std::fprintf(stderr, "accelgate: the configuration file %s syntax is ok\n",
                 (*config)->file.c_str());
    std::fprintf(stderr, "accelgate: configuration file %s test is successful\n",
                 (*config)->file.c_str());
    return 0;
  }
  return accelgate::server::run_server(options);
}
