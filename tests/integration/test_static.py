"""Static files: GET/HEAD, MIME types, validators and 304, byte ranges, 403/404/405, directory
redirects and index files, no way out of the root, and bodies served intact with and without
sendfile."""

import email.utils
import hashlib
import os
import pwd
import unittest

from harness import Client, ServerTestCase, curl, get, raw_request, status_of

TEXT = b"0123456789abcdefghij"  # 20 bytes, so ranges are easy to check

STATIC_HTTP = """
    default_type application/octet-stream;
    sendfile %s;
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        index index.html;
    }
"""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class StaticTest(ServerTestCase):
    def start_static(self, sendfile="on", user=None):
        files = {
            "html/index.html": "<p>index</p>\n",
            "html/f.txt": TEXT,
            "html/page.html": "<html>page</html>\n",
            "html/style.css": "p { color: red }\n",
            "html/data.json": "{}\n",
            "html/blob.unknownext": "xx",
            "html/hello world.txt": "spaced\n",
            "html/dir/index.html": "dir index\n",
            "html/noindex/a.txt": "listed-file-name\n",
            "html/empty.txt": b"",
            "html/big.bin": os.urandom(1 << 20),
        }
        s = self.server(STATIC_HTTP % sendfile, files=files)
        self.files = files
        return s.start(user=user)

    def test_get_has_type_length_last_modified_etag(self):
        s = self.start_static()
        r = get(s.port, "/f.txt")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, TEXT)
        self.assertEqual(r.header("content-type"), "text/plain")
        self.assertEqual(r.header("content-length"), "20")
        mtime = int(os.stat(s.path("html/f.txt")).st_mtime)
        last_modified = email.utils.parsedate_to_datetime(r.header("last-modified"))
        self.assertEqual(int(last_modified.timestamp()), mtime)
        self.assertRegex(r.header("last-modified"), r"^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$")
        self.assertRegex(r.header("etag", ""), r'^(W/)?"[^"]+"$')

    def test_content_type_from_mime_types(self):
        s = self.start_static()
        for path, ctype in (("/page.html", "text/html"), ("/style.css", "text/css"),
                            ("/data.json", "application/json"),
                            ("/blob.unknownext", "application/octet-stream"),
                            ("/", "text/html")):
            with self.subTest(path=path):
                r = get(s.port, path)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.header("content-type", "").split(";")[0], ctype)

    def test_head_has_headers_and_no_body(self):
        s = self.start_static()
        resp = raw_request(s.port, b"HEAD /f.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        self.assertEqual(status_of(resp), 200)
        head, sep, rest = resp.partition(b"\r\n\r\n")
        self.assertEqual(sep, b"\r\n\r\n")
        self.assertIn(b"\r\nContent-Length: 20", head)
        self.assertIn(b"\r\nContent-Type: text/plain", head)
        self.assertIn(b"\r\nETag: ", head)
        self.assertEqual(rest, b"", "HEAD response carried a body")
        # And on a keep-alive connection, the next response follows the head directly.
        with Client(s.port) as c:
            r1 = c.request(b"HEAD /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n", head_request=True)
            self.assertEqual(r1.header("content-length"), str(1 << 20))
            r2 = c.request(b"GET /f.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
            self.assertEqual((r2.status, r2.body), (200, TEXT))

    def test_etag_and_last_modified_are_nginx_format(self):
        s = self.start_static()
        r = get(s.port, "/f.txt")
        st = os.stat(s.path("html/f.txt"))
        self.assertEqual(r.header("etag"), '"%x-%x"' % (int(st.st_mtime), st.st_size))
        self.assertEqual(r.header("last-modified"),
                         email.utils.formatdate(int(st.st_mtime), usegmt=True))
        # Dates formatted by hand: check one with one-digit fields and one past 2038.
        for t in (0, 86400 * 31 + 3661, 4102444800 + 59):
            os.utime(s.path("html/f.txt"), (t, t))
            self.assertEqual(get(s.port, "/f.txt").header("last-modified"),
                             email.utils.formatdate(t, usegmt=True))

    def test_if_none_match_and_if_modified_since_give_304(self):
        s = self.start_static()
        r = get(s.port, "/f.txt")
        etag, last_modified = r.header("etag"), r.header("last-modified")
        r304 = get(s.port, "/f.txt", headers="If-None-Match: %s\r\n" % etag)
        self.assertEqual(r304.status, 304)
        self.assertEqual(r304.body, b"")
        self.assertEqual(r304.header("etag"), etag)
        r304 = get(s.port, "/f.txt", headers='If-None-Match: "nope", %s\r\n' % etag)
        self.assertEqual(r304.status, 304)
        r200 = get(s.port, "/f.txt", headers='If-None-Match: "something-else"\r\n')
        self.assertEqual((r200.status, r200.body), (200, TEXT))
        r304 = get(s.port, "/f.txt", headers="If-Modified-Since: %s\r\n" % last_modified)
        self.assertEqual(r304.status, 304)
        self.assertEqual(r304.body, b"")
        r200 = get(s.port, "/f.txt", headers="If-Modified-Since: Mon, 01 Jan 1990 00:00:00 GMT\r\n")
        self.assertEqual((r200.status, r200.body), (200, TEXT))

    def test_ranges(self):
        s = self.start_static()
        for spec, body, content_range in (("0-9", TEXT[:10], "bytes 0-9/20"),
                                          ("-5", TEXT[-5:], "bytes 15-19/20"),
                                          ("5-", TEXT[5:], "bytes 5-19/20"),
                                          ("10-100", TEXT[10:], "bytes 10-19/20")):
            with self.subTest(range=spec):
                r = get(s.port, "/f.txt", headers="Range: bytes=%s\r\n" % spec)
                self.assertEqual(r.status, 206)
                self.assertEqual(r.body, body)
                self.assertEqual(r.header("content-range"), content_range)
                self.assertEqual(r.header("content-length"), str(len(body)))
        r = get(s.port, "/f.txt", headers="Range: bytes=30-\r\n")
        self.assertEqual(r.status, 416)
        self.assertEqual(r.header("content-range"), "bytes */20")
        self.assertNotIn(TEXT, r.body)
        r = get(s.port, "/big.bin", headers="Range: bytes=1048570-\r\n")
        self.assertEqual(r.status, 206)
        self.assertEqual(r.body, self.files["html/big.bin"][-6:])

    def test_404(self):
        s = self.start_static()
        r = get(s.port, "/no-such-file.txt")
        self.assertEqual(r.status, 404)
        self.assertEqual(get(s.port, "/dir/no-such-file").status, 404)

    def test_directory_without_index_is_403_without_listing(self):
        s = self.start_static()
        r = get(s.port, "/noindex/")
        self.assertEqual(r.status, 403)
        self.assertNotIn(b"a.txt", r.body)
        self.assertEqual(get(s.port, "/noindex/a.txt").body, b"listed-file-name\n")

    def test_directory_redirect_and_index(self):
        s = self.start_static()
        r = get(s.port, "/dir")
        self.assertEqual(r.status, 301)
        self.assertTrue(r.header("location", "").endswith("/dir/"), r.header("location"))
        r = get(s.port, "/dir/")
        self.assertEqual((r.status, r.body), (200, b"dir index\n"))
        self.assertEqual(r.header("content-type"), "text/html")

    def test_unreadable_file_is_403(self):
        # Tests usually run as root, who reads a chmod 000 file anyway; then the server runs as
        # `nobody` (setpriv) so that the permission check is real.
        user = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("nobody")
            except KeyError:
                self.skipTest("running as root and there is no user 'nobody' to drop to")
            user = "nobody"
        s = self.start_static(user=user)
        secret = s.write_file("html/secret.txt", "top secret\n")
        if user is not None:
            os.chown(secret, 0, 0)
        os.chmod(secret, 0)
        r = get(s.port, "/secret.txt")
        self.assertEqual(r.status, 403)
        self.assertNotIn(b"top secret", r.body)
        self.assertEqual(get(s.port, "/f.txt").body, TEXT)

    def test_no_access_outside_root(self):
        s = self.start_static()
        for target in (b"/../etc/passwd", b"/../../../../../../etc/passwd",
                       b"/%2e%2e/%2e%2e/etc/passwd", b"/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
                       b"/a/%2e%2e/%2e%2e/x", b"/dir/..%2f..%2f..%2f..%2fetc/passwd",
                       b"/f.txt%00.html", b"/%00", b"/..", b"/dir/../../etc/passwd",
                       b"/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd"):
            with self.subTest(target=target):
                resp = raw_request(s.port, b"GET " + target +
                                   b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                self.assertIn(status_of(resp), (400, 404), resp[:200])
                self.assertNotIn(b"root:", resp)
        # Dot segments that stay inside the root are resolved as nginx does.
        r = get(s.port, "/dir/../f.txt")
        self.assertEqual((r.status, r.body), (200, TEXT))
        self.assertTrue(s.alive())

    def test_percent_encoded_name_and_query(self):
        s = self.start_static()
        self.assertEqual(get(s.port, "/hello%20world.txt").body, b"spaced\n")
        r = get(s.port, "/f.txt?x=1&y=../../etc/passwd")
        self.assertEqual((r.status, r.body), (200, TEXT))

    def test_post_to_static_file_is_405(self):
        s = self.start_static()
        with Client(s.port) as c:
            r = c.request(b"POST /f.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc")
            self.assertEqual(r.status, 405)
            self.assertNotIn(TEXT, r.body)
        r = get(s.port, "/f.txt", method="DELETE")
        self.assertEqual(r.status, 405)

    def check_bodies_intact(self, sendfile):
        s = self.start_static(sendfile)
        url = "http://127.0.0.1:%d" % s.port
        for name in ("big.bin", "empty.txt"):
            expected = self.files["html/" + name]
            code, body, err = curl(url + "/" + name)
            self.assertEqual(code, 0, err)
            self.assertEqual(len(body), len(expected))
            self.assertEqual(sha256(body), sha256(expected))
        r = get(s.port, "/empty.txt")
        self.assertEqual((r.status, r.header("content-length"), r.body), (200, "0", b""))
        # Several big bodies back to back on one keep-alive connection.
        with Client(s.port, timeout=10) as c:
            for _ in range(3):
                r = c.request(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
                self.assertEqual(sha256(r.body), sha256(self.files["html/big.bin"]))
            r = c.request(b"GET /empty.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
            self.assertEqual(r.body, b"")
            r = c.request(b"GET /f.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
            self.assertEqual(r.body, TEXT)

    def test_bodies_intact_with_sendfile_on(self):
        self.check_bodies_intact("on")

    def test_bodies_intact_with_sendfile_off(self):
        self.check_bodies_intact("off")


if __name__ == "__main__":
    unittest.main()
