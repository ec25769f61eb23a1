"""gzip (issue 7): every engine's responses inflate to the exact file for web text and binary
files from 0 B to 8 MB, inline and off the loop; the HTTP rules (Accept-Encoding q-values, Vary,
Content-Length, weak ETag, no compression of HEAD, Range or 304, gzip_http_version, gzip_types,
gzip_min_length, gzip_proxied, gzip_disable); gzip_static; error pages; keep-alive and
pipelining; the gzip cache and its invalidation."""

import gzip
import os
import time

from gzip_support import gunzip_exact, gzip_t, make_content, metrics
from harness import Client, ServerTestCase, curl, get

AE = "Accept-Encoding: gzip\r\n"

GZIP_HTTP = """
    gzip on;
    gzip_vary on;
    gzip_types text/css application/javascript application/json application/octet-stream;
    default_type application/octet-stream;
    %s
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /metrics { metrics; }
        location /isal/ { gzip_engine isal; }
        location /libdeflate/ { gzip_engine libdeflate; }
        location /zlib/ { gzip_engine zlib; gzip_comp_level 6; }
        location /l9/ { gzip_comp_level 9; }
        %s
    }
"""

SIZES = [0, 1, 19, 20, 100, 4096, 65535, 65536, 100000, 1 << 20, 8 << 20]
KINDS = {"html": "html", "css": "css", "js": "js", "json": "json", "binary": "bin"}


class GzipTest(ServerTestCase):
    def start_gzip(self, extra_http="", extra_server="", files=None, env=None):
        s = self.server(GZIP_HTTP % (extra_http, extra_server), files=files or {})
        return s.start(env=env)

    def check_gzipped(self, r, original):
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("content-encoding"), "gzip", r)
        self.assertEqual(int(r.header("content-length")), len(r.body))
        self.assertEqual(gunzip_exact(r.body), original)
        self.assertTrue(r.header("etag", "").startswith('W/"'), r.header("etag"))
        self.assertIsNone(r.header("accept-ranges"))
        self.assertEqual(r.header("vary"), "Accept-Encoding")

    def test_every_engine_every_kind_and_size_inflates_to_the_file(self):
        files = {}
        for kind, ext in KINDS.items():
            for size in SIZES:
                # 8 MB: HTML through every engine, JSON through auto (disk and time stay small).
                if size > (1 << 20) and kind not in ("html", "json"):
                    continue
                content = make_content(kind, size)
                for d in ("", "isal/", "libdeflate/", "zlib/", "l9/"):
                    if size > (1 << 20) and (d == "l9/" or (kind == "json" and d != "")):
                        continue
                    files["html/%s%s-%d.%s" % (d, kind, size, ext)] = content
        s = self.start_gzip(files=files)
        checked = 0
        for name, content in files.items():
            path = name[len("html"):]
            with self.subTest(path=path):
                r = get(s.port, path, headers=AE, timeout=60)
                if len(content) < 20:  # gzip_min_length 20
                    self.assertEqual(r.status, 200)
                    self.assertIsNone(r.header("content-encoding"))
                    self.assertEqual(r.body, content)
                    continue
                self.check_gzipped(r, content)
                checked += 1
                if len(content) in (100, 1 << 20):
                    code, err = gzip_t(r.body)
                    self.assertEqual(code, 0, err)
        self.assertGreater(checked, 100)
        m = metrics(s.port)
        for engine in ("isal", "libdeflate", "zlib"):
            self.assertGreater(m['accelgate_gzip_bytes_total{engine="%s",direction="in"}' % engine], 0)
        self.assertGreater(m['accelgate_gzip_responses_total{source="inline"}'], 0)
        self.assertGreater(m['accelgate_gzip_responses_total{source="offload"}'], 0)
        self.assertGreater(m['accelgate_offload_ops_total{engine="pool",op="gzip",result="ok"}'], 0)

    def test_curl_compressed_gets_the_file(self):
        content = make_content("html", 300000)
        s = self.start_gzip(files={"html/page.html": content, "html/s.css": make_content("css", 5000)})
        for path, expected in (("/page.html", content), ("/s.css", None)):
            code, out, err = curl("--compressed", "-D", "-", "http://127.0.0.1:%d%s" % (s.port, path))
            self.assertEqual(code, 0, err)
            head, _, body = out.partition(b"\r\n\r\n")
            self.assertIn(b"Content-Encoding: gzip", head)
            if expected is not None:
                self.assertEqual(body, expected)

    def test_accept_encoding_q_values(self):
        content = make_content("html", 5000)
        s = self.start_gzip(files={"html/a.html": content})
        for ae, gz in (("gzip", True), ("deflate, gzip;q=0.5", True), ("*", True),
                       ("x-gzip", True), ("gzip;q=0", False), ("deflate, br", False),
                       ("gzip;q=0, *", False), ("*;q=0", False), ("identity", False)):
            with self.subTest(ae=ae):
                r = get(s.port, "/a.html", headers="Accept-Encoding: %s\r\n" % ae)
                self.assertEqual(r.header("vary"), "Accept-Encoding")
                if gz:
                    self.check_gzipped(r, content)
                else:
                    self.assertIsNone(r.header("content-encoding"))
                    self.assertEqual(r.body, content)
                    self.assertEqual(r.header("content-length"), str(len(content)))
                    self.assertFalse(r.header("etag").startswith("W/"))
                    self.assertEqual(r.header("accept-ranges"), "bytes")
        r = get(s.port, "/a.html")  # no Accept-Encoding at all
        self.assertIsNone(r.header("content-encoding"))
        self.assertEqual(r.header("vary"), "Accept-Encoding")

    def test_head_range_and_conditional_requests_are_not_compressed(self):
        content = make_content("html", 200000)
        s = self.start_gzip(files={"html/a.html": content})
        h = get(s.port, "/a.html", method="HEAD", headers=AE)
        self.assertEqual(h.status, 200)
        self.assertIsNone(h.header("content-encoding"))
        self.assertEqual(h.header("content-length"), str(len(content)))
        self.assertEqual(h.header("vary"), "Accept-Encoding")
        self.assertEqual(h.body, b"")

        r = get(s.port, "/a.html", headers=AE + "Range: bytes=10-19\r\n")
        self.assertEqual(r.status, 206)
        self.assertIsNone(r.header("content-encoding"))
        self.assertEqual(r.body, content[10:20])
        self.assertEqual(r.header("vary"), "Accept-Encoding")

        full = get(s.port, "/a.html", headers=AE)
        weak = full.header("etag")
        self.assertTrue(weak.startswith('W/"'))
        for tag in (weak, weak[2:]):
            nm = get(s.port, "/a.html", headers=AE + "If-None-Match: %s\r\n" % tag)
            self.assertEqual(nm.status, 304)
            self.assertEqual(nm.header("etag"), weak)  # as the compressed 200 had it
            self.assertEqual(nm.header("vary"), "Accept-Encoding")
            self.assertEqual(nm.body, b"")
        plain = get(s.port, "/a.html", headers="If-None-Match: %s\r\n" % weak)
        self.assertEqual(plain.status, 304)
        self.assertEqual(plain.header("etag"), weak[2:])  # the identity 200's strong tag
        # If-Range with the weak tag is never a match (strong comparison): the full body.
        ir = get(s.port, "/a.html", headers=AE + "Range: bytes=0-9\r\nIf-Range: %s\r\n" % weak)
        self.assertEqual(ir.status, 200)
        self.check_gzipped(ir, content)

    def test_http_version_types_min_length_and_status(self):
        css = make_content("css", 3000)
        txt = make_content("html", 3000)
        s = self.start_gzip(
            extra_server="location /v10/ { gzip_http_version 1.0; }\n"
                         "location /min/ { gzip_min_length 4k; }\n"
                         "location /types/ { gzip_types text/plain; }\n",
            files={"html/a.html": txt, "html/v10/a.html": txt, "html/min/a.html": txt,
                   "html/types/a.css": css, "html/types/a.txt": txt, "html/a.css": css})
        with Client(s.port) as c:
            r = c.request(("GET /a.html HTTP/1.0\r\nHost: localhost\r\n" + AE + "\r\n").encode())
            self.assertIsNone(r.header("content-encoding"))  # gzip_http_version 1.1
            self.assertEqual(r.body, txt)
        with Client(s.port) as c:
            req = "GET /v10/a.html HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\n" + AE
            r = c.request((req + "\r\n").encode())
            self.check_gzipped(r, txt)  # with a Content-Length, so 1.0 keep-alive works
            self.assertEqual(r.header("connection"), "keep-alive")
            self.check_gzipped(c.request((req + "\r\n").encode()), txt)
        self.assertIsNone(get(s.port, "/min/a.html", headers=AE).header("content-encoding"))
        self.check_gzipped(get(s.port, "/a.css", headers=AE), css)
        # A location's gzip_types replaces the list; text/html stays.
        self.assertIsNone(get(s.port, "/types/a.css", headers=AE).header("content-encoding"))
        self.check_gzipped(get(s.port, "/types/a.txt", headers=AE), txt)
        # The 404 page is text/html and compressed too, as nginx does.
        nf = get(s.port, "/missing.html", headers=AE)
        self.assertEqual(nf.status, 404)
        self.assertEqual(nf.header("content-encoding"), "gzip")
        self.assertIn(b"404", gunzip_exact(nf.body))

    def test_proxied_and_disabled_clients(self):
        txt = make_content("html", 3000)
        s = self.start_gzip(
            extra_http='gzip_disable msie6 "ExampleBot/[0-9]";',
            extra_server="location /any/ { gzip_proxied any; }\n"
                         "location /auth/ { gzip_proxied auth; }\n",
            files={"html/a.html": txt, "html/any/a.html": txt, "html/auth/a.html": txt})
        via = AE + "Via: 1.1 proxy\r\n"
        self.assertIsNone(get(s.port, "/a.html", headers=via).header("content-encoding"))
        self.check_gzipped(get(s.port, "/any/a.html", headers=via), txt)
        self.check_gzipped(get(s.port, "/auth/a.html", headers=via + "Authorization: Basic eA==\r\n"), txt)
        for ua, gz in (("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)", False),
                       ("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)", True),
                       ("examplebot/2.1", False), ("curl/7.88", True)):
            r = get(s.port, "/a.html", headers=AE + "User-Agent: %s\r\n" % ua)
            self.assertEqual(r.header("content-encoding") == "gzip", gz, ua)
            self.assertEqual(r.header("vary"), "Accept-Encoding")

    def test_keep_alive_and_pipelining_mix_inline_offloaded_and_cached_bodies(self):
        small = make_content("html", 2000)
        large = make_content("json", 700000)
        s = self.start_gzip(files={"html/s.html": small, "html/l.json": large})
        req = lambda p: ("GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (p, AE)).encode()
        with Client(s.port, timeout=30) as c:
            for _ in range(3):
                self.check_gzipped(c.request(req("/s.html")), small)
                self.check_gzipped(c.request(req("/l.json")), large)
            c.send(req("/l.json") + req("/s.html") + req("/l.json") + req("/missing"))
            self.check_gzipped(c.read_response(), large)
            self.check_gzipped(c.read_response(), small)
            self.check_gzipped(c.read_response(), large)
            self.assertEqual(c.read_response().status, 404)

    def test_gzip_static(self):
        original = make_content("html", 40000)
        pre = gzip.compress(original, 9)
        files = {"html/on/a.html": original, "html/on/a.html.gz": pre,
                 "html/always/a.html": original, "html/always/a.html.gz": pre,
                 "html/off/a.html": original, "html/off/a.html.gz": pre,
                 "html/on/nogz.html": original}
        s = self.start_gzip(extra_server="location /on/ { gzip_static on; }\n"
                                         "location /always/ { gzip_static always; gzip off; }\n"
                                         "location /off/ { gzip_static off; gzip off; }\n",
                            files=files)
        r = get(s.port, "/on/a.html", headers=AE)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("content-encoding"), "gzip")
        self.assertEqual(r.body, pre)  # the .gz as it is: not compressed again
        self.assertEqual(r.header("content-type"), "text/html")
        self.assertEqual(r.header("content-length"), str(len(pre)))
        self.assertEqual(r.header("vary"), "Accept-Encoding")
        gz_stat = os.stat(s.path("html/on/a.html.gz"))
        self.assertEqual(r.header("etag"), '"%x-%x"' % (int(gz_stat.st_mtime), gz_stat.st_size))
        rr = get(s.port, "/on/a.html", headers=AE + "Range: bytes=0-9\r\n")
        self.assertEqual(rr.status, 206)
        self.assertEqual(rr.body, pre[:10])  # ranges of the .gz, as nginx serves them
        plain = get(s.port, "/on/a.html")
        self.assertIsNone(plain.header("content-encoding"))
        self.assertEqual(plain.body, original)
        self.assertEqual(plain.header("vary"), "Accept-Encoding")
        head = get(s.port, "/on/a.html", method="HEAD", headers=AE)
        self.assertEqual(head.header("content-encoding"), "gzip")
        self.assertEqual(head.header("content-length"), str(len(pre)))
        # No .gz beside it: the gzip filter compresses the file itself.
        self.check_gzipped(get(s.port, "/on/nogz.html", headers=AE), original)
        a = get(s.port, "/always/a.html")  # always: even to a client without gzip
        self.assertEqual(a.header("content-encoding"), "gzip")
        self.assertEqual(a.body, pre)
        o = get(s.port, "/off/a.html", headers=AE)
        self.assertIsNone(o.header("content-encoding"))
        self.assertEqual(o.body, original)
        self.assertGreaterEqual(metrics(s.port)['accelgate_gzip_responses_total{source="static"}'], 3)

    def test_cache_hits_and_invalidation_when_the_file_changes(self):
        v1 = make_content("js", 90000, seed=1)
        s = self.start_gzip(extra_http="gzip_cache 8m;", files={"html/app.js": v1})
        path = s.path("html/app.js")
        m0 = metrics(s.port)
        self.check_gzipped(get(s.port, "/app.js", headers=AE), v1)
        self.check_gzipped(get(s.port, "/app.js", headers=AE), v1)
        m1 = metrics(s.port)
        self.assertEqual(m1["accelgate_gzip_cache_hits_total"] - m0["accelgate_gzip_cache_hits_total"], 1)
        self.assertEqual(m1["accelgate_gzip_cache_misses_total"] - m0["accelgate_gzip_cache_misses_total"], 1)
        self.assertGreater(m1["accelgate_gzip_cache_bytes"], 10000)
        self.assertEqual(m1["accelgate_gzip_cache_entries"], 1)
        # Same size, same mtime second, other content: the nanoseconds tell it changed.
        v2 = make_content("js", 90000, seed=2)
        st = os.stat(path)
        with open(path, "wb") as f:
            f.write(v2)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        self.check_gzipped(get(s.port, "/app.js", headers=AE), v2)
        # Replaced by a rename (another inode), also with the same size and mtime.
        v3 = make_content("js", 90000, seed=3)
        st = os.stat(path)
        with open(path + ".new", "wb") as f:
            f.write(v3)
        os.utime(path + ".new", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.rename(path + ".new", path)
        self.check_gzipped(get(s.port, "/app.js", headers=AE), v3)
        self.check_gzipped(get(s.port, "/app.js", headers=AE), v3)
        m2 = metrics(s.port)
        self.assertEqual(m2["accelgate_gzip_cache_misses_total"] - m1["accelgate_gzip_cache_misses_total"], 2)
        self.assertEqual(m2["accelgate_gzip_cache_hits_total"] - m1["accelgate_gzip_cache_hits_total"], 1)
        self.assertEqual(m2["accelgate_gzip_cache_entries"], 1)

    def test_cache_off(self):
        v = make_content("css", 30000)
        s = self.start_gzip(extra_http="gzip_cache off;", files={"html/a.css": v})
        for _ in range(3):
            self.check_gzipped(get(s.port, "/a.css", headers=AE), v)
        m = metrics(s.port)
        self.assertEqual(m["accelgate_gzip_cache_hits_total"], 0)
        self.assertEqual(m["accelgate_gzip_cache_entries"], 0)
