"""Request bodies: Content-Length and chunked bodies are consumed so that the next pipelined
request still works, Expect: 100-continue, and client_max_body_size gives 413."""

import unittest

from harness import Client, ServerTestCase, curl, get

BODIES_HTTP = """
    client_max_body_size 10;
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /echo { return 200 "got"; }
    }
"""

H = b"Host: localhost\r\n"
NEXT = b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n"


class BodiesTest(ServerTestCase):
    def start(self):
        return self.server(BODIES_HTTP, files={"html/a.txt": "AAAA"}).start()

    def assert_next_request_works(self, c):
        r = c.request(NEXT)
        self.assertEqual((r.status, r.body), (200, b"AAAA"))

    def test_content_length_body_then_pipelined_request(self):
        s = self.start()
        with Client(s.port) as c:
            # The body looks like a request: it must be consumed as body, never answered.
            body = b"GET /x HTT"
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 10\r\n\r\n" + body + NEXT)
            r = c.read_response()
            self.assertEqual((r.status, r.body), (200, b"got"))
            self.assertEqual(c.read_response().body, b"AAAA")
            # Body sent in a separate, later write.
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\n")
            c.send(b"hello")
            self.assertEqual(c.read_response().body, b"got")
            self.assertEqual(c.request(b"POST /echo HTTP/1.1\r\n" + H +
                                       b"Content-Length: 0\r\n\r\n").status, 200)
            self.assert_next_request_works(c)

    def test_chunked_body_then_pipelined_request(self):
        s = self.start()
        with Client(s.port) as c:
            # A chunk extension and a trailer field; 5 bytes, within the limit.
            chunked = b"3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n" + chunked + NEXT)
            r = c.read_response()
            self.assertEqual((r.status, r.body), (200, b"got"))
            self.assertEqual(c.read_response().body, b"AAAA")
            # Chunked body dribbled a few bytes at a time, upper-case hex size.
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n")
            data = b"A\r\n0123456789\r\n0\r\n\r\n"
            for i in range(0, len(data), 3):
                c.send(data[i:i + 3])
            self.assertEqual(c.read_response().body, b"got")
            self.assert_next_request_works(c)

    def test_expect_100_continue(self):
        s = self.start()
        with Client(s.port) as c:
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            interim = c.read_response()
            self.assertEqual(interim.status, 100)
            self.assertTrue(interim.head.startswith(b"HTTP/1.1 100 Continue"), interim.head)
            c.send(b"hello")
            r = c.read_response()
            self.assertEqual((r.status, r.body), (200, b"got"))
            self.assert_next_request_works(c)
        # Chunked with Expect too.
        with Client(s.port) as c:
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n")
            self.assertEqual(c.read_response().status, 100)
            c.send(b"5\r\nhello\r\n0\r\n\r\n")
            self.assertEqual(c.read_response().status, 200)
            self.assert_next_request_works(c)
        # An HTTP/1.0 request gets no 100 Continue (RFC 9110 10.1.1).
        with Client(s.port) as c:
            c.send(b"POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello")
            self.assertEqual(c.read_response().status, 200)

    def test_expect_100_continue_with_curl(self):
        s = self.start()
        code, out, err = curl("-v", "-H", "Expect: 100-continue", "--data-binary", "12345",
                              "http://127.0.0.1:%d/echo" % s.port)
        self.assertEqual(code, 0, err)
        self.assertEqual(out, b"got")
        self.assertIn("HTTP/1.1 100 Continue", err)

    def test_body_over_limit_is_413(self):
        s = self.start()
        with Client(s.port) as c:
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 11\r\n\r\n" + b"x" * 11)
            r = c.read_response()
            self.assertEqual(r.status, 413)
            self.assertNotEqual(r.body, b"got")
        # With Expect: the 413 comes instead of 100 Continue, before any body byte is sent.
        with Client(s.port) as c:
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 1000000\r\n\r\n")
            self.assertEqual(c.read_response().status, 413)
        # Chunked: the limit applies to the decoded size, 5 + 8 > 10.
        with Client(s.port) as c:
            c.send(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
                   b"5\r\nhello\r\n8\r\n12345678\r\n0\r\n\r\n")
            r = c.read_response()
            self.assertEqual(r.status, 413)
        # Exactly at the limit is fine, in both framings.
        with Client(s.port) as c:
            self.assertEqual(c.request(b"POST /echo HTTP/1.1\r\n" + H + b"Content-Length: 10\r\n\r\n" +
                                       b"y" * 10).status, 200)
            self.assertEqual(c.request(b"POST /echo HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
                                       b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n").status, 200)
            self.assert_next_request_works(c)
        self.assertEqual(get(s.port, "/a.txt").body, b"AAAA")


if __name__ == "__main__":
    unittest.main()
