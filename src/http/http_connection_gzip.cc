// The gzip filter's part of HttpConnection: gzip_static, compressed static files (inline, off
// the loop, or from the gzip cache), compressed text responses, and the client that leaves while
// its body is being compressed. The decisions themselves are in gzip_filter.cc.

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "accelgate/common/log.h"
#include "http_connection.h"
#include "http_stats.h"
#include "response.h"

namespace accelgate::http {

void HttpConnection::append_vary() {
  if (vary_) out_.append("Vary: Accept-Encoding\r\n");
}

GzipPlan HttpConnection::plan_file_gzip(const config::Location& location, const StaticFile& f) {
  ResponseFacts facts;
  facts.status = 200;
  facts.content_type = f.content_type;
  facts.length = static_cast<uint64_t>(f.file_size);
  facts.header_only = !send_body_;  // for 206 and 304: what the 200 would be
  facts.last_modified = true;
  facts.etag = true;
  GzipPlan plan = plan_gzip(location.settings.gzip, head_, facts);
  vary_ = vary_ || plan.vary;
  return plan;
}

bool HttpConnection::respond_gzip_static(const config::Location& location) {
  const config::GzipSettings& gz = location.settings.gzip;
  if (path_.back() == '/') return false;
  // nginx's order (ngx_http_gzip_static_module): with `on` the request must allow gzip; without
  // gzip_vary, a request that does not is not even looked at further.
  bool on = gz.static_mode == config::GzipSettings::Static::kOn;
  ResponseFacts facts;
  facts.last_modified = true;
  facts.etag = true;
  bool allowed = !on || request_allows_gzip(gz, head_, facts);
  if (!gz.vary && !allowed) return false;
  StaticFile g = open_static_file(location.settings, path_, head_, ".gz");
  bool usable = g.status == 200 || g.status == 206 || g.status == 304 || g.status == 416;
  if (!usable) {
    if (g.fd >= 0) ::close(g.fd);
    return false;  // no .gz (or a directory of that name): the file itself is served
  }
  if (on) vary_ = gz.vary;  // the .gz exists: the response varies on Accept-Encoding
  if (!allowed) {
    if (g.fd >= 0) ::close(g.fd);
    return false;
  }
  if (g.status == 200 || g.status == 206) count_gzip_response("static");
  serve_file(g, location, "gzip");
  return true;
}

bool HttpConnection::respond_gzip_file(const config::Location& location, StaticFile& f) {
  gzip_content_type_ = f.content_type;
  gzip_etag_ = f.etag;
  gzip_mtime_ = f.mtime;
  bool started = gzip_.start_file(location.settings.gzip, f, [this] {
    send_gzip_file_head();
    drive();
  });
  if (!started) return false;
  if (!gzip_.pending()) send_gzip_file_head();
  return true;
}

void HttpConnection::send_gzip_file_head() {
  GzipBody::Outcome outcome = gzip_.outcome();
  if (outcome == GzipBody::Outcome::kFailed) {
    keep_alive_ = false;
    respond_error(500);
    return;
  }
  bool compressed = outcome == GzipBody::Outcome::kCompressed;
  std::span<const uint8_t> body = gzip_.body();
  begin_response(200, true, body.size());
  out_.append("Content-Type: ").append(gzip_content_type_).append("\r\n");
  std::string date;
  format_http_date(gzip_mtime_, &date);
  out_.append("Last-Modified: ").append(date).append("\r\n");
  if (compressed) {
    out_.append("ETag: ").append(weak_etag(gzip_etag_)).append("\r\n");
    out_.append("Content-Encoding: gzip\r\n");
  } else {
    // Every codec failed: the file as it is, with its strong validator and ranges.
    out_.append("ETag: ").append(gzip_etag_).append("\r\n");
    out_.append("Accept-Ranges: bytes\r\n");
  }
  append_vary();
  finish_head();
  body_mem_ = body.data();
  body_mem_left_ = body.size();
}

bool HttpConnection::respond_text_gzip(int status, const std::string& content_type,
                                       const std::string& body) {
  if (location_ == nullptr) return false;
  const config::GzipSettings& gz = location_->settings.gzip;
  if (!gz.enabled) return false;
  ResponseFacts facts;
  facts.status = status;
  facts.content_type = content_type;
  facts.length = body.size();
  facts.header_only = !send_body_;
  GzipPlan plan = plan_gzip(gz, head_, facts);
  vary_ = vary_ || plan.vary;
  if (!plan.compress) return false;
  gzip_.compress_memory(gz, body);
  if (gzip_.outcome() != GzipBody::Outcome::kCompressed) return false;
  std::span<const uint8_t> compressed = gzip_.body();
  begin_response(status, true, compressed.size());
  out_.append("Content-Type: ").append(content_type).append("\r\n");
  out_.append("Content-Encoding: gzip\r\n");
  append_vary();
  finish_head();
  body_mem_ = compressed.data();
  body_mem_left_ = compressed.size();
  return true;
}

bool HttpConnection::client_gone_while_compressing() {
  // As nginx's ngx_http_test_reading: a peek tells a closed or reset connection from pipelined
  // bytes (which wait for their turn). A client that only half-closed reads as gone too; nginx
  // treats it so while it waits for an upstream.
  char c = 0;
  ssize_t n = ::recv(transport_->fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) {
    return false;
  }
  AG_LOG_INFO("client %s closed the connection while its response was being compressed",
              peer_.c_str());
  status_ = 499;  // nginx's code for a client that went away before the response
  stats().count_status(499);
  log_access();
  close();
  return true;
}

}  // namespace accelgate::http
