"""Timeouts cut off slow or idle clients: client_header_timeout, keepalive_timeout,
client_body_timeout and send_timeout, each set to 1s. Bounds are loose (a loaded 2-core
machine, ASan): a 1s timeout must fire after at least ~0.5s and within 4s."""

import os
import socket
import time
import unittest

from harness import Client, ServerTestCase, get

TIMEOUTS_HTTP = """
    client_header_timeout 1s;
    keepalive_timeout 1s;
    client_body_timeout 1s;
    send_timeout 1s;
    sendfile %s;
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /echo { return 200 "got"; }
    }
"""

H = b"Host: localhost\r\n"
LOW, HIGH = 0.5, 4.0


class TimeoutsTest(ServerTestCase):
    def start(self, sendfile="on"):
        return self.server(TIMEOUTS_HTTP % sendfile, files={"html/a.txt": "AAAA"}).start()

    def assert_cut_off(self, c, started):
        closed = c.closed_within(HIGH + 2)
        elapsed = time.monotonic() - started
        self.assertTrue(closed, "still open after %.1fs" % elapsed)
        self.assertGreaterEqual(elapsed, LOW, "closed too early (%.2fs)" % elapsed)
        self.assertLessEqual(elapsed, HIGH, "closed too late (%.2fs)" % elapsed)

    def assert_serving(self, s):
        self.assertTrue(s.alive())
        self.assertEqual(get(s.port, "/a.txt").body, b"AAAA")

    def test_connection_that_sends_nothing(self):
        s = self.start()
        with Client(s.port) as c:
            self.assert_cut_off(c, time.monotonic())
            self.assertFalse(c.buf.startswith(b"HTTP/1.1 200"))
        self.assert_serving(s)

    def test_half_a_head_is_cut_off(self):
        s = self.start()
        with Client(s.port) as c:
            c.send(b"GET /a.txt HTTP/1.1\r\nHo")
            self.assert_cut_off(c, time.monotonic())
        self.assert_serving(s)

    def test_head_dribbled_byte_by_byte_is_cut_off(self):
        # client_header_timeout bounds the whole head, as in nginx: a trickle does not reset it.
        s = self.start()
        data = b"GET /a.txt HTTP/1.1\r\n" + b"X-Slow: " + b"s" * 200 + b"\r\n\r\n"
        with Client(s.port) as c:
            started = time.monotonic()
            closed_at = None
            for byte in data:
                try:
                    c.send(bytes([byte]))
                except (BrokenPipeError, ConnectionResetError):
                    closed_at = time.monotonic()
                    break
                if c.closed_within(0.1):
                    closed_at = time.monotonic()
                    break
                if time.monotonic() - started > HIGH + 2:
                    break
            self.assertIsNotNone(closed_at, "a byte-by-byte head was never cut off")
            self.assertLessEqual(closed_at - started, HIGH)
            self.assertFalse(c.buf.startswith(b"HTTP/1.1 200"))
        self.assert_serving(s)

    def test_idle_keepalive_is_closed(self):
        s = self.start()
        with Client(s.port) as c:
            self.assertEqual(c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n").body, b"AAAA")
            self.assert_cut_off(c, time.monotonic())
            self.assertEqual(c.buf, b"", "bytes sent on an idle keep-alive connection")
        # A connection that keeps talking within the timeout is not closed.
        with Client(s.port) as c:
            for _ in range(4):
                self.assertEqual(c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n").body, b"AAAA")
                time.sleep(0.4)
        self.assert_serving(s)

    def test_stalled_body_is_cut_off(self):
        # Whether the body is read or discarded, a body that stops arriving ends the connection.
        s = self.start()
        for framing in (b"Content-Length: 100\r\n\r\n" + b"x" * 10,
                        b"Transfer-Encoding: chunked\r\n\r\n64\r\nxxxxxxxxxx"):
            with self.subTest(framing=framing[:20]):
                with Client(s.port) as c:
                    c.send(b"POST /echo HTTP/1.1\r\n" + H + framing)
                    self.assert_cut_off(c, time.monotonic())
        self.assert_serving(s)

    def check_send_timeout(self, sendfile):
        s = self.start(sendfile)
        size = 20 << 20
        s.write_file("html/big.bin", os.urandom(1 << 20) * 20)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", s.port))
            sock.sendall(b"GET /big.bin HTTP/1.1\r\n" + H + b"\r\n")
            time.sleep(HIGH)  # never read while send_timeout runs out
            received, closed = 0, False
            deadline = time.monotonic() + 10
            sock.settimeout(2)
            while time.monotonic() < deadline:
                try:
                    b = sock.recv(1 << 20)
                except socket.timeout:
                    break
                except ConnectionResetError:
                    closed = True
                    break
                if not b:
                    closed = True
                    break
                received += len(b)
            self.assertTrue(closed, "connection not closed (got %d bytes)" % received)
            self.assertLess(received, size, "the whole file arrived: send_timeout did not fire")
        finally:
            sock.close()
        self.assert_serving(s)

    def test_send_timeout_with_sendfile(self):
        self.check_send_timeout("on")

    def test_send_timeout_without_sendfile(self):
        self.check_send_timeout("off")


if __name__ == "__main__":
    unittest.main()
