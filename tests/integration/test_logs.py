"""Access log lines in nginx's combined format (status and body bytes right, quotes escaped,
buffered logs flushed) and the error log's format and levels."""

import re
import signal
import unittest

from harness import Client, ServerTestCase, get, raw_request, status_of, wait_until

LOGS_HTTP = """
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        client_max_body_size 10;
        location = /ret { return 200 "fixed"; }
    }
"""

COMBINED = re.compile(r'^(\S+) - (\S+) \[(\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] '
                      r'"((?:[^"\\]|\\.)*)" (\d{3}) (\d+) "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"$')
ERROR_LINE = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[(debug|info|notice|warn|error|crit|alert|emerg)\] ")
H = b"Host: localhost\r\n"


def parsed_lines(text):
    lines = [l for l in text.splitlines() if l]
    out = []
    for line in lines:
        m = COMBINED.match(line)
        assert m, "not a combined log line: %r" % line
        out.append(m.groups())
    return out


class LogsTest(ServerTestCase):
    def start(self, level="info", access="access_log var/access.log;"):
        return self.server(LOGS_HTTP, files={"html/a.txt": "AAAA", "html/f.txt": "0123456789abcdefghij"},
                           access_log=access, error_level=level).start()

    def wait_lines(self, s, n, reader=None):
        reader = reader or s.access_log
        got = wait_until(lambda: len([l for l in reader().splitlines() if l]) >= n, timeout=5)
        self.assertTrue(got, "expected %d access log lines, have:\n%s" % (n, reader()))
        return parsed_lines(reader())

    def test_combined_format_status_and_bytes(self):
        s = self.start()
        get(s.port, "/a.txt", headers="User-Agent: ua-test/1.0\r\nReferer: http://ref.test/page\r\n")
        get(s.port, "/missing")
        get(s.port, "/a.txt", method="HEAD")
        get(s.port, "/f.txt?q=1", headers="Range: bytes=0-9\r\n")
        etag = get(s.port, "/a.txt").header("etag")
        get(s.port, "/a.txt", headers="If-None-Match: %s\r\n" % etag)
        get(s.port, "/ret")
        lines = self.wait_lines(s, 7)
        self.assertEqual(len(lines), 7, lines)
        addr, user, when, request, status, size, referer, agent = lines[0]
        self.assertEqual((addr, user), ("127.0.0.1", "-"))
        self.assertEqual((request, status, size), ("GET /a.txt HTTP/1.1", "200", "4"))
        self.assertEqual((referer, agent), ("http://ref.test/page", "ua-test/1.0"))
        self.assertEqual(lines[1][3:5], ("GET /missing HTTP/1.1", "404"))
        self.assertGreater(int(lines[1][5]), 0)  # the error page's body
        self.assertEqual(lines[1][6:], ("-", "-"))
        self.assertEqual(lines[2][3:6], ("HEAD /a.txt HTTP/1.1", "200", "0"))
        self.assertEqual(lines[3][3:6], ("GET /f.txt?q=1 HTTP/1.1", "206", "10"))
        self.assertEqual(lines[5][3:6], ("GET /a.txt HTTP/1.1", "304", "0"))
        self.assertEqual(lines[6][3:6], ("GET /ret HTTP/1.1", "200", "5"))

    def test_one_line_per_request_on_keepalive_and_pipelined(self):
        s = self.start()
        with Client(s.port) as c:
            c.send(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n" + b"GET /ret HTTP/1.1\r\n" + H + b"\r\n")
            c.read_response()
            c.read_response()
            c.request(b"GET /nope HTTP/1.1\r\n" + H + b"\r\n")
        lines = self.wait_lines(s, 3)
        self.assertEqual([(l[3], l[4]) for l in lines],
                         [("GET /a.txt HTTP/1.1", "200"), ("GET /ret HTTP/1.1", "200"),
                          ("GET /nope HTTP/1.1", "404")])

    def test_quotes_and_control_bytes_are_escaped(self):
        s = self.start()
        # obs-text (0x80-0xFF) is legal in a field value (RFC 9110 5.5); DEL is not, so none here.
        resp = raw_request(s.port, b'GET /a.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: evil"agent'
                                   b'\xff\\" "x\r\nConnection: close\r\n\r\n')
        self.assertEqual(status_of(resp), 200)
        lines = self.wait_lines(s, 1)
        self.assertEqual(len(lines), 1)  # and the line still parses: the quote did not end a field
        # Escaped as nginx does: " \\ and bytes outside printable ASCII become \\xHH.
        self.assertEqual(lines[0][7], "evil\\x22agent\\xFF\\x5C\\x22 \\x22x")

    def test_bad_request_is_logged(self):
        s = self.start()
        resp = raw_request(s.port, b"G@T / HTTP/1.1\r\n" + H + b"\r\n")
        self.assertEqual(status_of(resp), 400)
        lines = self.wait_lines(s, 1)
        self.assertEqual(lines[0][4], "400")
        self.assertEqual(lines[0][0], "127.0.0.1")
        # The error log names the client, at info level as nginx does.
        found = wait_until(lambda: [l for l in s.error_log().splitlines()
                                    if "127.0.0.1" in l and "[info]" in l], timeout=5)
        self.assertTrue(found, "no info line naming the client:\n" + s.error_log())

    def test_buffered_access_log_is_flushed(self):
        s = self.start(access="access_log var/access.log combined buffer=64k flush=1s;")
        get(s.port, "/a.txt")
        # Far from filling 64k, the line must come out by the flush interval.
        self.wait_lines(s, 1)
        for _ in range(5):
            get(s.port, "/ret")
        # And what is still buffered is written when the server stops.
        self.assertEqual(s.stop(signal.SIGQUIT), 0)
        lines = parsed_lines(s.access_log())
        self.assertEqual(len(lines), 6, lines)

    def test_access_log_off(self):
        s = self.start(access="access_log off;")
        self.assertEqual(get(s.port, "/a.txt").status, 200)
        self.assertEqual(s.stop(), 0)
        self.assertEqual(s.access_log(), "")

    def test_error_log_format(self):
        s = self.start()
        raw_request(s.port, b"BAD\r\n\r\n")
        get(s.port, "/missing")
        s.stop()
        text = s.error_log()
        self.assertNotEqual(text.strip(), "")
        for line in text.splitlines():
            if line:
                self.assertRegex(line, ERROR_LINE)

    def test_error_log_level_filters(self):
        s = self.start(level="error")
        raw_request(s.port, b"G@T / HTTP/1.1\r\n" + H + b"\r\n")  # an info-level event
        # nginx logs "client intended to send too large body" at error level.
        resp = raw_request(s.port, b"POST /ret HTTP/1.1\r\n" + H + b"Content-Length: 12345\r\n\r\n")
        self.assertEqual(status_of(resp), 413)
        found = wait_until(lambda: "12345" in s.error_log(), timeout=5)
        self.assertTrue(found, "the 413 is not in the error log:\n" + s.error_log())
        s.stop()
        text = s.error_log()
        levels = set(ERROR_LINE.match(l).group(1) for l in text.splitlines() if l)
        self.assertTrue(levels <= {"error", "crit", "alert", "emerg"}, text)
        line = [l for l in text.splitlines() if "12345" in l][0]
        self.assertIn("[error]", line)
        self.assertIn("127.0.0.1", line)

if __name__ == "__main__":
    unittest.main()
