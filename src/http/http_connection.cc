#include "http_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "accelgate/common/log.h"
#include "accelgate/tls/tls_transport.h"
#include "access_log.h"
#include "http_stats.h"
#include "response.h"
#include "static_file.h"

namespace accelgate::http {
namespace {

constexpr size_t kReadChunk = size_t{16} * 1024;
// nginx's lingering_timeout and lingering_time: after an error response, unread input is drained
// for a while so the kernel does not reset the connection before the client reads the response.
constexpr config::Millis kLingeringTimeout{5000};
constexpr config::Millis kLingeringTime{30000};

}  // namespace

HttpConnection::HttpConnection(WorkerContext* ctx, std::unique_ptr<event::Transport> transport,
                               std::string peer, std::shared_ptr<const VirtualHosts> hosts,
                               bool tls)
    : ctx_(ctx),
      transport_(std::move(transport)),
      peer_(std::move(peer)),
      hosts_(std::move(hosts)),
      timer_(ctx->loop(),
             [this] {
               if (state_ == State::kLingering) {
                 close();
                 return;
               }
               if (tls_ && !handshake_counted_) {
                 AG_LOG_INFO("client %s timed out in the TLS handshake", peer_.c_str());
                 tls::record_handshake_error("timeout");
                 handshake_counted_ = true;  // counted once; close() adds nothing
                 stats().timeouts.inc();
                 close();
                 return;
               }
               if (state_ == State::kReadingHead && in_len_ == in_pos_ && requests_ > 0) {
                 AG_LOG_INFO("client %s closed keep-alive connection (timeout)", peer_.c_str());
               } else {
                 AG_LOG_INFO("client %s timed out", peer_.c_str());
               }
               stats().timeouts.inc();
               close();
             }),
      tls_(tls),
      gzip_(ctx) {
  transport_->set_wakeup([this] { on_transport_wakeup(); });
  // Header buffers come from the default server, as in nginx: the Host is not known yet.
  const config::Server& s = *hosts_->default_server;
  limits_.large_buffer_size = s.large_client_header_buffers_size;
  limits_.max_buffers = s.large_client_header_buffers_num;
  max_head_ = limits_.large_buffer_size * limits_.max_buffers;
  in_.resize(std::max<size_t>(s.client_header_buffer_size, 1024));
}

HttpConnection::~HttpConnection() {
  if (file_fd_ >= 0) ::close(file_fd_);
}

void HttpConnection::start() {
  set_phase(Phase::kReading);
  arm_timer(tls_ ? hosts_->default_server->tls.handshake_timeout
                 : hosts_->default_server->client_header_timeout);
  drive();
}

void HttpConnection::on_transport_wakeup() {
  if (state_ != State::kClosed) {
    drive();
    return;
  }
  // Closed while a job was paused: the job must run to its end before the SSL is freed.
  if (static_cast<tls::TlsTransport*>(transport_.get())->finish_paused_job()) release();
}

bool HttpConnection::idle() const {
  // A TLS connection still in its handshake is not idle: a graceful stop lets it finish, serves
  // its request and then closes it, as nginx does.
  return state_ == State::kReadingHead && in_len_ == in_pos_ && (!tls_ || handshake_counted_);
}

void HttpConnection::on_io(uint32_t events) {
  if (state_ == State::kClosed) return;
  if (events & event::kReadable) read_ready_ = true;
  if (events & event::kHangup) peer_closed_ = true;
  if (gzip_.pending() && client_gone_while_compressing()) return;
  drive();
}

void HttpConnection::arm_timer(config::Millis timeout) { timer_.arm(timeout); }

void HttpConnection::set_phase(Phase phase) {
  if (phase == phase_) return;
  auto gauge = [](Phase p) -> metrics::Gauge* {
    switch (p) {
      case Phase::kReading:
        return &stats().reading;
      case Phase::kWriting:
        return &stats().writing;
      case Phase::kWaiting:
        return &stats().waiting;
      case Phase::kNone:
        return nullptr;
    }
    return nullptr;
  };
  if (auto* g = gauge(phase_)) g->add(-1);
  if (auto* g = gauge(phase)) g->add(1);
  phase_ = phase;
}

void HttpConnection::drive() {
  // Each step returns true to continue with the next state at once, false to wait for an event.
  for (;;) {
    bool more = false;
    switch (state_) {
      case State::kReadingHead:
        more = read_head();
        break;
      case State::kReadingBody:
        more = read_body();
        break;
      case State::kWriting:
        more = write_response();
        break;
      case State::kLingering:
        more = linger();
        break;
      case State::kClosed:
        return;
    }
    if (!more) return;
  }
}

HttpConnection::Fill HttpConnection::fill_input() {
  if (!read_ready_ && !peer_closed_ && transport_->socket_readiness_is_exact()) {
    return Fill::kWait;
  }
  if (in_pos_ > 0) {
    // Keep unparsed bytes at the front so a head always starts at in_[0].
    std::memmove(in_.data(), in_.data() + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ == in_.size()) {
    // Grow up to the largest head plus one byte, so the parser can see a head is too long.
    size_t cap = std::max(max_head_ + 1, kReadChunk);
    if (in_.size() >= cap) return Fill::kData;  // full: the parser decides (414/431)
    in_.resize(std::min(cap, in_.size() * 2));
  }
  size_t want = in_.size() - in_len_;
  event::IoResult r = transport_->read(in_.data() + in_len_, want);
  if (tls_ && !handshake_counted_ &&
      static_cast<tls::TlsTransport*>(transport_.get())->handshake_done()) {
    handshake_counted_ = true;
    arm_timer(hosts_->default_server->client_header_timeout);
  }
  switch (r.status) {
    case event::IoResult::kOk:
      in_len_ += r.bytes;
      if (r.bytes < want && !peer_closed_) read_ready_ = false;
      return Fill::kData;
    case event::IoResult::kAgain:
      read_ready_ = false;
      return Fill::kWait;
    case event::IoResult::kEof:
      close();
      return Fill::kClosed;
    case event::IoResult::kError:
      if (r.sys_errno != ECONNRESET && r.sys_errno != EPROTO) {  // EPROTO: logged by TLS
        AG_LOG_INFO("recv() from %s failed: %s", peer_.c_str(), std::strerror(r.sys_errno));
      }
      close();
      return Fill::kClosed;
  }
  return Fill::kClosed;
}

bool HttpConnection::read_head() {
  for (;;) {
    if (in_len_ > in_pos_) {
      if (phase_ == Phase::kWaiting) {
        set_phase(Phase::kReading);
        arm_timer(hosts_->default_server->client_header_timeout);
      }
      ParseResult pr = parse_request_head(in_.data() + in_pos_, in_len_ - in_pos_, limits_, &head_);
      if (pr.status == ParseStatus::kComplete) {
        handle_request();
        return true;
      }
      if (pr.status == ParseStatus::kError) {
        // Log what the client sent as its request line, bounded, as nginx does for bad requests.
        std::string_view raw(in_.data() + in_pos_, std::min<size_t>(in_len_ - in_pos_, 1024));
        request_line_.assign(raw.substr(0, raw.find_first_of("\r\n")));
        head_ = RequestHead();
        stats().requests.inc();
        close_after_error(pr.error_code, pr.reason);
        return true;
      }
      if (in_len_ - in_pos_ > max_head_) {
        close_after_error(431, "request head too large");  // the parser should have said so
        return true;
      }
    }
    size_t before = in_len_ - in_pos_;
    Fill f = fill_input();
    if (f == Fill::kClosed) return false;
    if (f == Fill::kWait) return false;
    if (in_len_ - in_pos_ == before) return false;  // buffer full and undecided: cannot happen
  }
}

void HttpConnection::handle_request() {
  ++requests_;
  stats().requests.inc();
  set_phase(Phase::kWriting);
  timer_.disarm();
  request_line_.assign(head_.method_name);
  request_line_.append(" ")
      .append(head_.target)
      .append(head_.version_minor ? " HTTP/1.1" : " HTTP/1.0");
  in_pos_ += head_.head_length;
  keep_alive_ = head_.keep_alive && !ctx_->draining();
  send_body_ = head_.method != Method::kHead;
  body_remaining_ = head_.has_content_length ? head_.content_length : 0;
  body_received_ = 0;
  body_chunked_ = head_.chunked;
  body_done_ = false;
  chunked_ = ChunkedDecoder();
  head_sent_continue_ = false;

  server_ = hosts_->find_server(head_.host);
  if (!decode_path(head_.path, &path_)) {
    close_after_error(400, "invalid path");
    return;
  }
  // nginx runs a server-level `return` before any location is chosen.
  location_ =
      server_->fallback.return_action ? &server_->fallback : &find_location(*server_, path_);
  const config::LocationSettings& settings = location_->settings;

  uint64_t limit = settings.client_max_body_size;
  if (limit != 0 && head_.has_content_length && head_.content_length > limit) {
    AG_LOG_ERROR("client %s intended to send too large body: %llu bytes", peer_.c_str(),
                 static_cast<unsigned long long>(head_.content_length));
    close_after_error(413, "body too large");
    return;
  }
  if (body_chunked_ || body_remaining_ > 0) {
    set_phase(Phase::kReading);
    if (head_.expect_continue && in_len_ == in_pos_) {
      // RFC 9110 §10.1.1: the client waits for 100 before sending the body.
      out_.assign("HTTP/1.1 100 Continue\r\n\r\n");
      out_pos_ = 0;
      head_sent_continue_ = true;
    }
    state_ = State::kReadingBody;
    arm_timer(settings.client_body_timeout);
    return;
  }
  state_ = State::kWriting;
  respond();
}

void HttpConnection::respond() {
  if (location_->return_action) {
    respond_return(*location_, *location_->return_action);
  } else if (location_->metrics || location_->stub_status) {
    if (head_.method != Method::kGet && head_.method != Method::kHead) {
      respond_error(405);
    } else if (location_->metrics) {
      respond_text(200, "text/plain; version=0.0.4; charset=utf-8",
                   metrics::Registry::global().render());
    } else {
      respond_text(200, "text/plain", stub_status_text());
    }
  } else {
    respond_static(*location_);
  }
}

bool HttpConnection::read_body() {
  // Flush a pending "100 Continue" first; the body is read in the same pass.
  while (out_pos_ < out_.size()) {
    iovec iov{out_.data() + out_pos_, out_.size() - out_pos_};
    event::IoResult r = transport_->writev(&iov, 1);
    if (r.status == event::IoResult::kOk) {
      out_pos_ += r.bytes;
    } else if (r.status == event::IoResult::kAgain) {
      break;
    } else {
      close();
      return false;
    }
  }
  uint64_t limit = location_->settings.client_max_body_size;
  while (!body_done_) {
    size_t avail = in_len_ - in_pos_;
    if (avail > 0) {
      if (body_chunked_) {
        size_t used = 0;
        ChunkedDecoder::Status s =
            chunked_.decode(in_.data() + in_pos_, avail, &used, [](const char*, size_t) {});
        in_pos_ += used;
        if (s == ChunkedDecoder::Status::kError) {
          close_after_error(400, chunked_.error());
          return true;
        }
        if (limit != 0 && chunked_.body_bytes() > limit) {
          close_after_error(413, "chunked body too large");
          return true;
        }
        if (s == ChunkedDecoder::Status::kDone) {
          body_done_ = true;
          break;
        }
      } else {
        auto take = static_cast<size_t>(std::min<uint64_t>(avail, body_remaining_));
        in_pos_ += take;
        body_remaining_ -= take;
        body_received_ += take;
      }
    }
    if (!body_chunked_ && body_remaining_ == 0) {
      body_done_ = true;
      break;
    }
    Fill f = fill_input();
    if (f == Fill::kClosed) return false;
    if (f == Fill::kWait) {
      arm_timer(location_->settings.client_body_timeout);
      return false;
    }
  }
  // Body complete (discarded). A "100 Continue" not yet fully sent must leave first.
  if (out_pos_ < out_.size()) {
    arm_timer(location_->settings.send_timeout);
    return false;
  }
  set_phase(Phase::kWriting);
  timer_.disarm();
  out_.clear();
  out_pos_ = 0;
  state_ = State::kWriting;
  body_chunked_ = false;
  respond();
  return true;
}

void HttpConnection::begin_response(int status, bool has_length, uint64_t length) {
  status_ = status;
  // Counted before a byte leaves, so a client that reads this response and then scrapes
  // /metrics (perhaps on another worker) always sees it counted.
  stats().count_status(status);
  if (status >= 400 && status != 404 && status != 416 && status != 405 && status != 403) {
    keep_alive_ = false;
  }
  if (requests_ >= location_->settings.keepalive_requests ||
      location_->settings.keepalive_timeout.count() == 0) {
    keep_alive_ = false;  // keepalive_timeout 0 disables keep-alive, as in nginx
  }
  out_.clear();
  out_pos_ = 0;
  out_.append(head_.version_minor == 0 && head_.version_major == 1 ? "HTTP/1.0 " : "HTTP/1.1 ");
  out_.append(std::to_string(status));
  out_.push_back(' ');
  out_.append(reason_phrase(status));
  out_.append("\r\nServer: accelgate\r\n");
  out_.append(ctx_->date_header());
  if (has_length) {
    out_.append("Content-Length: ").append(std::to_string(length)).append("\r\n");
  }
  body_length_ = has_length ? length : 0;
  body_bytes_sent_ = 0;
}

void HttpConnection::finish_head() {
  if (keep_alive_) {
    if (head_.version_minor == 0) out_.append("Connection: keep-alive\r\n");
    if (auto h = location_->settings.keepalive_header) {
      out_.append("Keep-Alive: timeout=").append(std::to_string(h->count() / 1000)).append("\r\n");
    }
  } else {
    out_.append("Connection: close\r\n");
    hold_last_segment();
  }
  out_.append("\r\n");
  head_size_ = out_.size();
}

void HttpConnection::hold_last_segment() {
  // This response is the connection's last: close(2), or shutdown(2) when lingering, follows
  // its last byte and sends what the kernel holds with the FIN. Corked until then, the
  // response's tail, TLS's close_notify and the FIN leave in one segment instead of three
  // (docs/architecture.md). Only for a body in hand when its head is made (every body here: a
  // file, memory, a finished gzip body): a body that arrives over time (a proxied stream) must
  // not be corked, or its tail would wait for the cork's 200 ms limit.
  if (corked_) return;
  corked_ = true;
  int one = 1;
  ::setsockopt(transport_->fd(), IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
}

void HttpConnection::respond_text(int status, const std::string& content_type,
                                  const std::string& body) {
  if (respond_text_gzip(status, content_type, body)) return;
  begin_response(status, true, body.size());
  out_.append("Content-Type: ").append(content_type).append("\r\n");
  append_vary();
  finish_head();
  if (send_body_) out_.append(body);
}

void HttpConnection::respond_error(int status) {
  if (status == 405) {
    begin_response(status, true, error_page_body(status).size());
    out_.append("Allow: GET, HEAD\r\n");
    out_.append("Content-Type: text/html\r\n");
    finish_head();
    if (send_body_) out_.append(error_page_body(status));
    return;
  }
  respond_text(status, "text/html", error_page_body(status));
}

void HttpConnection::respond_return(const config::Location& location,
                                    const config::ReturnAction& action) {
  if (action.code == 444) {  // nginx: close without a response
    status_ = 444;
    stats().count_status(444);
    log_access();
    close();
    return;
  }
  if (is_redirect(action.code) && action.has_text) {
    std::string body = error_page_body(action.code);
    begin_response(action.code, true, body.size());
    out_.append("Content-Type: text/html\r\n");
    out_.append("Location: ").append(expand_variables(action.text)).append("\r\n");
    finish_head();
    if (send_body_) out_.append(body);
    return;
  }
  if (action.has_text) {
    respond_text(action.code, location.settings.default_type, expand_variables(action.text));
    return;
  }
  respond_error(action.code);
}

void HttpConnection::respond_static(const config::Location& location) {
  if (head_.method != Method::kGet && head_.method != Method::kHead) {
    respond_error(405);
    return;
  }
  vary_ = false;
  if (location.settings.gzip.static_mode != config::GzipSettings::Static::kOff &&
      respond_gzip_static(location)) {
    return;
  }
  StaticFile f = open_static_file(location.settings, path_, head_);
  if (f.status == 200 || f.status == 206 || f.status == 304) {
    // Range responses, HEAD and 304 are never compressed; they carry the Vary (and a 304 the
    // weak ETag) that the compressed 200 would, so caches keep the two representations apart.
    GzipPlan plan = plan_file_gzip(location, f);
    if (f.status == 200 && plan.compress && respond_gzip_file(location, f)) return;
    if (f.status == 304 && plan.compress) f.etag = weak_etag(f.etag);
  }
  serve_file(f, location, nullptr);
}

void HttpConnection::serve_file(StaticFile& f, const config::Location& location,
                                const char* encoding) {
  switch (f.status) {
    case 200:
    case 206: {
      begin_response(f.status, true, static_cast<uint64_t>(f.length));
      out_.append("Content-Type: ").append(f.content_type).append("\r\n");
      std::string date;
      format_http_date(f.mtime, &date);
      out_.append("Last-Modified: ").append(date).append("\r\n");
      out_.append("ETag: ").append(f.etag).append("\r\n");
      if (f.status == 206) {
        out_.append("Content-Range: bytes ")
            .append(std::to_string(f.offset))
            .append("-")
            .append(std::to_string(f.offset + f.length - 1))
            .append("/")
            .append(std::to_string(f.file_size))
            .append("\r\n");
      } else {
        out_.append("Accept-Ranges: bytes\r\n");
      }
      if (encoding != nullptr) out_.append("Content-Encoding: ").append(encoding).append("\r\n");
      append_vary();
      finish_head();
      if (send_body_ && f.length > 0) {
        file_fd_ = f.fd;
        file_offset_ = f.offset;
        file_remaining_ = static_cast<uint64_t>(f.length);
        use_sendfile_ = location.settings.sendfile && transport_->can_sendfile();
        if (!use_sendfile_) read_first_chunk();
      } else {
        ::close(f.fd);
      }
      f.fd = -1;
      return;
    }
    case 304: {
      if (f.fd >= 0) ::close(f.fd);
      f.fd = -1;
      begin_response(304, false, 0);
      std::string date;
      format_http_date(f.mtime, &date);
      out_.append("Last-Modified: ").append(date).append("\r\n");
      out_.append("ETag: ").append(f.etag).append("\r\n");
      append_vary();
      finish_head();
      return;
    }
    case 416: {
      if (f.fd >= 0) ::close(f.fd);
      f.fd = -1;
      std::string body = error_page_body(416);
      begin_response(416, true, body.size());
      out_.append("Content-Type: text/html\r\n");
      out_.append("Content-Range: bytes */").append(std::to_string(f.file_size)).append("\r\n");
      finish_head();
      if (send_body_) out_.append(body);
      return;
    }
    case 301: {
      std::string body = error_page_body(301);
      begin_response(301, true, body.size());
      out_.append("Content-Type: text/html\r\n");
      std::string location_url = f.redirect;
      if (!head_.query.empty()) location_url.append("?").append(head_.query);
      out_.append("Location: ").append(location_url).append("\r\n");
      finish_head();
      if (send_body_) out_.append(body);
      return;
    }
    default:
      respond_error(f.status);
      return;
  }
}

void HttpConnection::read_first_chunk() {
  // The head and the start of the file go out in one write: one TLS record instead of two (a
  // record costs its encryption and a send), one writev-sized send on plain TCP, as nginx does
  // with sendfile off. Up to one full TLS record (16 KiB, RFC 8446 §5.1).
  constexpr size_t kFirstWrite = 16384;
  if (out_.size() >= kFirstWrite) return;
  size_t n = static_cast<size_t>(std::min<uint64_t>(file_remaining_, kFirstWrite - out_.size()));
  size_t old = out_.size();
  out_.resize(old + n);
  ssize_t got = ::pread(file_fd_, out_.data() + old, n, file_offset_);
  if (got <= 0) {
    out_.resize(old);  // write_response's own pread meets the error again and closes
    return;
  }
  out_.resize(old + static_cast<size_t>(got));
  file_offset_ += got;
  file_remaining_ -= static_cast<uint64_t>(got);
}

bool HttpConnection::write_response() {
  if (gzip_.pending()) return false;  // the head is made when the compressed body is
  for (;;) {
    event::IoResult r;
    if (out_pos_ < out_.size()) {
      // The head (and a text body) from out_, and a body in memory after it, in one call.
      iovec iov[2] = {{out_.data() + out_pos_, out_.size() - out_pos_},
                      {const_cast<uint8_t*>(body_mem_), body_mem_left_}};
      r = transport_->writev(iov, body_mem_left_ > 0 ? 2 : 1);
      if (r.status == event::IoResult::kOk) {
        size_t from_out = std::min(r.bytes, out_.size() - out_pos_);
        size_t head_left = out_pos_ < head_size_ ? head_size_ - out_pos_ : 0;
        body_bytes_sent_ += from_out > head_left ? from_out - head_left : 0;
        out_pos_ += from_out;
        size_t from_mem = r.bytes - from_out;
        body_mem_ += from_mem;
        body_mem_left_ -= from_mem;
        body_bytes_sent_ += from_mem;
      }
    } else if (body_mem_left_ > 0) {
      iovec iov{const_cast<uint8_t*>(body_mem_), body_mem_left_};
      r = transport_->writev(&iov, 1);
      if (r.status == event::IoResult::kOk) {
        body_mem_ += r.bytes;
        body_mem_left_ -= r.bytes;
        body_bytes_sent_ += r.bytes;
      }
    } else if (file_remaining_ > 0 && use_sendfile_) {
      r = transport_->sendfile(file_fd_, &file_offset_, file_remaining_);
      if (r.status == event::IoResult::kOk) {
        file_remaining_ -= r.bytes;
        body_bytes_sent_ += r.bytes;
      }
    } else if (file_remaining_ > 0) {
      std::vector<char>& buf = ctx_->file_buffer();
      size_t n = static_cast<size_t>(std::min<uint64_t>(file_remaining_, buf.size()));
      ssize_t got = ::pread(file_fd_, buf.data(), n, file_offset_);
      if (got <= 0) {
        AG_LOG_ERROR("pread() of a file for %s failed or file shrank", peer_.c_str());
        close();
        return false;
      }
      // Send from the shared buffer through out_ so a partial write keeps its bytes.
      out_.assign(buf.data(), static_cast<size_t>(got));
      out_pos_ = 0;
      head_size_ = 0;
      file_offset_ += got;
      file_remaining_ -= static_cast<uint64_t>(got);
      continue;
    } else {
      finish_request();
      return state_ != State::kClosed;
    }
    if (r.status == event::IoResult::kAgain) {
      arm_timer(location_ ? location_->settings.send_timeout : config::Millis{60000});
      return false;
    }
    if (r.status != event::IoResult::kOk) {
      if (r.sys_errno != EPIPE && r.sys_errno != ECONNRESET) {
        AG_LOG_INFO("send to %s failed: %s", peer_.c_str(), std::strerror(r.sys_errno));
      }
      close();
      return false;
    }
  }
}

void HttpConnection::finish_request() {
  timer_.disarm();
  log_access();
  if (file_fd_ >= 0) {
    ::close(file_fd_);
    file_fd_ = -1;
  }
  gzip_.reset();
  body_mem_ = nullptr;
  body_mem_left_ = 0;
  vary_ = false;
  out_.clear();
  out_pos_ = 0;
  // Closing with unread input makes the kernel send a reset, which can destroy the response
  // before the client reads it: drain first, as nginx's lingering_close does.
  if (!keep_alive_ && (in_len_ > in_pos_ || read_ready_)) lingering_after_ = true;
  if (lingering_after_) {
    transport_->shutdown_write();
    state_ = State::kLingering;
    // Still an active connection, reading (and dropping) what the client sends: stub_status's
    // Reading + Writing + Waiting must add up to Active connections.
    set_phase(Phase::kReading);
    linger_deadline_ = ctx_->loop()->now() + kLingeringTime;
    arm_timer(kLingeringTimeout);
    return;
  }
  if (!keep_alive_ || ctx_->draining()) {
    transport_->end_before_close();  // TLS: close_notify before the FIN (RFC 8446 §6.1)
    close();
    return;
  }
  // keepalive_timeout is a location setting in nginx: the last request's location decides.
  config::Millis keepalive_timeout = location_->settings.keepalive_timeout;
  state_ = State::kReadingHead;
  server_ = nullptr;
  location_ = nullptr;
  status_ = 0;
  if (in_len_ == in_pos_) {
    in_pos_ = in_len_ = 0;
    set_phase(Phase::kWaiting);
    arm_timer(keepalive_timeout);
  } else {
    set_phase(Phase::kReading);
    arm_timer(hosts_->default_server->client_header_timeout);
  }
}

void HttpConnection::close_after_error(int status, const char* reason) {
  AG_LOG_INFO("client %s: %d %s", peer_.c_str(), status, reason);
  if (location_ == nullptr) {
    server_ = hosts_->default_server;
    location_ = &server_->fallback;
  }
  keep_alive_ = false;
  lingering_after_ = true;
  state_ = State::kWriting;
  set_phase(Phase::kWriting);
  timer_.disarm();
  file_remaining_ = 0;
  respond_error(status);
}

bool HttpConnection::linger() {
  char buf[4096];
  for (;;) {
    event::IoResult r = transport_->read(buf, sizeof(buf));
    if (r.status == event::IoResult::kOk) continue;
    if (r.status == event::IoResult::kAgain) {
      auto left = linger_deadline_ - ctx_->loop()->now();
      if (left <= event::Clock::duration::zero()) {
        close();
        return false;
      }
      arm_timer(std::min(kLingeringTimeout, std::chrono::duration_cast<config::Millis>(left)));
      return false;
    }
    close();
    return false;
  }
}

std::string HttpConnection::expand_variables(const std::string& text) const {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out.push_back(text[i++]);
      continue;
    }
    size_t start = i + 1;
    bool braced = text[start] == '{';
    if (braced) ++start;
    size_t end = start;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      ++end;
    }
    std::string_view name(text.data() + start, end - start);
    if (braced && end < text.size() && text[end] == '}') ++end;
    i = end;
    if (name == "scheme") {
      out.append(tls_ ? "https" : "http");
    } else if (name == "host") {
      // nginx's $host: the Host without its port, lower case; else the first server_name.
      std::string_view host = head_.host;
      if (host.empty()) {
        if (server_ && !server_->server_names.empty()) {
          out.append(server_->server_names.front().name);
        }
      } else {
        if (host.front() != '[') host = host.substr(0, host.rfind(':'));
        for (char c : host)
          out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
    } else if (name == "request_uri") {
      out.append(head_.target);
    } else if (name == "uri") {
      out.append(path_);
    } else if (name == "args") {
      out.append(head_.query);
    } else if (name == "server_name") {
      if (server_ && !server_->server_names.empty()) out.append(server_->server_names.front().name);
    } else if (name == "server_port") {
      out.append(std::to_string(hosts_->port));
    } else if (name == "remote_addr") {
      out.append(peer_.substr(0, peer_.rfind(':')));
    } else {
      out.push_back('$');
      out.append(name);
    }
  }
  return out;
}

void HttpConnection::log_access() {
  const config::Location* loc = location_ ? location_ : &hosts_->default_server->fallback;
  const config::AccessLog& log = loc->settings.access_log;
  if (!log.enabled) return;
  std::string line;
  line.reserve(256);
  append_combined_line(&line, peer_, ctx_->loop()->wall_time(), request_line_, status_,
                       body_bytes_sent_, head_);
  ctx_->access_log().append(log, line);
  ctx_->schedule_access_log_flush(log.flush);
}

void HttpConnection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  set_phase(Phase::kNone);
  timer_.disarm();
  // An op in flight keeps its own buffers; what this connection held goes back to the pool.
  gzip_.reset();
  body_mem_ = nullptr;
  body_mem_left_ = 0;
  if (tls_ && !handshake_counted_) {
    auto* t = static_cast<tls::TlsTransport*>(transport_.get());
    // Errors inside the handshake were counted by the transport; a close before it even
    // failed (peer gone while we waited, reload, stop) is the peer's doing.
    if (!t->handshake_done() && *t->handshake_error() == '\0') {
      tls::record_handshake_error("peer_closed");
    }
  }
  // A paused TLS job keeps the connection until the job is done (on_transport_wakeup); its
  // socket leaves epoll now. Otherwise closing the socket (release) removes it from epoll, one
  // system call fewer; events already queued for it find the connection closed.
  if (transport_->busy()) {
    ctx_->loop()->remove(transport_->fd());
    ctx_->hold_paused(this);
    return;
  }
  release();
}

void HttpConnection::release() {
  transport_.reset();
  ctx_->release(this);
}

}  // namespace accelgate::http
