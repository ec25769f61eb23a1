#pragma once

// Builder turns the Directive tree into a Config. Every directive is a row in a table
// (DirectiveSpec): its name, the blocks it may appear in, how many arguments it takes, whether it
// opens a block or may appear only once per block, and the handler that stores its value. Rows
// are grouped by file (main_directives(), http_directives(), server_directives()); a new block or
// directive is a new row and, where it stores something, a new field.
//
// Inheritable http settings are collected as drafts (every field optional: "not set here") and
// merged http -> server -> location once the whole tree has been read, because nginx lets an
// http-level directive follow the server blocks it applies to.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "accelgate/config/config.h"
#include "ast.h"

namespace accelgate::config {

// Context is the kind of block a directive stands in; DirectiveSpec::contexts is a bit set.
enum Context : uint32_t {
  kMain = 1u << 0,
  kEvents = 1u << 1,
  kHttp = 1u << 2,
  kServer = 1u << 3,
  kLocation = 1u << 4,
  kOffload = 1u << 5,
};
inline constexpr uint32_t kHttpScopes = kHttp | kServer | kLocation;

// GzipDraft is GzipSettings as written in one http, server or location block.
struct GzipDraft {
  std::optional<bool> enabled;
  std::optional<int> level;
  std::optional<uint64_t> min_length;
  std::optional<std::pair<std::vector<std::string>, bool>> types;  // the list, and `*`
  std::optional<bool> vary;
  std::optional<int> http_version_minor;
  std::optional<uint32_t> proxied;
  // gzip_disable: msie6, and the regexes; several directives in one block add up.
  std::optional<std::pair<bool, std::vector<std::shared_ptr<const Regex>>>> disable;
  std::optional<std::pair<uint32_t, uint64_t>> buffers;
  std::optional<GzipSettings::Static> static_mode;
  std::optional<GzipSettings::Engine> engine;
  std::optional<uint64_t> offload_min_length;
  std::optional<uint64_t> cache_size;
};

// SettingsDraft is LocationSettings as written in one http, server or location block.
struct SettingsDraft {
  std::optional<std::string> root;  // resolved against the prefix
  std::optional<std::vector<std::string>> index;
  std::shared_ptr<MimeTypes> types;  // null: no `types` block here
  std::optional<std::string> default_type;
  std::optional<AccessLog> access_log;
  std::optional<bool> sendfile;
  std::optional<std::pair<Millis, std::optional<Millis>>> keepalive_timeout;
  std::optional<uint32_t> keepalive_requests;
  std::optional<Millis> client_body_timeout;
  std::optional<Millis> send_timeout;
  std::optional<uint64_t> client_max_body_size;
  GzipDraft gzip;
};

// ServerLimitsDraft holds the settings http and server blocks may set but locations may not.
struct ServerLimitsDraft {
  std::optional<Millis> client_header_timeout;
  std::optional<uint64_t> client_header_buffer_size;
  std::optional<std::pair<uint32_t, uint64_t>> large_client_header_buffers;
};

// TlsDraft is TlsSettings as written in one http or server block. Lists are optional as a whole:
// a block that gives any entry of a list replaces the outer block's list, as in nginx.
struct TlsDraft {
  struct SessionCache {
    TlsSettings::SessionCache kind = TlsSettings::SessionCache::kNone;
    std::string name;
    uint64_t size = 0;
    bool builtin = false;  // `builtin[:N]`, not `shared:NAME:SIZE`
    SourceLocation where;
  };
  struct Path {
    std::string path;  // absolute
    SourceLocation where;
  };
  std::optional<SourceLocation> where;  // the first ssl_* directive in this block
  std::optional<std::vector<Path>> certificates;
  std::optional<std::vector<Path>> keys;
  std::optional<uint32_t> protocols;
  std::optional<std::string> ciphers;
  std::optional<std::vector<std::pair<std::string, std::string>>> conf_commands;
  std::optional<std::string> ecdh_curve;
  std::optional<bool> prefer_server_ciphers;
  std::optional<SessionCache> session_cache;
  std::optional<Millis> session_timeout;
  std::optional<bool> session_tickets;
  std::optional<std::vector<std::string>> session_ticket_keys;
  std::vector<SourceLocation> session_ticket_key_where;  // parallel to session_ticket_keys
  std::optional<Millis> handshake_timeout;
};

struct LocationDraft {
  Location location;  // match, path, return, metrics, stub_status, where; settings come later
  SettingsDraft settings;
};

struct ServerDraft {
  Server server;  // listen, server_names, where; the rest comes from the drafts below
  SettingsDraft settings;
  ServerLimitsDraft limits;
  TlsDraft tls;
  std::optional<ReturnAction> return_action;
  std::vector<LocationDraft> locations;
  std::set<std::pair<bool, std::string>> location_keys;  // (exact, path): catches duplicates
};

struct HttpDraft {
  bool present = false;
  SettingsDraft settings;
  ServerLimitsDraft limits;
  TlsDraft tls;
  std::vector<ServerDraft> servers;
};

class Builder;
using Handler = void (*)(Builder& builder, const Directive& d);

inline constexpr int kAnyArgs = -1;

struct DirectiveSpec {
  enum Flags : uint32_t { kNone = 0, kBlock = 1u << 0, kOnce = 1u << 1 };
  const char* name;
  uint32_t contexts;  // bit set of Context
  int min_args;
  int max_args;  // kAnyArgs: no limit
  uint32_t flags;
  Handler handler;
};

// The directive tables, one per file that implements them.
std::span<const DirectiveSpec> main_directives();  // build_main.cc: main and events
std::span<const DirectiveSpec> http_directives();  // build_http.cc: http, server, location settings
std::span<const DirectiveSpec> server_directives();   // build_server.cc: server, listen, location
std::span<const DirectiveSpec> tls_directives();      // build_tls.cc: ssl_*
std::span<const DirectiveSpec> offload_directives();  // build_offload.cc: offload { }
std::span<const DirectiveSpec> gzip_directives();     // build_gzip.cc: gzip*

class Builder {
 public:
  // |prefix| is absolute; relative paths in the file resolve against it, except TLS files,
  // which resolve against |conf_dir| (the main file's directory), as nginx's conf prefix.
  Builder(std::string prefix, std::string conf_dir);

  // build reads the main file's directives; finish merges and validates and returns the tree.
  void build(const std::vector<Directive>& top);
  std::shared_ptr<Config> finish();

  // run_block checks and runs the children of |block| as directives of |context|.
  void run_block(const Directive& block, Context context);

  Context context() const { return context_; }
  Config& config() { return *config_; }
  HttpDraft& http() { return http_; }
  // settings is the draft of the innermost http, server or location block.
  SettingsDraft& settings();
  // limits is the draft of the innermost http or server block.
  ServerLimitsDraft& limits();
  // tls is the TLS draft of the innermost http or server block.
  TlsDraft& tls();
  ServerDraft& server() { return *server_; }
  LocationDraft* location() { return location_; }
  void set_server(ServerDraft* server) { server_ = server; }
  void set_location(LocationDraft* location) { location_ = location; }

  // resolve_path makes |path| absolute against the prefix and normalises it.
  std::string resolve_path(const std::string& path) const;
  // resolve_conf_path makes |path| absolute against the configuration directory.
  std::string resolve_conf_path(const std::string& path) const;
  void warn(const SourceLocation& where, const std::string& message);

 private:
  void dispatch(const Directive& d, std::vector<const char*>& seen);
  LocationSettings finish_settings(const SettingsDraft& draft) const;
  void check_listens();
  void check_session_caches();

  std::string prefix_;
  std::string conf_dir_;
  std::shared_ptr<Config> config_;
  HttpDraft http_;
  Context context_ = kMain;
  ServerDraft* server_ = nullptr;
  LocationDraft* location_ = nullptr;
  std::shared_ptr<const MimeTypes> default_types_;
};

// Helpers for handlers. Each throws a ConfigError at |d|'s line.
[[noreturn]] void invalid_value(const Directive& d, const std::string& value,
                                const std::string& hint = "");
uint64_t number_arg(const Directive& d, size_t i, uint64_t min, uint64_t max);
uint64_t size_arg(const Directive& d, size_t i);
Millis time_arg(const Directive& d, size_t i);
bool flag_arg(const Directive& d, size_t i);
// path_arg is argument |i| made absolute against the prefix; empty paths and variables (which
// nginx expands per request) are refused.
std::string path_arg(Builder& b, const Directive& d, size_t i);
// conf_path_arg is path_arg against the configuration directory (certificates, keys).
std::string conf_path_arg(Builder& b, const Directive& d, size_t i);
std::string quote(const std::string& s);

// merge_settings fills every field |inner| leaves unset from |outer|.
void merge_settings(SettingsDraft& inner, const SettingsDraft& outer);
// merge_gzip and finish_gzip do the same for the gzip directives (build_gzip.cc).
void merge_gzip(GzipDraft& inner, const GzipDraft& outer);
GzipSettings finish_gzip(const GzipDraft& draft);

// finish_tls merges |outer| (the http block's draft) into |inner| (a server's) and returns the
// settings; a certificate without its key (or a key without a certificate) is an error at that
// directive's line. |server_where| stands in for TlsSettings::where when no ssl_* directive
// applies.
TlsSettings finish_tls(TlsDraft& inner, const TlsDraft& outer, const SourceLocation& server_where);

}  // namespace accelgate::config
