"""Persistent connections: HTTP/1.1 and 1.0 keep-alive, Connection: close, pipelining with
responses in order, keepalive_requests, and many connections over several workers."""

import threading
import unittest

from harness import Client, ServerTestCase, get, raw_request, status_of

KEEPALIVE_HTTP = """
    keepalive_requests %d;
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /hello { return 200 "hello"; }
    }
"""

FILES = {"html/index.html": "index\n", "html/a.txt": "AAAA", "html/b.txt": "BBBBBB",
         "html/c.txt": "C"}


def req(path, version="1.1", extra=b""):
    host = b"Host: localhost\r\n" if version == "1.1" else b""
    return b"GET " + path.encode() + b" HTTP/" + version.encode() + b"\r\n" + host + extra + b"\r\n"


class KeepAliveTest(ServerTestCase):
    def start(self, keepalive_requests=1000, workers=1):
        return self.server(KEEPALIVE_HTTP % keepalive_requests, files=FILES, workers=workers).start()

    def test_http11_keeps_the_connection(self):
        s = self.start()
        with Client(s.port) as c:
            for path, body in (("/a.txt", b"AAAA"), ("/b.txt", b"BBBBBB"), ("/missing", None),
                               ("/hello", b"hello"), ("/c.txt", b"C")):
                r = c.request(req(path))
                self.assertEqual(r.status, 404 if body is None else 200)
                if body is not None:
                    self.assertEqual(r.body, body)
                self.assertNotEqual(r.header("connection", "").lower(), "close")
            self.assertFalse(c.closed_within(0.3), "server closed an idle keep-alive connection")

    def test_http10_keep_alive_on_request(self):
        s = self.start()
        with Client(s.port) as c:
            r = c.request(req("/a.txt", "1.0", b"Connection: keep-alive\r\n"))
            self.assertEqual((r.status, r.body), (200, b"AAAA"))
            self.assertEqual(r.header("connection", "").lower(), "keep-alive")
            r = c.request(req("/b.txt", "1.0", b"Connection: keep-alive\r\n"))
            self.assertEqual(r.body, b"BBBBBB")
            # A plain 1.0 request ends the connection.
            r = c.request(req("/c.txt", "1.0"))
            self.assertEqual(r.body, b"C")
            self.assertTrue(c.closed_within(3))

    def test_http10_closes_by_default(self):
        s = self.start()
        with Client(s.port) as c:
            r = c.request(req("/a.txt", "1.0"))
            self.assertEqual(r.body, b"AAAA")
            self.assertNotEqual(r.header("connection", "").lower(), "keep-alive")
            self.assertTrue(c.closed_within(3))

    def test_connection_close_closes_after_the_response(self):
        s = self.start()
        with Client(s.port) as c:
            self.assertEqual(c.request(req("/a.txt")).body, b"AAAA")
            r = c.request(req("/b.txt", extra=b"Connection: close\r\n"))
            self.assertEqual((r.status, r.body), (200, b"BBBBBB"))
            self.assertEqual(r.header("connection", "").lower(), "close")
            self.assertTrue(c.closed_within(3))
        # Connection header tokens are case-insensitive and may be a list.
        with Client(s.port) as c:
            r = c.request(req("/a.txt", extra=b"Connection: foo, CLOSE\r\n"))
            self.assertEqual(r.body, b"AAAA")
            self.assertTrue(c.closed_within(3))

    def test_pipelining_answers_in_order(self):
        s = self.start()
        with Client(s.port) as c:
            c.send(req("/a.txt") + req("/b.txt") + req("/c.txt"))
            bodies = [c.read_response().body for _ in range(3)]
            self.assertEqual(bodies, [b"AAAA", b"BBBBBB", b"C"])
            # A mixture of files, a 404, a return and a HEAD, the last asking to close.
            c.send(req("/c.txt") + req("/nope") + req("/hello") +
                   b"HEAD /b.txt HTTP/1.1\r\nHost: localhost\r\n\r\n" +
                   req("/a.txt", extra=b"Connection: close\r\n"))
            r = [c.read_response() for _ in range(3)]
            self.assertEqual([x.status for x in r], [200, 404, 200])
            self.assertEqual((r[0].body, r[2].body), (b"C", b"hello"))
            head = c.read_response(head_request=True)
            self.assertEqual((head.status, head.header("content-length")), (200, "6"))
            last = c.read_response()
            self.assertEqual(last.body, b"AAAA")
            self.assertTrue(c.closed_within(3))
            self.assertEqual(c.buf, b"", "bytes after the last response")

    def test_pipelining_many_in_one_send(self):
        s = self.start()
        paths = ["/a.txt", "/b.txt", "/c.txt", "/hello"] * 25
        expected = {"/a.txt": b"AAAA", "/b.txt": b"BBBBBB", "/c.txt": b"C", "/hello": b"hello"}
        with Client(s.port) as c:
            c.send(b"".join(req(p) for p in paths))
            for i, p in enumerate(paths):
                self.assertEqual(c.read_response().body, expected[p], "response %d" % i)

    def test_pipelined_request_split_across_sends(self):
        s = self.start()
        with Client(s.port) as c:
            data = req("/a.txt") + req("/b.txt")
            for i in range(0, len(data), 7):
                c.send(data[i:i + 7])
            self.assertEqual(c.read_response().body, b"AAAA")
            self.assertEqual(c.read_response().body, b"BBBBBB")

    def test_keepalive_requests_limit(self):
        s = self.start(keepalive_requests=3)
        with Client(s.port) as c:
            for i in range(2):
                r = c.request(req("/a.txt"))
                self.assertNotEqual(r.header("connection", "").lower(), "close", "response %d" % i)
            r = c.request(req("/b.txt"))
            self.assertEqual(r.body, b"BBBBBB")
            self.assertEqual(r.header("connection", "").lower(), "close")
            self.assertTrue(c.closed_within(3))
        # Pipelined past the limit: exactly three answers, then the close.
        resp = raw_request(s.port, req("/a.txt") * 5, timeout=3)
        self.assertEqual(resp.count(b"HTTP/1.1 200"), 3, resp)

    def test_many_connections_over_two_workers(self):
        s = self.start(workers=2)
        errors = []

        def client():
            try:
                for _ in range(10):
                    with Client(s.port) as c:
                        for _ in range(3):
                            if c.request(req("/a.txt")).body != b"AAAA":
                                errors.append("bad body")
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertFalse(any(t.is_alive() for t in threads), "clients hung")
        self.assertEqual(errors, [])
        self.assertEqual(get(s.port, "/hello").body, b"hello")
        # Some idle connections held open at once do not starve new ones.
        held = [Client(s.port) for _ in range(20)]
        try:
            self.assertEqual(status_of(raw_request(s.port, req("/c.txt", "1.0"))), 200)
            for c in held:
                self.assertEqual(c.request(req("/c.txt")).body, b"C")
        finally:
            for c in held:
                c.close()


if __name__ == "__main__":
    unittest.main()
