#pragma once

// Process-wide HTTP statistics: the Prometheus metrics of DESIGN.md ("Metrics") and the numbers
// nginx's stub_status prints. All workers update the same atomics.

#include <string>

#include "accelgate/common/metrics.h"
#include "accelgate/http/parser.h"

namespace accelgate::http {

struct HttpStats {
  metrics::Counter& accepted;  // accelgate_connections_accepted_total
  metrics::Counter& handled;   // stub_status "handled"
  metrics::Counter& requests;  // stub_status "requests"
  metrics::Counter& timeouts;  // accelgate_http_timeouts_total
  metrics::Gauge& active;      // accelgate_connections_active
  metrics::Gauge& reading;
  metrics::Gauge& writing;
  metrics::Gauge& waiting;
  metrics::Family<metrics::Counter>& by_code;

  // count_status adds one to accelgate_http_requests_total{code}; children are cached per thread.
  void count_status(int code);
};

HttpStats& stats();

// stub_status_text renders nginx's stub_status page, byte for byte in its format.
std::string stub_status_text();

// append_combined_line appends one access log line in nginx's "combined" format.
void append_combined_line(std::string* out, const std::string& peer, time_t now,
                          const std::string& request_line, int status, uint64_t body_bytes,
                          const RequestHead& head);

}  // namespace accelgate::http
