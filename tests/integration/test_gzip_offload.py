"""gzip off the event loop (issue 7): large bodies go to the pool's threads while the loop serves
other connections, whatever the crypto engine; an injected codec failure falls back to zlib and
then to the uncompressed body, counted, and never breaks a response; clients that go away
mid-body or while their body is being compressed, and a fast stop with compression in flight,
leave the server healthy (and, under ASan, clean); gzip over TLS."""

import signal
import socket
import threading
import time

from gzip_support import gunzip_exact, make_content, metrics
from harness import Client, ServerTestCase, get, wait_until
from tls_harness import Certs, TlsClient, tls_server

AE = "Accept-Encoding: gzip\r\n"

HTTP = """
    gzip on;
    gzip_types application/json text/css;
    %s
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /metrics { metrics; }
        location /slow/ { gzip_engine zlib; gzip_comp_level 9; gzip_cache off; }
        location /isal/ { gzip_engine isal; }
        location /bin/ { gzip_types *; gzip_cache off; }
    }
"""


def request(path, extra=""):
    return ("GET %s HTTP/1.1\r\nHost: localhost\r\n%s%s\r\n" % (path, AE, extra)).encode()


class GzipOffloadTest(ServerTestCase):
    def start(self, extra="", main="", files=None, env=None):
        return self.server(HTTP % extra, main=main, files=files or {}).start(env=env)

    def test_large_bodies_go_to_the_pool_whatever_the_crypto_engine(self):
        big = make_content("json", 300000)
        small = make_content("json", 30000)
        for main in ("", "offload { crypto off; }", "offload { crypto emu; pool_threads 1; }"):
            with self.subTest(main=main):
                s = self.start(main=main, files={"html/big.json": big, "html/small.json": small})
                r = get(s.port, "/big.json", headers=AE)
                self.assertEqual(gunzip_exact(r.body), big)
                r = get(s.port, "/small.json", headers=AE)
                self.assertEqual(gunzip_exact(r.body), small)
                m = metrics(s.port)
                self.assertEqual(m['accelgate_offload_ops_total{engine="pool",op="gzip",result="ok"}'], 1)
                self.assertEqual(m['accelgate_gzip_responses_total{source="offload"}'], 1)
                self.assertEqual(m['accelgate_gzip_responses_total{source="inline"}'], 1)
                s.stop()

    def test_gzip_offload_min_length(self):
        body = make_content("css", 20000)
        s = self.start(extra="gzip_offload_min_length 16k;", files={"html/a.css": body})
        self.assertEqual(gunzip_exact(get(s.port, "/a.css", headers=AE).body), body)
        self.assertEqual(metrics(s.port)['accelgate_gzip_responses_total{source="offload"}'], 1)

    def test_the_loop_serves_others_while_a_body_is_compressed(self):
        slow = make_content("json", 8 << 20)  # zlib level 9: hundreds of milliseconds
        s = self.start(files={"html/slow/big.json": slow, "html/small.html": "<p>hello</p>" * 10})
        done = []

        def fetch_slow():
            r = get(s.port, "/slow/big.json", headers=AE, timeout=120)
            done.append(("slow", r))

        t = threading.Thread(target=fetch_slow)
        t.start()
        self.assertTrue(wait_until(
            lambda: metrics(s.port).get('accelgate_offload_inflight{engine="pool"}', 0) >= 1,
            timeout=30), "the slow body never went to the pool")
        small = get(s.port, "/small.html", headers=AE)
        done.append(("small", small))
        t.join(120)
        self.assertEqual([name for name, _ in done], ["small", "slow"])
        self.assertEqual(gunzip_exact(done[1][1].body), slow)

    def test_injected_failure_falls_back_to_zlib(self):
        small = make_content("css", 5000)
        big = make_content("css", 400000)
        s = self.start(files={"html/isal/s.css": small, "html/isal/b.css": big},
                       env={"ACCELGATE_TEST_GZIP_FAIL": "isal"})
        for path, body in (("/isal/s.css", small), ("/isal/b.css", big)):
            r = get(s.port, path, headers=AE)
            self.assertEqual(r.header("content-encoding"), "gzip")
            self.assertEqual(gunzip_exact(r.body), body)
        m = metrics(s.port)
        self.assertEqual(m['accelgate_gzip_fallbacks_total{engine="isal",to="zlib"}'], 2)
        self.assertEqual(m['accelgate_gzip_bytes_total{engine="zlib",direction="in"}'],
                         len(small) + len(big))
        s.stop()
        self.assertIn('gzip engine "isal" could not compress a body; it went to zlib',
                      s.error_log())

    def test_every_codec_failing_sends_the_body_uncompressed(self):
        small = make_content("html", 5000)
        big = make_content("html", 400000)
        s = self.start(files={"html/s.html": small, "html/b.html": big},
                       env={"ACCELGATE_TEST_GZIP_FAIL": "all"})
        with Client(s.port, timeout=30) as c:
            for path, body in (("/s.html", small), ("/b.html", big), ("/s.html", small)):
                r = c.request(request(path))
                self.assertEqual(r.status, 200)
                self.assertIsNone(r.header("content-encoding"))
                self.assertEqual(r.body, body)
                self.assertEqual(r.header("content-length"), str(len(body)))
                self.assertFalse(r.header("etag").startswith("W/"))
        m = metrics(s.port)
        self.assertEqual(m['accelgate_gzip_responses_total{source="identity"}'], 3)
        self.assertEqual(m['accelgate_gzip_fallbacks_total{engine="zlib",to="identity"}'], 3)

    def test_client_that_disconnects_mid_body(self):
        big = make_content("binary", 8 << 20)
        s = self.start(files={"html/bin/b.bin": big, "html/ok.html": "<p>ok</p>" * 10})
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", s.port), timeout=30) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.sendall(request("/bin/b.bin"))
                got = b""
                while len(got) < 100000:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    got += chunk
                self.assertIn(b"Content-Encoding: gzip", got)
        r = get(s.port, "/ok.html", headers=AE)
        self.assertEqual(r.status, 200)
        self.assertTrue(s.alive())

    def test_client_that_leaves_while_its_body_is_compressed(self):
        slow = make_content("json", 8 << 20)
        s = self.start(files={"html/slow/big.json": slow, "html/ok.html": "<p>ok</p>" * 10})
        with socket.create_connection(("127.0.0.1", s.port), timeout=30) as sock:
            sock.sendall(request("/slow/big.json"))
            self.assertTrue(wait_until(
                lambda: metrics(s.port).get('accelgate_offload_inflight{engine="pool"}', 0) >= 1,
                timeout=30))
        # The connection is gone at once, its op still runs on a pool thread: the op owns the
        # buffers and the file, so nothing is freed under it (ASan run).
        self.assertTrue(wait_until(
            lambda: "closed the connection while its response was being compressed"
            in s.error_log(), timeout=30))
        self.assertTrue(wait_until(
            lambda: metrics(s.port).get('accelgate_offload_inflight{engine="pool"}', 1) == 0,
            timeout=60))
        self.assertEqual(get(s.port, "/ok.html", headers=AE).status, 200)
        self.assertTrue(wait_until(lambda: '" 499 ' in s.access_log(), timeout=10))

    def test_fast_stop_with_compression_in_flight(self):
        slow = make_content("json", 8 << 20)
        s = self.start(files={"html/slow/big.json": slow})
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        try:
            sock.sendall(request("/slow/big.json"))
            self.assertTrue(wait_until(
                lambda: metrics(s.port).get('accelgate_offload_inflight{engine="pool"}', 0) >= 1,
                timeout=30))
            self.assertEqual(s.stop(signal.SIGTERM), 0)  # no crash, no sanitizer report
        finally:
            sock.close()

    def test_graceful_stop_finishes_the_compressed_response(self):
        slow = make_content("json", 4 << 20)
        s = self.start(files={"html/slow/big.json": slow})
        with Client(s.port, timeout=60) as c:
            c.send(request("/slow/big.json"))
            self.assertTrue(wait_until(
                lambda: metrics(s.port).get('accelgate_offload_inflight{engine="pool"}', 0) >= 1,
                timeout=30))
            s.signal(signal.SIGQUIT)
            r = c.read_response()
            self.assertEqual(gunzip_exact(r.body), slow)
        self.assertEqual(s.stop(), 0)


class GzipReloadTest(ServerTestCase):
    def test_reload_follows_the_gzip_settings_and_the_cache_size(self):
        body = make_content("html", 200000)
        s = self.server(HTTP % "gzip_cache 8m;", files={"html/a.html": body}).start()
        for _ in range(2):
            self.assertEqual(gunzip_exact(get(s.port, "/a.html", headers=AE).body), body)
        self.assertEqual(metrics(s.port)["accelgate_gzip_cache_entries"], 1)
        s.write_config(HTTP % "gzip_cache off; gzip_comp_level 6; gzip_engine zlib;")
        s.signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: "configuration reloaded" in s.error_log(), timeout=10))
        self.assertEqual(metrics(s.port)["accelgate_gzip_cache_entries"], 0)
        before = metrics(s.port)['accelgate_gzip_bytes_total{engine="zlib",direction="in"}']
        self.assertEqual(gunzip_exact(get(s.port, "/a.html", headers=AE).body), body)
        after = metrics(s.port)
        self.assertEqual(after['accelgate_gzip_bytes_total{engine="zlib",direction="in"}'] - before,
                         len(body))
        self.assertEqual(after['accelgate_offload_ops_total{engine="pool",op="gzip",result="ok"}'], 2)


class GzipCliTest(ServerTestCase):
    def test_engines_lists_the_gzip_codecs_and_auto_choice(self):
        s = self.server(HTTP % "")
        code, out, err = s.cli("--engines")
        self.assertEqual(code, 0, err)
        self.assertIn("gzip engines isal, libdeflate, zlib; gzip_engine auto by level: "
                      "1 isal, 2 isal, 3 isal, 4 isal, 5 libdeflate, 6 libdeflate, 7 libdeflate, "
                      "8 libdeflate, 9 libdeflate", out)
        self.assertIn('gzip ops (bodies of gzip_offload_min_length and more): engine "pool"', out)

    def test_check_names_a_bad_gzip_directive(self):
        s = self.server(HTTP % "gzip_comp_level 11;")
        code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 1)
        self.assertRegex(err, r"accelgate\.conf:\d+: invalid value \"11\" in \"gzip_comp_level\"")


class GzipTlsTest(ServerTestCase):
    def setUp(self):
        super().setUp()
        self.certs = Certs()

    def tearDown(self):
        super().tearDown()
        self.certs.cleanup()

    def test_gzip_over_tls_inline_offloaded_and_cached(self):
        small = make_content("html", 10000)
        big = make_content("html", 2 << 20)
        http = "gzip on; gzip_vary on;\n" + tls_server(self.certs)
        s = self.server(http, files={"html/s.html": small, "html/b.html": big}).start()
        with TlsClient(s.port, timeout=30) as c:
            for path, body in (("/s.html", small), ("/b.html", big), ("/b.html", big)):
                r = c.request(request(path))
                self.assertEqual(r.header("content-encoding"), "gzip")
                self.assertEqual(r.header("vary"), "Accept-Encoding")
                self.assertEqual(gunzip_exact(r.body), body)
