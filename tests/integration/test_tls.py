"""TLS termination with real clients (curl, openssl s_client, wrk, Python's ssl module): protocols,
cipher and certificate selection, ALPN, SNI, session resumption by cache and by ticket, ticket
key sharing and rotation across instances, refused protocols, no shared cipher, abusive clients,
many concurrent handshakes, HTTP->HTTPS redirects, static files over TLS and key file checks.
The certificates are made once per class with `openssl req` (tls_harness.Certs)."""

import hashlib
import os
import shutil
import socket
import ssl
import subprocess
import time
import unittest

from harness import Client, ServerTestCase, curl, free_port, get, wait_for_port, wait_until
from tls_harness import (Certs, TlsClient, client_context, field, handshake_errors, handshakes,
                         hello_then_close, s_client, scrape, tcp_segments_in, tls_get, tls_server,
                         wrk)

H = b"Host: localhost\r\n"


class TlsTestCase(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.certs = Certs()

    @classmethod
    def tearDownClass(cls):
        cls.certs.cleanup()

    def start_tls(self, extra="", rsa=True, ec=False, files=None, more="", **kwargs):
        """A server with one ssl server block (+ |more| blocks) on its port."""
        f = {"html/index.html": "hello tls\n", "html/a.txt": "AAAA"}
        f.update(files or {})
        body = tls_server(self.certs, extra, rsa=rsa, ec=ec) + more
        return self.server(body, files=f, **kwargs).start()

    def assert_handshake(self, out):
        """s_client completed a handshake (its exit code also reflects the close; see
        test_close_notify_on_close)."""
        self.assertRegex(out, r"(?m)^(New|Reused), TLSv1\.[23], Cipher is [A-Z]", out)

    def assert_serving(self, s):
        r = tls_get(s.port, "/a.txt")
        self.assertEqual((r.status, r.body), (200, b"AAAA"))


class ProtocolsTest(TlsTestCase):
    def test_curl_tls12_and_tls13(self):
        s = self.start_tls()
        url = "https://127.0.0.1:%d/index.html" % s.port
        code, out, err = curl("-k", "--tlsv1.2", "--tls-max", "1.2", "-w", "%{http_code}", url)
        self.assertEqual(code, 0, err)
        self.assertEqual(out, b"hello tls\n200")
        code, out, err = curl("-k", "--tlsv1.3", "-w", "%{http_code}", url)
        self.assertEqual(code, 0, err)
        self.assertEqual(out, b"hello tls\n200")
        samples = scrape(s.port)
        self.assertGreaterEqual(handshakes(samples, "TLSv1.2", "false"), 1)
        self.assertGreaterEqual(handshakes(samples, "TLSv1.3", "false"), 2)

    def test_s_client_both_versions_and_tls12_cipher(self):
        s = self.start_tls()
        code, out = s_client(s.port, "-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384")
        self.assert_handshake(out)
        self.assertEqual(field(out, r"^New, (TLSv1\.2), Cipher is (?:\S+)$"), "TLSv1.2", out)
        self.assertEqual(field(out, r"Cipher is (\S+)"), "ECDHE-RSA-AES256-GCM-SHA384", out)
        self.assertIn("HTTP/1.1 200", out)
        self.assertIn("hello tls", out)
        code, out = s_client(s.port, "-tls1_3")
        self.assert_handshake(out)
        self.assertEqual(field(out, r"^New, (TLSv1\.3),"), "TLSv1.3", out)
        self.assertIn("hello tls", out)

    def test_rsa_and_ecdsa_certificate_selection(self):
        s = self.start_tls(rsa=True, ec=True)
        for proto in ("-tls1_2", "-tls1_3"):
            code, out = s_client(s.port, proto, "-sigalgs", "ECDSA+SHA256")
            self.assert_handshake(out)
            self.assertEqual(field(out, r"Peer signature type: (\S+)"), "ECDSA", out)
            self.assertEqual(field(out, r"Server public key is (\d+) bit"), "256", out)
            code, out = s_client(s.port, proto, "-sigalgs", "RSA-PSS+SHA256:RSA+SHA256")
            self.assert_handshake(out)
            self.assertIn(field(out, r"Peer signature type: (\S+)"), ("RSA-PSS", "RSA"), out)
            self.assertEqual(field(out, r"Server public key is (\d+) bit"), "2048", out)

    def test_alpn_http11(self):
        s = self.start_tls()
        code, out = s_client(s.port, "-alpn", "http/1.1")
        self.assert_handshake(out)
        self.assertIn("ALPN protocol: http/1.1", out)
        # A client offering only h2 gets no ALPN answer or an alert, never h2.
        code, out = s_client(s.port, "-alpn", "h2")
        self.assertNotIn("ALPN protocol: h2", out)

    def test_old_protocols_refused(self):
        s = self.start_tls()
        before = handshake_errors(scrape(s.port), "protocol")
        for proto in ("-tls1_1", "-tls1"):
            code, out = s_client(s.port, proto, "-cipher", "DEFAULT@SECLEVEL=0", request=False)
            self.assertNotEqual(code, 0, out)
            self.assertIsNone(field(out, r"^(New, TLSv1[.\d]*), Cipher is [A-Z]"), out)
        self.assertTrue(wait_until(
            lambda: handshake_errors(scrape(s.port), "protocol") >= before + 2, timeout=5),
            "protocol errors: %r" % handshake_errors(scrape(s.port), "protocol"))
        self.assert_serving(s)

    def test_old_protocol_in_config_is_error(self):
        for value in ("TLSv1", "TLSv1.1", "TLSv1 TLSv1.2"):
            s = self.server(tls_server(self.certs, "ssl_protocols %s;" % value))
            code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
            self.assertEqual(code, 1, err)
            self.assertRegex(err, r"accelgate\.conf:\d+:.*ssl_protocols", err)

    def test_tls12_only_server_refuses_tls13(self):
        s = self.start_tls("ssl_protocols TLSv1.2;")
        code, out = s_client(s.port, "-tls1_3", request=False)
        self.assertNotEqual(code, 0, out)
        code, out = s_client(s.port)
        self.assert_handshake(out)
        self.assertEqual(field(out, r"^New, (TLSv1\.\d),"), "TLSv1.2", out)

    def test_no_shared_cipher(self):
        s = self.start_tls("ssl_protocols TLSv1.2; ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;")
        before = handshake_errors(scrape(s.port), "no_shared_cipher")
        code, out = s_client(s.port, "-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305",
                             request=False)
        self.assertNotEqual(code, 0, out)
        self.assertIsNone(field(out, r"^(New, TLSv1\.2), Cipher is [A-Z]"), out)
        self.assertTrue(wait_until(
            lambda: handshake_errors(scrape(s.port), "no_shared_cipher") == before + 1, timeout=5),
            "no_shared_cipher errors: %r" % handshake_errors(scrape(s.port), "no_shared_cipher"))
        code, out = s_client(s.port, "-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384")
        self.assert_handshake(out)


    def test_renegotiation_refused(self):
        # A TLS 1.2 client asking to renegotiate ("R" in s_client) is refused with a
        # no_renegotiation alert, and the server keeps serving.
        s = self.start_tls()
        # stdin stays open a moment: s_client reads "R" as its renegotiate command, and quits at
        # end of input.
        p = subprocess.Popen(["openssl", "s_client", "-connect", "127.0.0.1:%d" % s.port, "-tls1_2"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        p.stdin.write(b"R\n")
        p.stdin.flush()
        time.sleep(1.5)
        try:
            stdout, _ = p.communicate(timeout=15)  # closes stdin: s_client quits
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, _ = p.communicate()
        out = stdout.decode(errors="replace")
        self.assertIn("RENEGOTIATING", out)
        self.assertIn("no renegotiation", out)
        self.assert_serving(s)


class SniTest(TlsTestCase):
    def test_sni_selects_certificate(self):
        c = self.certs
        body = """
    server {
        listen 127.0.0.1:{port} ssl;
        server_name a.test;
        root html;
        ssl_certificate %s; ssl_certificate_key %s;
        location = /who { return 200 "a"; }
    }
    server {
        listen 127.0.0.1:{port} ssl;
        server_name b.test;
        root html;
        ssl_certificate %s; ssl_certificate_key %s;
        location = /who { return 200 "b"; }
    }
""" % (c.a_cert, c.a_key, c.b_cert, c.b_key)
        s = self.server(body).start()
        for name, cn in (("a.test", "a.test"), ("b.test", "b.test"), ("unknown.test", "a.test")):
            code, out = s_client(s.port, "-servername", name, request=False)
            self.assert_handshake(out)
            self.assertEqual(field(out, r"^subject=\s*CN\s*=\s*(\S+)"), cn, out)
        # No SNI at all: the default (first) server.
        code, out = s_client(s.port, "-noservername", request=False)
        self.assertEqual(field(out, r"^subject=\s*CN\s*=\s*(\S+)"), "a.test", out)
        # The Host header still selects the server block for the request.
        for name in ("a.test", "b.test"):
            r = tls_get(s.port, "/who", host=name, server_hostname=name)
            self.assertEqual(r.body, name[:1].encode())


class ResumptionTest(TlsTestCase):
    def resume(self, port, proto, port2=None):
        """A full handshake saving the session, then one resuming it (on |port2| if given);
        returns the second s_client output."""
        sess = os.path.join(self.certs.dir, "sess-%d-%s.pem" % (port, proto))
        code, out = s_client(port, proto, "-sess_out", sess)
        self.assert_handshake(out)
        self.assertRegex(out, r"(?m)^New, TLSv1\.[23], Cipher is")
        self.assertTrue(os.path.getsize(sess) > 0)
        code, out = s_client(port2 or port, proto, "-sess_in", sess)
        self.assert_handshake(out)
        self.assertIn("hello tls", out)
        return out

    def check_resumed(self, s, proto, version):
        out = self.resume(s.port, proto)
        self.assertRegex(out, r"(?m)^Reused, %s, Cipher is" % version.replace(".", r"\."), out)
        self.assertGreaterEqual(handshakes(scrape(s.port), version, "true"), 1)

    def test_tls12_by_session_cache(self):
        s = self.start_tls("ssl_session_cache shared:S:1m; ssl_session_tickets off;")
        self.check_resumed(s, "-tls1_2", "TLSv1.2")
        # Without tickets the saved session carries no ticket: this was the cache.
        code, out = s_client(s.port, "-tls1_2", request=False)
        self.assertNotIn("TLS session ticket:", out)

    def test_tls12_by_ticket(self):
        s = self.start_tls("ssl_session_cache off; ssl_session_tickets on;")
        self.check_resumed(s, "-tls1_2", "TLSv1.2")

    def test_tls13_by_ticket(self):
        s = self.start_tls("ssl_session_cache off; ssl_session_tickets on;")
        self.check_resumed(s, "-tls1_3", "TLSv1.3")

    def test_tls13_with_cache_and_default_tickets(self):
        s = self.start_tls("ssl_session_cache shared:S:1m;")
        self.check_resumed(s, "-tls1_3", "TLSv1.3")

    def test_no_resumption_when_disabled(self):
        s = self.start_tls("ssl_session_cache off; ssl_session_tickets off;")
        sess = os.path.join(self.certs.dir, "sess-off-%d.pem" % s.port)
        code, out = s_client(s.port, "-tls1_2", "-sess_out", sess)
        self.assert_handshake(out)
        # With no session ID and no ticket s_client may not even save the session.
        if os.path.exists(sess):
            code, out = s_client(s.port, "-tls1_2", "-sess_in", sess)
            self.assertRegex(out, r"(?m)^New, TLSv1\.2, Cipher is", out)
        self.assertEqual(handshakes(scrape(s.port), "TLSv1.2", "true"), 0)

    # Ticket keys shared by two instances (a fleet) and rotated.

    def key_server(self, *keys):
        lines = "ssl_session_cache off; ssl_session_tickets on;\n" + "".join(
            "ssl_session_ticket_key %s;\n" % k for k in keys)
        return self.start_tls(lines)

    def write_key(self, name, size):
        path = self.certs.path(name)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        os.chmod(path, 0o600)
        return path

    def test_ticket_key_shared_and_rotated_across_instances(self):
        old = self.write_key("old.key", 80)
        new = self.write_key("new.key", 80)
        a = self.key_server(old)
        b = self.key_server(old)
        for proto, version in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
            out = self.resume(a.port, proto, b.port)
            self.assertRegex(out, r"(?m)^Reused, %s," % version.replace(".", r"\."), out)
        # B rotated: encrypts with the new key, still decrypts tickets of the old one.
        b2 = self.key_server(new, old)
        for proto, version in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
            out = self.resume(a.port, proto, b2.port)
            self.assertRegex(out, r"(?m)^Reused, %s," % version.replace(".", r"\."), out)
        # A server that does not know the key falls back to a full handshake.
        c = self.key_server(new)
        out = self.resume(a.port, "-tls1_2", c.port)
        self.assertRegex(out, r"(?m)^New, TLSv1\.2,", out)
        # And a ticket made by the rotated server (new key) resumes on a server with [new].
        out = self.resume(b2.port, "-tls1_2", c.port)
        self.assertRegex(out, r"(?m)^Reused, TLSv1\.2,", out)
        self.assertGreaterEqual(handshakes(scrape(b.port), "TLSv1.2", "true"), 1)

    def test_48_byte_ticket_key(self):
        key = self.write_key("k48.key", 48)
        a = self.key_server(key)
        b = self.key_server(key)
        for proto, version in (("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")):
            out = self.resume(a.port, proto, b.port)
            self.assertRegex(out, r"(?m)^Reused, %s," % version.replace(".", r"\."), out)

    def test_wrong_size_ticket_key_is_config_error(self):
        for size in (32, 64, 0):
            key = self.write_key("bad%d.key" % size, size)
            s = self.server(tls_server(
                self.certs, "ssl_session_tickets on;\n        ssl_session_ticket_key %s;" % key))
            line = [i + 1 for i, l in enumerate(open(s.config_path).read().splitlines())
                    if "ssl_session_ticket_key" in l][0]
            code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
            self.assertEqual(code, 1, err)
            self.assertIn("accelgate.conf:%d:" % line, err)


class AbuseTest(TlsTestCase):
    def closed(self, port, data, within):
        with Client(port, timeout=10) as c:
            if data:
                c.send(data)
            start = time.monotonic()
            ok = c.closed_within(within)
            return ok, time.monotonic() - start

    def test_garbage_is_cut_off(self):
        s = self.start_tls()
        before = handshake_errors(scrape(s.port), "protocol")
        for data in (os.urandom(300), b"\x16\x03\x01\x00\x05hello" + b"\x00" * 64,
                     b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", b"\x80" * 2000):
            ok, took = self.closed(s.port, data, 5)
            self.assertTrue(ok, "not closed after %r" % data[:20])
            self.assert_serving(s)
        self.assertGreaterEqual(handshake_errors(scrape(s.port), "protocol"), before + 3)
        self.assertTrue(s.alive())

    def test_half_client_hello_and_silence_time_out(self):
        s = self.start_tls("ssl_handshake_timeout 1s;")
        before = handshake_errors(scrape(s.port), "timeout")
        for data in (b"\x16\x03\x01\x02\x00", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b""):
            ok, took = self.closed(s.port, data, 8)
            self.assertTrue(ok, "not closed after %r" % data)
            self.assertGreaterEqual(took, 0.5, data)
            self.assertLess(took, 4.5, data)
        self.assertTrue(wait_until(
            lambda: handshake_errors(scrape(s.port), "timeout") >= before + 3, timeout=5),
            "timeout errors: %r" % handshake_errors(scrape(s.port), "timeout"))
        self.assert_serving(s)

    def test_peer_closed_mid_handshake(self):
        # A client that sends its ClientHello and leaves (FIN or RST), or connects and closes
        # without a byte, is a peer_closed handshake error, not a protocol one.
        s = self.start_tls()
        before = scrape(s.port)
        for reset in (False, True):
            for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
                hello_then_close(s.port, reset=reset, maximum_version=version)
        socket.create_connection(("127.0.0.1", s.port), timeout=5).close()
        time.sleep(0.3)
        after = scrape(s.port)
        errors = {k: v for k, v in after.items() if "errors" in k[0]}
        self.assertEqual(handshake_errors(after, "peer_closed")
                         - handshake_errors(before, "peer_closed"), 5, errors)
        self.assertEqual(handshake_errors(after, "protocol"), handshake_errors(before, "protocol"))
        # None of them is a completed handshake (only the second scrape is).
        for version, n in (("TLSv1.3", 1), ("TLSv1.2", 0)):
            self.assertEqual(handshakes(after, version, "false")
                             - handshakes(before, version, "false"), n, version)

    def test_default_handshake_timeout_keeps_slow_client(self):
        # The default (60s) does not cut a client that needs a second for its hello.
        s = self.start_tls()
        with Client(s.port, timeout=10) as c:
            c.send(b"\x16\x03\x01\x02\x00")
            self.assertFalse(c.closed_within(2))
        self.assert_serving(s)

    def test_many_concurrent_handshakes(self):
        s = self.start_tls()
        requests, errors, out = wrk("https://127.0.0.1:%d/a.txt" % s.port)
        self.assertGreater(requests, 0, out)
        self.assertEqual(errors, {}, out)
        samples = scrape(s.port)
        total = sum(v for (name, _), v in samples.items()
                    if name == "accelgate_tls_handshakes_total")
        self.assertGreaterEqual(total, requests)
        self.assert_serving(s)


class HttpsServingTest(TlsTestCase):
    def test_redirect_http_to_https(self):
        plain = free_port()
        more = """
    server {
        listen 127.0.0.1:%d;
        server_name localhost;
        return 301 https://$host$request_uri;
    }
""" % plain
        s = self.start_tls(more=more)
        wait_for_port(plain)
        r = get(plain, "/a.txt?x=1", host="localhost:%d" % plain)
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "https://localhost/a.txt?x=1")
        r = tls_get(s.port, "/a.txt?x=1")
        self.assertEqual((r.status, r.body), (200, b"AAAA"))
        code, out, err = curl("-k", "-w", "%{http_code} %{redirect_url}",
                              "http://127.0.0.1:%d/x" % plain)
        self.assertEqual(out.split()[-2:], [b"301", b"https://127.0.0.1/x"], err)

    def test_static_file_head_and_keepalive(self):
        data = os.urandom(1 << 20)
        s = self.start_tls(files={"html/big.bin": data})
        r = tls_get(s.port, "/big.bin")
        self.assertEqual(r.status, 200)
        self.assertEqual(int(r.header("content-length")), len(data))
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), hashlib.sha256(data).hexdigest())
        code, out, err = curl("-k", "https://127.0.0.1:%d/big.bin" % s.port)
        self.assertEqual(code, 0, err)
        self.assertEqual(hashlib.sha256(out).digest(), hashlib.sha256(data).digest())
        with TlsClient(s.port) as c:
            r = c.request(b"HEAD /big.bin HTTP/1.1\r\n" + H + b"\r\n", head_request=True)
            self.assertEqual(r.status, 200)
            self.assertEqual(int(r.header("content-length")), len(data))
            r = c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n")
            self.assertEqual((r.status, r.body), (200, b"AAAA"))
            r = c.request(b"GET /big.bin HTTP/1.1\r\n" + H + b"\r\n")
            self.assertEqual(r.body, data)
            r = c.request(b"GET /a.txt HTTP/1.1\r\n" + H + b"\r\n")
            self.assertEqual((r.status, r.body), (200, b"AAAA"))
            self.assertEqual(c.buf, b"")

    def test_close_notify_on_close(self):
        # After a `Connection: close` response the server ends TLS with close_notify: a strict
        # client sees a clean end of the stream, not an unexpected EOF.
        s = self.start_tls()
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            raw = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            with client_context(maximum_version=version).wrap_socket(
                    raw, suppress_ragged_eofs=False) as sock:
                sock.sendall(b"GET /a.txt HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
                got = b""
                try:
                    while True:
                        b = sock.recv(65536)
                        if not b:
                            break
                        got += b
                except ssl.SSLEOFError as e:
                    self.fail("%s: no close_notify before the close (%r); got %r"
                              % (version.name, e, got[-40:]))
                self.assertTrue(got.endswith(b"AAAA"), got)
        code, out = s_client(s.port)
        self.assertIn("hello tls", out)
        self.assertEqual(code, 0, out[-600:])

    def test_closing_response_adds_no_segment(self):
        # A response after which the server closes leaves corked (TCP_CORK until the close):
        # its tail, TLS's close_notify and the FIN go in one segment, so the client receives
        # exactly the segments of the same response on a kept-alive connection, over plain TCP
        # and TLS 1.2 and 1.3 alike. Without it the close_notify and the FIN are two more
        # segments (one of them with data) for every connection.
        plain = free_port()
        more = """
    server {
        listen 127.0.0.1:%d;
        root html;
    }
""" % plain
        # No session tickets: a TLS 1.3 ticket after the handshake would race the counting.
        s = self.start_tls("ssl_session_cache off; ssl_session_tickets off;", more=more)
        wait_for_port(plain)

        def segments_for_response(version, close):
            raw = socket.create_connection(("127.0.0.1", plain if version is None else s.port),
                                           timeout=5)
            sock = raw if version is None else client_context(
                minimum_version=version, maximum_version=version).wrap_socket(raw)
            with sock:
                before = tcp_segments_in(sock)
                sock.sendall(b"GET /a.txt HTTP/1.1\r\n" + H
                             + (b"Connection: close\r\n" if close else b"") + b"\r\n")
                got = b""
                while close or not got.endswith(b"AAAA"):  # closing: to the end of the stream
                    b = sock.recv(65536)
                    if not b:
                        break
                    got += b
                self.assertTrue(got.startswith(b"HTTP/1.1 200") and got.endswith(b"AAAA"), got)
                after = tcp_segments_in(sock)
            return tuple(a - b for a, b in zip(after, before))

        for version in (None, ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            name = "plain" if version is None else version.name
            kept = segments_for_response(version, close=False)
            closed = segments_for_response(version, close=True)
            self.assertEqual(closed, kept, "%s: (segments, data segments) received for a closing "
                             "response %s, for a kept-alive one %s" % (name, closed, kept))

    def test_slow_reader_gets_whole_file(self):
        # Partial SSL_writes: a client with a small receive buffer that reads in pauses.
        data = os.urandom(3 << 20)
        s = self.start_tls(files={"html/big.bin": data})
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        raw.settimeout(10)
        raw.connect(("127.0.0.1", s.port))
        with client_context().wrap_socket(raw) as sock:
            sock.sendall(b"GET /big.bin HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
            got = b""
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    b = sock.recv(65536)
                except (ConnectionResetError, OSError):
                    break
                if not b:
                    break
                got += b
                if len(got) < (1 << 20):
                    time.sleep(0.01)
        head, _, body = got.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head[:100])
        self.assertEqual(len(body), len(data))
        self.assertEqual(hashlib.sha256(body).digest(), hashlib.sha256(data).digest())


class KeyFilesTest(TlsTestCase):
    def test_world_readable_key_is_warned(self):
        s = self.server(tls_server(self.certs).replace(self.certs.rsa_key, "KEYPATH"),
                        files={"html/a.txt": "AAAA"})
        key = s.path("conf/open.key")
        shutil.copy(self.certs.rsa_key, key)
        os.chmod(key, 0o644)
        with open(s.config_path) as f:
            text = f.read()
        with open(s.config_path, "w") as f:
            f.write(text.replace("KEYPATH", key))
        code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 0, err)
        self.assertIn("readable", err)
        s.start()
        self.assertTrue(wait_until(lambda: "readable" in s.error_log() and "open.key" in
                                   s.error_log(), timeout=5), s.error_log())
        r = tls_get(s.port, "/a.txt")
        self.assertEqual(r.body, b"AAAA")

    def test_owner_only_key_is_not_warned(self):
        s = self.start_tls()
        time.sleep(0.2)
        self.assertNotIn("readable by every user", s.error_log())

    def test_key_mismatch_is_config_error(self):
        c = self.certs
        body = """
    server {
        listen 127.0.0.1:{port} ssl;
        server_name localhost;
        ssl_certificate %s;
        ssl_certificate_key %s;
    }
""" % (c.rsa_cert, c.a_key)
        s = self.server(body)
        line = [i + 1 for i, l in enumerate(open(s.config_path).read().splitlines())
                if "ssl_certificate " in l][0]
        code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 1, err)
        self.assertIn("accelgate.conf:%d:" % line, err)

    def test_missing_certificate_is_config_error(self):
        body = tls_server(self.certs).replace(self.certs.rsa_cert, self.certs.path("nope.crt"))
        s = self.server(body)
        code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 1, err)
        self.assertRegex(err, r"accelgate\.conf:\d+:")


if __name__ == "__main__":
    unittest.main()
