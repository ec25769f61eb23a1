"""Smoke tests: the server starts, serves a file, answers 404, and stops cleanly."""

import unittest

from harness import ServerTestCase, curl, raw_request, status_of


class BasicTest(ServerTestCase):
    def test_serves_index_and_404(self):
        s = self.server(files={"html/index.html": "hello\n"}).start()
        code, body, err = curl("-i", "http://127.0.0.1:%d/" % s.port)
        self.assertEqual(code, 0, err)
        self.assertIn(b"HTTP/1.1 200 OK", body)
        self.assertTrue(body.endswith(b"\r\n\r\nhello\n"))
        resp = raw_request(s.port, b"GET /missing HTTP/1.0\r\n\r\n")
        self.assertEqual(status_of(resp), 404)

    def test_metrics_counts_requests(self):
        s = self.server().start()
        raw_request(s.port, b"GET /nope HTTP/1.0\r\n\r\n")
        code, body, err = curl("http://127.0.0.1:%d/metrics" % s.port)
        self.assertEqual(code, 0, err)
        self.assertIn(b'accelgate_http_requests_total{code="404"} 1', body)
        self.assertIn(b"accelgate_connections_accepted_total", body)


if __name__ == "__main__":
    unittest.main()
