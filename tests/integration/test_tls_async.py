"""Paused async handshake jobs, with the test hook ACCELGATE_TEST_ASYNC_PAUSE=callback:MS or fd:MS
(every handshake pauses its OpenSSL async job once and is resumed MS ms later through the
ASYNC_WAIT_CTX callback or a wait fd in epoll): requests succeed and are counted, wrk sees no
error, and a client that goes away, a handshake timeout, SIGQUIT, SIGTERM or SIGHUP while jobs are
paused neither crashes nor leaks (the harness fails on sanitizer reports) nor hangs the server."""

import signal
import socket
import ssl
import subprocess
import threading
import time
import unittest

from harness import curl, free_port, wait_until
from test_tls import TlsTestCase
from tls_harness import (client_context, handshake_errors, handshakes, hello_then_close, scrape,
                         tls_get, tls_server, wrk)

MODES = ("callback", "fd")
HOOK = "ACCELGATE_TEST_ASYNC_PAUSE"


class Fetcher(threading.Thread):
    """One TLS GET in a thread; .result is the Response or the exception."""

    def __init__(self, port, path="/a.txt", timeout=15):
        super().__init__(daemon=True)
        self.port, self.path, self.timeout = port, path, timeout
        self.result = None
        self.start()

    def run(self):
        try:
            self.result = tls_get(self.port, self.path, timeout=self.timeout)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.result = e


def accepted_all(port, n):
    """At least |n| established connections to |port| and none waiting in its listen queue
    (`ss`: a listening socket's Recv-Q is its accept queue)."""
    def ss(*args):
        return subprocess.run(["ss", "-Htn", *args, "sport = :%d" % port], capture_output=True,
                              text=True, timeout=5).stdout.split("\n")
    listening = [line.split() for line in ss("-l") if line.strip()]
    established = [line for line in ss("state", "established") if line.strip()]
    return bool(listening) and all(f[1] == "0" for f in listening) and len(established) >= n


class AsyncHookTest(TlsTestCase):
    def start_hooked(self, mode, delay_ms, extra="", more="", **kwargs):
        s = self.server(tls_server(self.certs, extra) + more,
                        files={"html/a.txt": "AAAA", "html/index.html": "hello tls\n"}, **kwargs)
        s.start(env={HOOK: "%s:%d" % (mode, delay_ms)})
        self.assertTrue(wait_until(lambda: "test hook active" in s.error_log(), timeout=5),
                        s.error_log())
        return s

    def test_requests_succeed_and_are_counted(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                s = self.start_hooked(mode, 300)
                before = scrape(s.port)
                # The pause is real: a full handshake takes at least the hook's delay.
                start = time.monotonic()
                self.assertEqual(tls_get(s.port, "/a.txt").body, b"AAAA")
                self.assertGreaterEqual(time.monotonic() - start, 0.25)
                url = "https://127.0.0.1:%d/index.html" % s.port
                for args in (["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"]) * 2:
                    code, out, err = curl("-k", *args, url)
                    self.assertEqual((code, out), (0, b"hello tls\n"), err)
                after = scrape(s.port)
                # tls_get + 4 curls + this scrape (the one before is counted in |before|).
                for version, n in (("TLSv1.2", 2), ("TLSv1.3", 4)):
                    self.assertGreaterEqual(
                        handshakes(after, version, "false") - handshakes(before, version, "false"),
                        n, (version, after))
                s.stop()

    def test_wrk_with_paused_handshakes(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                s = self.start_hooked(mode, 5)
                requests, errors, out = wrk("https://127.0.0.1:%d/a.txt" % s.port)
                self.assertGreater(requests, 0, out)
                self.assertEqual(errors, {}, out)
                self.assertEqual(tls_get(s.port, "/a.txt").body, b"AAAA")
                s.stop()

    def test_client_gone_while_job_paused(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                s = self.start_hooked(mode, 300)
                before = all_errors(scrape(s.port))
                for i in range(10):
                    hello_then_close(s.port, reset=(i % 2 == 1))
                # Jobs paused past the clients' departure finish later; wait for them.
                time.sleep(0.6)
                self.assertTrue(s.alive())
                self.assertEqual(tls_get(s.port, "/a.txt").body, b"AAAA")
                # Each is counted as a failed handshake (its reason: test_tls's
                # test_peer_closed_mid_handshake).
                self.assertTrue(wait_until(
                    lambda: all_errors(scrape(s.port)) >= before + 10, timeout=5),
                    (before, all_errors(scrape(s.port))))
                s.stop()

    def test_handshake_timeout_while_job_paused(self):
        # Port 1 times handshakes out after 1s, the hook holds each job 2s; port 2 waits.
        port2 = free_port()
        more = tls_server(self.certs, port=port2)
        s = self.start_hooked("fd", 2000, "ssl_handshake_timeout 1s;", more=more)
        before = handshake_errors(scrape_slow(port2), "timeout")
        raw = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        sock = client_context().wrap_socket(raw, do_handshake_on_connect=False)
        start = time.monotonic()
        # The job cannot be abandoned: when it resumes it may still write the server's flight,
        # so the client may see a finished handshake; but the connection is closed and no
        # request is served on it.
        try:
            sock.do_handshake()
            sock.sendall(b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
            got = sock.recv(65536)
            outcome = "got %r" % got[:80] if got else "closed after the handshake"
        except (ssl.SSLError, OSError) as e:
            outcome = repr(e)
        finally:
            sock.close()
        took = time.monotonic() - start
        self.assertFalse(outcome.startswith("got"), outcome)
        self.assertLess(took, 5, outcome)
        self.assertTrue(s.alive())
        self.assertTrue(wait_until(
            lambda: handshake_errors(scrape_slow(port2), "timeout") >= before + 1, timeout=5))
        # Both modes of the hook and the callback path: more clients leaving mid-pause.
        for i in range(4):
            hello_then_close(s.port, reset=(i % 2 == 0))
        time.sleep(2.5)
        self.assertEqual(tls_get(port2, "/a.txt", timeout=10).body, b"AAAA")

    def signal_while_paused(self, mode, sig, delay_ms=1500):
        s = self.start_hooked(mode, delay_ms)
        fetchers = [Fetcher(s.port) for _ in range(5)]
        # The signal must find every client accepted (a connection still in the listen queue
        # when the listeners close is reset by the kernel, as with nginx): wait until the five
        # are established and the queue is empty, well inside the hook's pause.
        self.assertTrue(wait_until(lambda: accepted_all(s.port, 5), timeout=delay_ms / 1000 / 2),
                        "the clients were not accepted in time")
        time.sleep(0.1)
        start = time.monotonic()
        s.signal(sig)
        try:
            s.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - the harness kills it in tearDown
            pass
        took = time.monotonic() - start
        for f in fetchers:
            f.join(20)
        self.assertFalse(any(f.is_alive() for f in fetchers), "a client hung")
        self.assertIsNotNone(s.proc.poll(), "did not exit within 10s after signal %d" % sig)
        self.assertEqual(s.stop(), 0)
        return took, [f.result for f in fetchers]

    def test_sigquit_while_paused(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                took, results = self.signal_while_paused(mode, signal.SIGQUIT)
                self.assertLess(took, 8)
                # A graceful stop finishes handshakes in flight and serves their requests.
                self.assertTrue(results, results)
                for r in results:
                    self.assertFalse(isinstance(r, Exception), repr(r))
                    self.assertEqual(r.status, 200)

    def test_sigterm_while_paused(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                took, results = self.signal_while_paused(mode, signal.SIGTERM)
                self.assertLess(took, 5)

    def test_reload_while_paused(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                s = self.start_hooked(mode, 1000)
                fetchers = [Fetcher(s.port) for _ in range(5)]
                time.sleep(0.3)
                s.write_config(tls_server(self.certs, 'location = /v { return 200 "v2"; }'))
                s.signal(signal.SIGHUP)
                for f in fetchers:
                    f.join(20)
                for f in fetchers:
                    self.assertFalse(f.is_alive(), "a client hung")
                    self.assertFalse(isinstance(f.result, Exception), repr(f.result))
                    self.assertEqual((f.result.status, f.result.body), (200, b"AAAA"))
                self.assertTrue(wait_until(
                    lambda: tls_get(s.port, "/v", timeout=10).body == b"v2", timeout=15))
                self.assertTrue(s.alive())
                s.stop()


def all_errors(samples):
    return sum(v for (name, _), v in samples.items()
               if name == "accelgate_tls_handshake_errors_total")


def scrape_slow(port):
    return scrape(port, timeout=10)


if __name__ == "__main__":
    unittest.main()
