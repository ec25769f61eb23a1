#pragma once

// HttpConnection: see include/accelgate/http/connection.h for the state machine. Private to the
// http layer; the worker only sees WorkerContext.

#include <list>
#include <memory>
#include <string>

#include "accelgate/config/config.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/event/transport.h"
#include "accelgate/http/connection.h"
#include "accelgate/http/parser.h"
#include "accelgate/http/virtual_hosts.h"
#include "gzip_body.h"
#include "gzip_filter.h"
#include "static_file.h"

namespace accelgate::http {

class HttpConnection final : public event::IoHandler {
 public:
  HttpConnection(WorkerContext* ctx, std::unique_ptr<event::Transport> transport, std::string peer,
                 std::shared_ptr<const VirtualHosts> hosts, bool tls);
  ~HttpConnection() override;

  void start();
  void on_io(uint32_t events) override;

  // idle says whether no request is in progress (waiting for the first byte of one).
  bool idle() const;
  // close releases the socket and hands this object back to the worker for deletion.
  void close();

  std::list<std::unique_ptr<HttpConnection>>::iterator self;

 private:
  enum class State { kReadingHead, kReadingBody, kWriting, kLingering, kClosed };
  // Phase is what stub_status reports: Reading, Writing or Waiting (idle keep-alive).
  enum class Phase { kNone, kReading, kWriting, kWaiting };

  void drive();
  bool read_head();
  bool read_body();
  bool write_response();
  // read_first_chunk appends the start of the static file to the response head (plain reads,
  // not sendfile), so both leave in one write.
  void read_first_chunk();
  bool linger();
  // fill_input reads what the socket has into the input buffer; false when the caller must wait
  // (or the connection was closed).
  enum class Fill { kData, kWait, kClosed };
  Fill fill_input();

  void handle_request();
  // respond answers the current request (its body, if any, already read) by its location:
  // return, metrics/stub_status, or a static file.
  void respond();
  void respond_return(const config::Location& location, const config::ReturnAction& action);
  void respond_static(const config::Location& location);
  // serve_file answers with |f| as open_static_file made it; |encoding| names the file's own
  // Content-Encoding (gzip_static's .gz files), or is null.
  void serve_file(StaticFile& f, const config::Location& location, const char* encoding);
  void respond_text(int status, const std::string& content_type, const std::string& body);
  // The gzip filter's part of the responses (http_connection_gzip.cc).
  // respond_gzip_static serves the .gz file beside the requested one (gzip_static on|always);
  // false when it does not apply or there is none (then |vary_| may be set for the original).
  bool respond_gzip_static(const config::Location& location);
  // plan_file_gzip decides for the file |f| (its 200 response) and sets |vary_|.
  GzipPlan plan_file_gzip(const config::Location& location, const StaticFile& f);
  // respond_gzip_file compresses |f| (status 200) and answers once the body is made (an op may
  // be in flight meanwhile); false when it could not start, |f| then served as it is.
  bool respond_gzip_file(const config::Location& location, StaticFile& f);
  void send_gzip_file_head();
  // respond_text_gzip answers a text response compressed; false when it is not to be.
  bool respond_text_gzip(int status, const std::string& content_type, const std::string& body);
  // client_gone_while_compressing checks, while a compression op is in flight, whether the
  // client has closed or reset the connection (a peek at the socket).
  bool client_gone_while_compressing();
  void append_vary();
  void respond_error(int status);
  void begin_response(int status, bool has_body_length, uint64_t length);
  void finish_head();
  void hold_last_segment();
  void finish_request();
  void close_after_error(int status, const char* reason);
  std::string expand_variables(const std::string& text) const;
  void log_access();
  void set_phase(Phase phase);
  void arm_timer(config::Millis timeout);
  // on_transport_wakeup resumes after a paused TLS async job; after close() it lets the job
  // finish and then releases the connection.
  void on_transport_wakeup();
  void release();

  WorkerContext* ctx_;
  std::unique_ptr<event::Transport> transport_;
  std::string peer_;
  std::shared_ptr<const VirtualHosts> hosts_;
  event::Timer timer_;
  State state_ = State::kReadingHead;
  Phase phase_ = Phase::kNone;
  bool tls_;                        // the transport is a TlsTransport
  bool handshake_counted_ = false;  // TLS: the handshake finished (timeouts are then normal)
  // read_ready_: the socket may have bytes. A new connection waits for epoll to say so (its
  // first event comes right after it is added: writable, and readable when the client has
  // sent), so no read is made that would only return EAGAIN.
  bool read_ready_ = false;
  bool peer_closed_ = false;

  // Input: bytes [in_pos_, in_len_) of in_ are unparsed.
  std::string in_;
  size_t in_pos_ = 0;
  size_t in_len_ = 0;
  size_t max_head_ = 0;
  ParseLimits limits_;

  // The current request.
  RequestHead head_;
  std::string request_line_;
  std::string path_;
  const config::Server* server_ = nullptr;
  const config::Location* location_ = nullptr;
  uint64_t body_remaining_ = 0;
  uint64_t body_received_ = 0;
  bool body_chunked_ = false;
  bool body_done_ = false;
  ChunkedDecoder chunked_;
  uint32_t requests_ = 0;
  int status_ = 0;
  bool keep_alive_ = false;
  bool lingering_after_ = false;
  bool corked_ = false;  // TCP_CORK is set: the response in progress is the connection's last
  bool send_body_ = true;
  bool head_sent_continue_ = false;

  // Output: out_[out_pos_..] first, then the file range.
  std::string out_;
  size_t out_pos_ = 0;
  size_t head_size_ = 0;  // bytes of out_ that are the response head
  int file_fd_ = -1;
  off_t file_offset_ = 0;
  uint64_t file_remaining_ = 0;
  bool use_sendfile_ = false;
  uint64_t body_bytes_sent_ = 0;
  uint64_t body_length_ = 0;
  // A body in memory that is not in out_ (a gzip stream, a cache entry): written after out_.
  const uint8_t* body_mem_ = nullptr;
  size_t body_mem_left_ = 0;

  // gzip: the current response's compressed body, and what its head needs once it is made.
  GzipBody gzip_;
  bool vary_ = false;  // the response carries "Vary: Accept-Encoding"
  std::string gzip_content_type_;
  std::string gzip_etag_;
  time_t gzip_mtime_ = 0;
  event::Clock::time_point linger_deadline_;
};

}  // namespace accelgate::http
