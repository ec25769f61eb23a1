#include "accelgate/http/connection.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "accelgate/common/log.h"
#include "accelgate/compress/cache.h"
#include "accelgate/compress/offload.h"
#include "accelgate/tls/tls_transport.h"
#include "access_log.h"
#include "http_connection.h"
#include "http_stats.h"
#include "response.h"

namespace accelgate::http {
namespace {

constexpr size_t kFileBufferSize = size_t{64} * 1024;

std::string format_peer(const sockaddr_storage& peer) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (peer.ss_family == AF_INET) {
    // By hand: inet_ntop formats each octet with sprintf, a noticeable cost per connection.
    const auto* in = reinterpret_cast<const sockaddr_in*>(&peer);
    const auto* octet = reinterpret_cast<const uint8_t*>(&in->sin_addr);
    std::string out;
    out.reserve(sizeof("255.255.255.255:65535"));
    for (int i = 0; i < 4; ++i) {
      if (i > 0) out.push_back('.');
      out.append(std::to_string(octet[i]));
    }
    out.push_back(':');
    out.append(std::to_string(ntohs(in->sin_port)));
    return out;
  }
  if (peer.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&peer);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "unknown";
}

}  // namespace

WorkerContext::WorkerContext(event::EventLoop* loop, int index)
    : loop_(loop),
      index_(index),
      access_log_(std::make_unique<AccessLogBuffer>()),
      access_log_flush_(loop, [this] { access_log_->flush_all(); }),
      file_buffer_(kFileBufferSize) {}

WorkerContext::~WorkerContext() {
  close_all();
  // A connection whose TLS job is still paused cannot be freed safely (its engine may still
  // complete it); at exit it is left to the process's end rather than freed under the job.
  for (auto& c : connections_) {
    if (paused_.count(c.get())) (void)c.release();
  }
  access_log_->flush_all();
}

void WorkerContext::accept_connection(int fd, const sockaddr_storage& peer,
                                      std::shared_ptr<const VirtualHosts> hosts) {
  stats().accepted.inc();
  stats().handled.inc();
  stats().active.add(1);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::unique_ptr<event::Transport> transport;
  bool tls = hosts->ssl;
  std::string peer_name = format_peer(peer);
  if (tls) {
    const VirtualHosts* vhosts = hosts.get();  // outlives the transport: the connection holds it
    transport = std::make_unique<tls::TlsTransport>(
        fd, hosts->tls->for_server(hosts->default_server), loop_,
        [vhosts](std::string_view name) {
          return vhosts->tls->for_server(vhosts->find_server(name));
        },
        peer_name);
  } else {
    transport = std::make_unique<event::PlainTransport>(fd);
  }
  auto conn = std::make_unique<HttpConnection>(this, std::move(transport), std::move(peer_name),
                                               std::move(hosts), tls);
  HttpConnection* raw = conn.get();
  connections_.push_front(std::move(conn));
  raw->self = connections_.begin();
  if (Status st = loop_->add(fd, raw); !st) {
    AG_LOG_ERROR("cannot watch a new connection: %s", st.error().message.c_str());
    raw->close();
    return;
  }
  raw->start();
}

void WorkerContext::configure_gzip(const config::Config& config) {
  compress::ResponseCache::global().set_capacity(config.http.gzip_cache_size);
  if (gzip_offload_) {
    if (Status st = gzip_offload_->reconfigure(config.offload); !st) {
      AG_LOG_ERROR("gzip offload keeps its old settings: %s", st.error().message.c_str());
    }
    return;
  }
  auto offload = compress::GzipOffload::create(loop_, config.offload);
  if (!offload) {
    AG_LOG_WARN("gzip offload is not available, bodies are compressed on the event loop: %s",
                offload.error().message.c_str());
    return;
  }
  gzip_offload_ = std::move(*offload);
}

void WorkerContext::hold_paused(HttpConnection* connection) { paused_.insert(connection); }

void WorkerContext::release(HttpConnection* connection) {
  paused_.erase(connection);
  stats().active.add(-1);
  // Deferred: the connection may be in the middle of its own call stack, and other events for it
  // may still be queued in this epoll batch (it ignores them once closed).
  auto it = connection->self;
  loop_->defer([this, it] {
    connections_.erase(it);
    if (on_connection_closed_) on_connection_closed_();
  });
}

void WorkerContext::drain() {
  draining_ = true;
  std::vector<HttpConnection*> idle;
  for (auto& c : connections_) {
    if (c->idle()) idle.push_back(c.get());
  }
  for (HttpConnection* c : idle) c->close();
}

void WorkerContext::close_all() {
  std::vector<HttpConnection*> all;
  for (auto& c : connections_) all.push_back(c.get());
  for (HttpConnection* c : all) c->close();
}

const std::string& WorkerContext::date_header() {
  time_t now = loop_->wall_time();
  if (now != date_second_) {
    date_second_ = now;
    std::string date;
    format_http_date(now, &date);
    date_header_ = "Date: " + date + "\r\n";
  }
  return date_header_;
}

void WorkerContext::schedule_access_log_flush(std::chrono::milliseconds flush) {
  if (access_log_->empty() || access_log_flush_.armed()) return;
  access_log_flush_.arm(flush.count() > 0 ? flush : std::chrono::milliseconds(1000));
}

}  // namespace accelgate::http
