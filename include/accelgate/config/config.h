#pragma once

// The typed, validated configuration tree. A Config is built once by load_config() from an
// nginx-syntax file and is immutable afterwards: workers share it as std::shared_ptr<const Config>
// and a reload builds a new one (DESIGN.md, "Threads"). Every inheritable http setting is already
// merged down (http -> server -> location) when load_config() returns, so the request path reads a
// Location's values directly and never walks parents.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "accelgate/common/log.h"
#include "accelgate/common/regex.h"
#include "accelgate/common/result.h"

namespace accelgate::config {

using Millis = std::chrono::milliseconds;

// Where a directive was written; kept on values that are checked again at run time (listen
// addresses, files) so the message can still name the line.
struct SourceLocation {
  std::string file;
  int line = 0;
};

// ListenAddress is one `listen` directive. |host| is "" for the wildcard address (`listen 8080;`
// or `listen *:8080;`), else a numeric IPv4 or IPv6 address or a host name resolved at load time to
// |addr| text form.
struct ListenAddress {
  std::string host;    // numeric address ("127.0.0.1", "::1"), "" = any IPv4 address
  bool ipv6 = false;   // `listen [::]:80;` and `listen [::1]:80;`
  uint16_t port = 80;  // 0 is allowed: the kernel picks a port (tests)
  bool default_server = false;
  bool reuseport = false;  // accepted; every worker always binds with SO_REUSEPORT
  int backlog = 511;       // nginx's default on Linux
  bool ssl = false;        // `listen ... ssl`: TLS on this address (every server on it needs
                           // a certificate, checked at load time)
  SourceLocation where;
};

// ReturnAction is `return CODE [TEXT|URL];` or `return URL;`. |text| may hold variables
// ($scheme, $host, $request_uri, $uri, $args, $server_name, $server_port, $remote_addr); they
// were checked at load time and are expanded per request by the http layer.
struct ReturnAction {
  int code = 0;
  std::string text;  // body text for non-redirect codes, Location URL for 301/302/303/307/308
  bool has_text = false;
};

// MimeTypes maps a lower-case file extension (without the dot) to a content type.
using MimeTypes = std::unordered_map<std::string, std::string>;

// AccessLog is `access_log FILE [combined] [buffer=SIZE] [flush=TIME];` or `access_log off;`.
struct AccessLog {
  bool enabled = true;
  std::string path;        // absolute after load
  size_t buffer_size = 0;  // 0 = unbuffered (nginx default); the shipped config buffers
  Millis flush{0};         // with buffer: longest time a line may wait
};

// GzipSettings are the gzip directives (nginx's ngx_http_gzip_module, ngx_http_gzip_static_module
// and the core module's gzip_* request tests, with their defaults) and accelgate's own
// (`gzip_engine`, `gzip_offload_min_length`, `gzip_cache`). See docs/configuration.md.
struct GzipSettings {
  bool enabled = false;      // gzip on|off
  int level = 1;             // gzip_comp_level 1..9
  uint64_t min_length = 20;  // gzip_min_length: shorter responses stay uncompressed
  std::vector<std::string> types{"text/html"};  // gzip_types, lower case; text/html always
  bool any_type = false;                        // gzip_types *
  bool vary = false;                            // gzip_vary
  int http_version_minor = 1;                   // gzip_http_version 1.0 (0) | 1.1 (1)
  // gzip_proxied: what requests with a Via header may get (nginx's bits).
  enum Proxied : uint32_t {
    kProxiedOff = 1u << 0,
    kProxiedExpired = 1u << 1,
    kProxiedNoCache = 1u << 2,
    kProxiedNoStore = 1u << 3,
    kProxiedPrivate = 1u << 4,
    kProxiedNoLastModified = 1u << 5,
    kProxiedNoEtag = 1u << 6,
    kProxiedAuth = 1u << 7,
    kProxiedAny = 1u << 8,
  };
  uint32_t proxied = kProxiedOff;
  bool disable_msie6 = false;                         // gzip_disable msie6
  std::vector<std::shared_ptr<const Regex>> disable;  // gzip_disable REGEX ... (caseless)
  uint32_t buffers_num = 32;                          // gzip_buffers: accepted, not used
  uint64_t buffers_size = 4096;                       // (bodies are compressed whole)
  enum class Static { kOff, kOn, kAlways };
  Static static_mode = Static::kOff;  // gzip_static off|on|always
  enum class Engine { kAuto, kIsal, kLibdeflate, kZlib };
  Engine engine = Engine::kAuto;                     // gzip_engine
  uint64_t offload_min_length = uint64_t{64} << 10;  // gzip_offload_min_length
  uint64_t cache_size = uint64_t{64} << 20;          // gzip_cache SIZE|off (0 = off)
};

// LocationSettings are the settings nginx lets http, server and location blocks set, already
// merged (a value set in an inner block wins). Shared by reference from Location.
struct LocationSettings {
  std::string root;  // absolute after load, no trailing '/'
  std::vector<std::string> index{"index.html"};
  std::shared_ptr<const MimeTypes> types;  // never null after load
  std::string default_type = "text/plain";
  AccessLog access_log;
  bool sendfile = false;  // nginx's default is off
  Millis keepalive_timeout{75'000};
  std::optional<Millis> keepalive_header;  // second keepalive_timeout argument
  uint32_t keepalive_requests = 1000;
  Millis client_body_timeout{60'000};
  Millis send_timeout{60'000};
  uint64_t client_max_body_size = 1 << 20;  // 0 = unlimited
  GzipSettings gzip;
};

// Location is one `location [=|^~] PATH { ... }` block (or the server's own settings, see
// Server::fallback).
struct Location {
  enum class Match { kPrefix, kExact, kPrefixNoRegex };
  Match match = Match::kPrefix;
  std::string path;
  LocationSettings settings;
  std::optional<ReturnAction> return_action;
  bool metrics = false;      // `metrics;`: serve Prometheus text
  bool stub_status = false;  // `stub_status;`: serve nginx's stub_status text
  SourceLocation where;
};

// ServerName is one `server_name` entry: an exact name, a leading wildcard `*.example.com` or
// `.example.com` (the latter also matches example.com itself), or a trailing wildcard `www.*`.
struct ServerName {
  enum class Kind { kExact, kLeadingWildcard, kTrailingWildcard };
  Kind kind = Kind::kExact;
  std::string name;       // lower case; for wildcards the fixed part ("example.com", "www.")
  bool dot_form = false;  // `.example.com`: matches the bare name too
};

// TLS protocol versions for ssl_protocols (bit set).
enum TlsProtocol : uint32_t { kTlsV12 = 1u << 0, kTlsV13 = 1u << 1 };

// CertificateKey is one `ssl_certificate FILE;` with its `ssl_certificate_key FILE;` (the n-th
// certificate pairs with the n-th key in the same block). Paths are absolute after load.
struct CertificateKey {
  std::string certificate;
  std::string key;
  SourceLocation where;  // the ssl_certificate directive
};

// TlsSettings are the ssl_* directives, merged http -> server as nginx does (they are not
// allowed in location). Defaults are nginx's.
struct TlsSettings {
  std::vector<CertificateKey> certificates;  // an RSA and an ECDSA one may both be given
  uint32_t protocols = kTlsV12 | kTlsV13;    // TLSv1/TLSv1.1 refused at load time
  std::string ciphers = "HIGH:!aNULL:!MD5";  // TLS 1.2 cipher list (OpenSSL syntax)
  std::vector<std::pair<std::string, std::string>> conf_commands;  // ssl_conf_command NAME VALUE
  std::string ecdh_curve = "auto";  // "auto" or "X25519:prime256v1:..."
  bool prefer_server_ciphers = false;
  enum class SessionCache { kNone, kOff, kShared };
  SessionCache session_cache = SessionCache::kNone;  // nginx's default: none
  std::string session_cache_name;                    // shared:NAME:SIZE
  uint64_t session_cache_size = 0;                   // bytes
  Millis session_timeout{300'000};                   // 5m
  bool session_tickets = true;
  std::vector<std::string> session_ticket_keys;          // absolute paths; the first encrypts
  std::vector<SourceLocation> session_ticket_key_where;  // each key's directive
  Millis handshake_timeout{60'000};                      // ssl_handshake_timeout
  SourceLocation where;                                  // first ssl_* directive, for messages
};

struct Server {
  std::vector<ListenAddress> listen;
  std::vector<ServerName> server_names;  // empty: matches only via default_server
  std::vector<Location> locations;       // in file order; matching is done by the http layer
  Location fallback;                     // server-level settings: used when no location matches
  Millis client_header_timeout{60'000};
  uint64_t client_header_buffer_size = 1024;
  uint32_t large_client_header_buffers_num = 4;
  uint64_t large_client_header_buffers_size = 8192;
  TlsSettings tls;
  SourceLocation where;
};

struct HttpConfig {
  std::vector<Server> servers;
  bool present = false;  // an `http` block was given
  // gzip_cache_size is the size of the one gzip cache all workers share: the largest
  // `gzip_cache` of any location with `gzip on` (0: no cache anywhere).
  uint64_t gzip_cache_size = 0;
};

// OffloadSettings is the `offload { }` block of the main context (DESIGN.md, "Configuration").
struct OffloadSettings {
  // crypto: "auto" (the best available engine), "off" (no offload framework: keys stay with
  // OpenSSL's default provider, the plain path), or an engine name: "sw", "pool", "emu", "mb",
  // "openssl:<id>".
  std::string crypto = "auto";
  bool fallback = true;         // software when an engine is busy, fails or times out
  Millis op_timeout{50};        // an op not completed by then is redone in software
  Millis retry_interval{5000};  // how long a failing engine stays out before a probe
  int pool_threads = 0;         // 0 = auto: one per online CPU
  enum class Notify { kEvent, kPoll };
  Notify notify = Notify::kEvent;  // openssl:<id>: wait fds in epoll, or polling
  enum class PollMode { kHeuristic, kTimer, kBusy };
  PollMode poll_mode = PollMode::kHeuristic;
  // mb_flush: how long the mb engine lets a partial batch wait for more ops, while its kind of
  // op comes several at a time (the recent batches' fill; a lone op after lone ops is computed
  // at once); the loop sleeps meanwhile. 0: computed when the loop goes idle, which under load
  // is after a whole burst of events. The module in other applications uses 20us (ops arrive
  // one by one from the application's thread).
  std::chrono::microseconds mb_flush{100};
  // EngineCtrl is one `openssl_engine_ctrl NAME [VALUE];`: a control command sent to an OpenSSL
  // ENGINE (openssl:<id>) before ENGINE_init, in the order written.
  struct EngineCtrl {
    std::string name;
    std::string value;
    bool has_value = false;  // `openssl_engine_ctrl NAME;` sends no value
    SourceLocation where;
  };
  std::vector<EngineCtrl> engine_ctrls;
  // The emulated device (`emu`), for tests and demonstrations.
  struct Emu {
    std::chrono::microseconds latency{200};  // from submission to completion, at least
    uint32_t capacity = 64;                  // ops in flight; one more is Busy
    double error_rate = 0;                   // fraction of ops completed with an error
    double hang_rate = 0;                    // fraction of ops never completed
    std::string control;                     // a file: "down" in it takes the device down
  };
  Emu emu;
  SourceLocation where;  // the `offload` block, or the main file when there is none
};

struct Config {
  std::string file;            // absolute path of the main file
  std::string prefix;          // absolute; relative paths in the file resolve against it
  int worker_processes = 1;    // `auto` resolved to the number of online CPUs
  std::string pid_path;        // absolute; default <prefix>/var/accelgate.pid
  std::string error_log_path;  // absolute; default <prefix>/var/error.log; "stderr" allowed
  LogLevel error_log_level = LogLevel::kError;
  uint32_t worker_connections = 512;
  bool multi_accept = false;          // events { multi_accept on; }
  uint32_t worker_rlimit_nofile = 0;  // 0 = not set: leave RLIMIT_NOFILE as it is
  OffloadSettings offload;
  HttpConfig http;
  // warnings are "file:line: message" lines nginx would log at warn level while loading
  // (a conflicting server_name, a duplicate MIME extension); the caller logs them.
  std::vector<std::string> warnings;
};

// LoadOptions say where the main file is and what relative paths resolve against.
struct LoadOptions {
  std::string file;    // as given with -c; relative to the current directory
  std::string prefix;  // as given with -p; "" = the current directory
};

// load_config reads, parses and validates the whole configuration, following `include`s. On
// failure the Error message is "file:line: what was wrong", ready to print. Never throws.
Result<std::shared_ptr<const Config>> load_config(const LoadOptions& options);

// parse_config_text is load_config over an in-memory main file named |name| (includes are
// resolved against |base_dir|). Used by tests and the config fuzzer.
Result<std::shared_ptr<const Config>> parse_config_text(const std::string& text,
                                                        const std::string& name,
                                                        const std::string& base_dir);

}  // namespace accelgate::config
