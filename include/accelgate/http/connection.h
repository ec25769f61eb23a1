#pragma once

// HttpConnection: the HTTP/1.x state machine of one client connection, on one worker's loop.
//
//   reading head -> (reading body) -> writing response -> reading head (keep-alive, pipelining)
//                                                      \-> lingering close -> closed
//
// One request is handled at a time and its response is written completely before the next
// pipelined request is parsed, so responses always leave in request order. The connection owns
// its Transport; it is destroyed on its loop after close (deferred, so events already queued in
// the same epoll batch never reach freed memory).

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "accelgate/common/buffer_pool.h"
#include "accelgate/config/config.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/event/transport.h"
#include "accelgate/http/parser.h"
#include "accelgate/http/virtual_hosts.h"

namespace accelgate::compress {
class GzipOffload;
}

namespace accelgate::http {

class AccessLogBuffer;
class HttpConnection;

// WorkerContext is what all connections of one worker share. Owned by the worker; lives as long
// as its loop.
class WorkerContext {
 public:
  WorkerContext(event::EventLoop* loop, int index);
  ~WorkerContext();

  event::EventLoop* loop() const { return loop_; }
  int index() const { return index_; }

  // accept_connection takes ownership of a connected, non-blocking |fd|.
  void accept_connection(int fd, const sockaddr_storage& peer,
                         std::shared_ptr<const VirtualHosts> hosts);
  size_t connection_count() const { return connections_.size(); }
  // paused_count is the number of closed connections still waiting for a paused TLS job.
  size_t paused_count() const { return paused_.size(); }

  // drain stops keep-alive: idle connections close now, busy ones after their current response.
  void drain();
  bool draining() const { return draining_; }
  // close_all closes every connection at once (fast stop).
  void close_all();
  // on_connection_closed is called after a connection is gone (the worker resumes accepting,
  // or finishes a graceful stop).
  void set_on_connection_closed(std::function<void()> callback) {
    on_connection_closed_ = std::move(callback);
  }

  AccessLogBuffer& access_log() { return *access_log_; }
  // date_header returns "Date: ...\r\n" for the current second (cached per second).
  const std::string& date_header();
  // schedule_access_log_flush makes sure buffered access log lines are written within |flush|
  // (1s when the log has no flush= parameter).
  void schedule_access_log_flush(std::chrono::milliseconds flush);
  // file_buffer is reused for bodies that cannot go out with sendfile.
  std::vector<char>& file_buffer() { return file_buffer_; }
  // buffer_pool holds the worker's large buffers (bodies to compress and their gzip streams).
  BufferPool& buffer_pool() { return buffer_pool_; }
  // gzip_offload compresses large bodies on the pool's threads; null until configure_gzip (or
  // when its dispatcher could not be made: then every body is compressed inline).
  compress::GzipOffload* gzip_offload() { return gzip_offload_.get(); }
  // configure_gzip follows |config| (at start and at each reload): the gzip offload's engines
  // (pool_threads) and the size of the gzip cache all workers share.
  void configure_gzip(const config::Config& config);

 private:
  friend class HttpConnection;
  void release(HttpConnection* connection);
  // hold_paused keeps a closed connection whose TLS job is paused until the job finishes.
  void hold_paused(HttpConnection* connection);

  event::EventLoop* loop_;
  int index_;
  bool draining_ = false;
  // Declared before the connections, so they outlive them: a connection gives its buffers back
  // when it is destroyed.
  BufferPool buffer_pool_;
  std::unique_ptr<compress::GzipOffload> gzip_offload_;
  std::list<std::unique_ptr<HttpConnection>> connections_;
  std::set<HttpConnection*> paused_;
  std::function<void()> on_connection_closed_;
  std::unique_ptr<AccessLogBuffer> access_log_;
  event::Timer access_log_flush_;
  time_t date_second_ = 0;
  std::string date_header_;
  std::vector<char> file_buffer_;
};

// reopen_access_logs reopens every access log file in place (SIGUSR1, after logrotate).
void reopen_access_logs();

}  // namespace accelgate::http
