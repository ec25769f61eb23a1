"""/metrics (Prometheus text, summed over workers) and stub_status (nginx's text, unchanged)."""

import re
import unittest

from harness import Client, ServerTestCase, get, wait_until

METRICS_HTTP = """
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /metrics { metrics; }
        location = /stub_status { stub_status; }
    }
"""

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? (-?[0-9.e+]+|NaN|[+-]Inf)$')
STUB = re.compile(r"^Active connections: (\d+) \n"
                  r"server accepts handled requests\n"
                  r" (\d+) (\d+) (\d+) \n"
                  r"Reading: (\d+) Writing: (\d+) Waiting: (\d+) \n$")
H = b"Host: localhost\r\n"


def parse_metrics(text):
    """{(name, labels text): value} from Prometheus text; raises on a malformed line."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            if line.startswith("# TYPE"):
                assert re.match(r"^# TYPE \S+ (counter|gauge|histogram|summary|untyped)$", line), line
            continue
        m = SAMPLE.match(line)
        assert m, "malformed metrics line: %r" % line
        samples[(m.group(1), m.group(2) or "")] = float(m.group(4))
    return samples


class MetricsTest(ServerTestCase):
    def start(self, workers=1):
        return self.server(METRICS_HTTP, files={"html/a.txt": "AAAA"}, workers=workers).start()

    def scrape(self, s):
        r = get(s.port, "/metrics")
        self.assertEqual(r.status, 200)
        return parse_metrics(r.body.decode())

    def requests(self, samples, code):
        return samples.get(("accelgate_http_requests_total", '{code="%s"}' % code), 0)

    def test_format_and_names(self):
        s = self.start()
        get(s.port, "/a.txt")
        r = get(s.port, "/metrics")
        self.assertTrue(r.header("content-type", "").startswith("text/plain"), r.header("content-type"))
        text = r.body.decode()
        self.assertIn("# TYPE accelgate_http_requests_total counter", text)
        self.assertIn("# TYPE accelgate_connections_active gauge", text)
        self.assertIn("# TYPE accelgate_connections_accepted_total counter", text)
        samples = parse_metrics(text)
        self.assertGreaterEqual(self.requests(samples, "200"), 1)
        self.assertGreaterEqual(samples[("accelgate_connections_active", "")], 1)
        self.assertGreaterEqual(samples[("accelgate_connections_accepted_total", "")], 2)

    def check_counts(self, workers):
        s = self.start(workers)
        before = self.scrape(s)
        ok, missing, conns = 0, 0, 0
        # Fresh connections (spread over the workers) and keep-alive ones.
        for _ in range(12):
            self.assertEqual(get(s.port, "/a.txt").status, 200)
            ok += 1
            conns += 1
        for _ in range(4):
            with Client(s.port) as c:
                conns += 1
                for _ in range(3):
                    self.assertEqual(c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n").status, 200)
                    ok += 1
                self.assertEqual(c.request(b"GET /nope HTTP/1.1\r\n" + H + b"\r\n").status, 404)
                missing += 1
        # The scrape that took |before| is a 200 as well, counted by the time of the next one.
        want_200 = self.requests(before, "200") + ok + 1
        after = wait_until(lambda: (lambda m: m if self.requests(m, "200") >= want_200 else None)(
            self.scrape(s)), timeout=5)
        after = after or self.scrape(s)
        # Every scrape in between counted too; there was at least the final one.
        self.assertGreaterEqual(self.requests(after, "200"), want_200)
        self.assertLessEqual(self.requests(after, "200"), want_200 + 60)
        self.assertEqual(self.requests(after, "404") - self.requests(before, "404"), missing)
        accepted = ("accelgate_connections_accepted_total", "")
        self.assertGreaterEqual(after[accepted] - before[accepted], conns + 1)

    def test_requests_counted_exactly(self):
        s = self.start()
        before = self.scrape(s)
        for _ in range(7):
            get(s.port, "/a.txt")
        for _ in range(3):
            get(s.port, "/nope")
        # The earlier scrape is counted by now, this one may or may not count itself: the
        # difference in 200s is 7 + 1 either way.
        after = self.scrape(s)
        self.assertEqual(self.requests(after, "200") - self.requests(before, "200"), 8)
        self.assertEqual(self.requests(after, "404") - self.requests(before, "404"), 3)

    def test_counts_with_one_worker(self):
        self.check_counts(1)

    def test_counts_summed_over_two_workers(self):
        self.check_counts(2)

    def test_active_connections_summed_over_workers(self):
        # Every scrape is a new connection and counts itself. The bounds do not lean on a scrape
        # taken before the clients connect: a connection that the client has closed (the
        # start-up probe's, an earlier scrape's) stays in the gauge until its worker reads the
        # close, so such a base may be one too high.
        s = self.start(workers=2)
        held = []
        try:
            for _ in range(12):
                c = Client(s.port)
                held.append(c)
                self.assertEqual(c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n").status, 200)
            active = self.scrape(s)[("accelgate_connections_active", "")]
            self.assertGreaterEqual(active, 12 + 1)
            self.assertLessEqual(active, 12 + 1 + 2)
        finally:
            for c in held:
                c.close()
        dropped = wait_until(lambda: self.scrape(s)[("accelgate_connections_active", "")] <= 1,
                             timeout=5)
        self.assertTrue(dropped, "connections_active did not drop after the clients closed")

    def test_stub_status_format_and_numbers(self):
        s = self.start(workers=2)
        r = get(s.port, "/stub_status")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("content-type", "").startswith("text/plain"))
        m = STUB.match(r.body.decode())
        self.assertIsNotNone(m, "not nginx's stub_status text: %r" % r.body)
        active, accepts, handled, reqs, reading, writing, waiting = map(int, m.groups())
        self.assertGreaterEqual(active, 1)
        self.assertGreaterEqual(writing, 1)  # this very request
        self.assertEqual(active, reading + writing + waiting)
        self.assertEqual(accepts, handled)
        self.assertGreaterEqual(reqs, 1)
        # Idle keep-alive connections show up as Waiting; new requests and connections count.
        held = []
        try:
            for _ in range(6):
                c = Client(s.port)
                held.append(c)
                self.assertEqual(c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n").status, 200)
            # A connection turns Waiting just after its response leaves, so a scrape right
            # after the last response may come first: wait for the 6 idle connections.
            def scrape_stub():
                m = STUB.match(get(s.port, "/stub_status").body.decode())
                return m if m and int(m.group(7)) >= 6 else None
            m2 = wait_until(scrape_stub, timeout=5)
            self.assertIsNotNone(m2, "6 idle keep-alive connections never showed as Waiting")
            active2, accepts2, handled2, reqs2, reading2, writing2, waiting2 = map(int, m2.groups())
            self.assertGreaterEqual(active2, 7)
            self.assertGreaterEqual(waiting2, 6)
            self.assertEqual(active2, reading2 + writing2 + waiting2)
            self.assertGreaterEqual(accepts2 - accepts, 7)
            self.assertGreaterEqual(reqs2 - reqs, 7)
            self.assertLessEqual(reqs2 - reqs, 7 + 3)
        finally:
            for c in held:
                c.close()


if __name__ == "__main__":
    unittest.main()
