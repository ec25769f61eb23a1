#include "stats.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace accelgate::provider {
namespace {

struct Stats {
  std::mutex mutex;
  std::map<std::string, uint64_t> counts;
};

// Never destroyed: an operation may still be counted while the process exits.
Stats& stats() {
  static auto* s = new Stats();
  return *s;
}

// The exit-time write, for applications that never tear the provider down. In the module it
// runs when the module is unloaded or at exit, whichever comes first.
struct ExitWriter {
  ~ExitWriter() { write_stats_file(); }
} g_exit_writer;

}  // namespace

void count_op(offload::OpKind kind, std::string_view engine) {
  std::string key(offload::op_kind_name(kind));
  key += ' ';
  key += engine;
  Stats& s = stats();
  std::lock_guard lock(s.mutex);
  ++s.counts[key];
}

std::map<std::string, uint64_t> op_counts() {
  Stats& s = stats();
  std::lock_guard lock(s.mutex);
  return s.counts;
}

void write_stats_file() {
  const char* path = std::getenv("ACCELGATE_STATS_FILE");
  if (path == nullptr || *path == '\0') return;
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "accelgate provider: cannot write %s\n", path);
    return;
  }
  for (const auto& [key, n] : op_counts()) {
    std::fprintf(f, "%s %llu\n", key.c_str(), static_cast<unsigned long long>(n));
  }
  std::fclose(f);
}

}  // namespace accelgate::provider
