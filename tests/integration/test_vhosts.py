"""Virtual hosts on one port chosen by Host (exact, *.suffix, .domain), default_server, and
`return` for text, status codes and redirects; location matching (= and longest prefix)."""

import unittest

from harness import Client, ServerTestCase, get, raw_request, status_of

VHOSTS_HTTP = """
    default_type text/plain;
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        location / { return 200 "first"; }
    }
    server {
        listen 127.0.0.1:{port};
        server_name exact.test www.exact.test;
        location / { return 200 "exact"; }
        location /files/ { root html; }
        location = /gone { return 404; }
        location = /moved { return 302 /elsewhere; }
        location /p { return 200 "prefix p"; }
        location /pre { return 200 "prefix pre"; }
        location = /pre { return 200 "exact pre"; }
    }
    server {
        listen 127.0.0.1:{port};
        server_name *.example.com;
        location / { return 200 "wildcard"; }
    }
    server {
        listen 127.0.0.1:{port};
        server_name .example.org;
        location / { return 301 https://$host$request_uri; }
    }
    server {
        listen 127.0.0.1:{port} default_server;
        server_name _;
        location / { return 200 "default"; }
    }
"""


class VhostsTest(ServerTestCase):
    def start(self, http=VHOSTS_HTTP):
        return self.server(http, files={"html/files/f.txt": "file in exact.test\n"}).start()

    def body_for(self, s, host, path="/"):
        r = get(s.port, path, host=host)
        self.assertEqual(r.status, 200, (host, path, r))
        return r.body

    def test_exact_names(self):
        s = self.start()
        for host in ("exact.test", "www.exact.test", "EXACT.Test", "exact.test:%d" % s.port, "exact.test."):
            with self.subTest(host=host):
                self.assertEqual(self.body_for(s, host), b"exact")
        self.assertEqual(self.body_for(s, "localhost"), b"first")
        self.assertEqual(self.body_for(s, "exact.test", "/files/f.txt"), b"file in exact.test\n")

    def test_leading_wildcard(self):
        s = self.start()
        for host in ("a.example.com", "b.c.example.com", "A.EXAMPLE.COM:80"):
            with self.subTest(host=host):
                self.assertEqual(self.body_for(s, host), b"wildcard")
        # "*.example.com" does not match example.com itself, nor a name that merely ends alike.
        self.assertEqual(self.body_for(s, "example.com"), b"default")
        self.assertEqual(self.body_for(s, "badexample.com"), b"default")

    def test_dot_domain_matches_domain_and_subdomains_with_redirect(self):
        s = self.start()
        for host in ("example.org", "www.example.org", "a.b.example.org"):
            with self.subTest(host=host):
                r = get(s.port, "/some/path?q=1&r=2", host=host + ":%d" % s.port)
                self.assertEqual(r.status, 301)
                self.assertEqual(r.header("location"), "https://%s/some/path?q=1&r=2" % host)

    def test_default_server_for_unknown_or_missing_host(self):
        s = self.start()
        for host in ("unknown.test", "127.0.0.1", "exact.test.evil"):
            with self.subTest(host=host):
                self.assertEqual(self.body_for(s, host), b"default")
        resp = raw_request(s.port, b"GET / HTTP/1.0\r\n\r\n")
        self.assertEqual(status_of(resp), 200)
        self.assertTrue(resp.endswith(b"\r\n\r\ndefault"), resp)

    def test_first_server_is_default_without_default_server(self):
        http = """
            server { listen 127.0.0.1:{port}; server_name one.test; location / { return 200 "one"; } }
            server { listen 127.0.0.1:{port}; server_name two.test; location / { return 200 "two"; } }
        """
        s = self.start(http)
        self.assertEqual(self.body_for(s, "nobody.test"), b"one")
        self.assertEqual(self.body_for(s, "two.test"), b"two")

    def test_host_per_request_on_one_connection(self):
        s = self.start()
        with Client(s.port) as c:
            for host, body in (("exact.test", b"exact"), ("x.example.com", b"wildcard"),
                               ("nope", b"default"), ("localhost", b"first")):
                r = c.request(b"GET / HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n")
                self.assertEqual(r.body, body, host)

    def test_absolute_form_target_wins_over_host(self):
        # RFC 9112 3.2.2: a server MUST accept the absolute form; its authority replaces Host.
        s = self.start()
        resp = raw_request(s.port, b"GET http://exact.test/ HTTP/1.1\r\nHost: other.test\r\n"
                                   b"Connection: close\r\n\r\n")
        self.assertEqual(status_of(resp), 200, resp[:200])
        self.assertTrue(resp.endswith(b"\r\n\r\nexact"), resp)

    def test_return_text_and_codes(self):
        s = self.start()
        r = get(s.port, "/", host="exact.test")
        self.assertEqual((r.status, r.body, r.header("content-length")), (200, b"exact", "5"))
        self.assertEqual(r.header("content-type"), "text/plain")
        r = get(s.port, "/gone", host="exact.test")
        self.assertEqual(r.status, 404)
        self.assertNotEqual(r.body, b"exact")
        r = get(s.port, "/moved", host="exact.test")
        self.assertEqual(r.status, 302)
        self.assertTrue(r.header("location", "").endswith("/elsewhere"), r.header("location"))
        r = get(s.port, "/", host="exact.test", method="HEAD")
        self.assertEqual((r.status, r.header("content-length"), r.body), (200, "5", b""))

    def test_location_matching(self):
        s = self.start()
        for path, body in (("/pre", b"exact pre"), ("/prefix", b"prefix pre"), ("/pre/x", b"prefix pre"),
                           ("/px", b"prefix p"), ("/p", b"prefix p"), ("/q", b"exact"),
                           ("/pre?x=1", b"exact pre")):
            with self.subTest(path=path):
                self.assertEqual(self.body_for(s, "exact.test", path), body)


if __name__ == "__main__":
    unittest.main()
