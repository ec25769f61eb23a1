#include "http_stats.h"

#include <array>
#include <cstdio>
#include <ctime>

namespace accelgate::http {
namespace {

HttpStats make_stats() {
  auto& r = metrics::Registry::global();
  auto& conns =
      r.gauge("accelgate_connections", "Client connections by state (stub_status).", {"state"});
  return HttpStats{
      r.counter("accelgate_connections_accepted_total", "Client connections accepted.").get(),
      r.counter("accelgate_connections_handled_total", "Client connections handled.").get(),
      r.counter("accelgate_requests_total", "Client requests, all statuses.").get(),
      r.counter("accelgate_http_timeouts_total", "Connections closed by a timeout.").get(),
      r.gauge("accelgate_connections_active", "Open client connections.").get(),
      conns.with({"reading"}),
      conns.with({"writing"}),
      conns.with({"waiting"}),
      r.counter("accelgate_http_requests_total", "HTTP requests by response status.", {"code"}),
  };
}

// append_escaped writes |s| as nginx escapes log fields: '"', '\\' and bytes outside printable
// ASCII become \xHH.
void append_escaped(std::string* out, std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out->append(buf);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
}

}  // namespace

HttpStats& stats() {
  static HttpStats s = make_stats();
  return s;
}

void HttpStats::count_status(int code) {
  thread_local std::array<metrics::Counter*, 1000> cache{};
  if (code < 0 || code >= 1000) code = 0;
  metrics::Counter*& c = cache[code];
  if (!c) c = &by_code.with({std::to_string(code)});
  c->inc();
}

std::string stub_status_text() {
  HttpStats& s = stats();
  // Each state is read once and Active is their sum, so the page adds up even while another
  // worker moves a connection between states (the separate active gauge, read at another
  // instant, can differ by the connections in transit).
  const long long reading = s.reading.value();
  const long long writing = s.writing.value();
  const long long waiting = s.waiting.value();
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "Active connections: %lld \nserver accepts handled requests\n %llu %llu %llu \n"
                "Reading: %lld Writing: %lld Waiting: %lld \n",
                reading + writing + waiting, static_cast<unsigned long long>(s.accepted.value()),
                static_cast<unsigned long long>(s.handled.value()),
                static_cast<unsigned long long>(s.requests.value()), reading, writing, waiting);
  return buf;
}

void append_combined_line(std::string* out, const std::string& peer, time_t now,
                          const std::string& request_line, int status, uint64_t body_bytes,
                          const RequestHead& head) {
  // log_format combined '$remote_addr - $remote_user [$time_local] "$request" $status '
  //                     '$body_bytes_sent "$http_referer" "$http_user_agent"';
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm tm;
  ::localtime_r(&now, &tm);
  long off = tm.tm_gmtoff / 60;
  char time_buf[64];
  std::snprintf(time_buf, sizeof(time_buf), "%02d/%s/%04d:%02d:%02d:%02d %c%02ld%02ld", tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec,
                off < 0 ? '-' : '+', std::labs(off) / 60, std::labs(off) % 60);
  std::string_view addr = peer;
  if (size_t colon = addr.rfind(':'); colon != std::string_view::npos) addr = addr.substr(0, colon);
  if (addr.size() > 2 && addr.front() == '[') addr = addr.substr(1, addr.size() - 2);
  out->append(addr).append(" - - [").append(time_buf).append("] \"");
  append_escaped(out, request_line);
  out->append("\" ").append(std::to_string(status)).append(" ");
  out->append(std::to_string(body_bytes)).append(" \"");
  const HeaderField* referer = find_header(head, "Referer");
  if (referer)
    append_escaped(out, referer->value);
  else
    out->push_back('-');
  out->append("\" \"");
  const HeaderField* agent = find_header(head, "User-Agent");
  if (agent)
    append_escaped(out, agent->value);
  else
    out->push_back('-');
  out->append("\"\n");
}

}  // namespace accelgate::http
