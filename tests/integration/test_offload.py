"""The offload framework end to end: handshakes whose private-key operations go through the
in-process provider and the dispatcher to the `emu` engine (the emulated accelerator), under wrk
load with `Connection: close` (every request a full handshake). Errors, hangs, a full device and
a device that goes down and comes back must never fail a request (fallback on), must show in the
metrics, and the engine must be back in service at the end. Clients that vanish mid-handshake
and reloads under load neither crash nor leak (the harness fails on sanitizer reports)."""

import os
import signal
import socket
import threading
import time
import unittest

from harness import BINARY, curl, wait_until
from test_tls import TlsTestCase
from tls_harness import hello_then_close, scrape, tls_get, tls_server, wrk

WRK_SECONDS = 3


def offload_block(crypto="emu", emu="", extra=""):
    return "offload {\n crypto %s;\n %s\n %s\n}\n" % (crypto, ("emu %s;" % emu) if emu else "",
                                                        extra)


def ops(samples, engine, op, result):
    return samples.get(("accelgate_offload_ops_total",
                        '{engine="%s",op="%s",result="%s"}' % (engine, op, result)), 0)


def total(samples, engine=None, result=None):
    """Sum of accelgate_offload_ops_total over the given engine and result (any op)."""
    n = 0
    for (name, labels), v in samples.items():
        if name != "accelgate_offload_ops_total":
            continue
        if engine is not None and 'engine="%s"' % engine not in labels:
            continue
        if result is not None and 'result="%s"' % result not in labels:
            continue
        n += v
    return n


def engine_up(samples, engine):
    return samples.get(("accelgate_offload_engine_up", '{engine="%s"}' % engine))


class OffloadCase(TlsTestCase):
    """The helpers of the offload tests (no tests of its own)."""

    def assert_logged(self, s, text):
        """The error log gets |text| (written just after the workers start, so wait for it)."""
        self.assertTrue(wait_until(lambda: text in s.error_log(), timeout=10), s.error_log())

    def start(self, main, workers=2, ec=False, env=None, extra="", multi_accept=False):
        # Tickets off: every wrk request is a full handshake with a signature.
        events = "worker_connections 256;" + (" multi_accept on;" if multi_accept else "")
        s = self.server(tls_server(self.certs, "ssl_session_tickets off;" + extra, ec=ec),
                        main=main, workers=workers, files={"html/index.html": "hello offload\n"},
                        events=events)
        s.start(env=env)
        return s

    def assert_no_failures(self, requests, errors, out):
        self.assertGreater(requests, 0, out)
        self.assertEqual(errors.get("non2xx", 0), 0, out)
        for kind in ("connect", "read", "write", "timeout"):
            self.assertEqual(errors.get(kind, 0), 0, out)

    def load(self, s, connections=8, seconds=WRK_SECONDS):
        requests, errors, out = wrk("https://127.0.0.1:%d/index.html" % s.port,
                                    connections=connections, duration=seconds)
        self.assert_no_failures(requests, errors, out)
        return requests

    def assert_back_up(self, s):
        """Traffic until the breaker has probed the engine back (if it was out at all)."""
        self.assertTrue(wait_until(
            lambda: tls_get(s.port, "/index.html").status == 200 and
            engine_up(scrape(s.port), "emu") == 1, timeout=5), s.error_log())


class OffloadTest(OffloadCase):
    # --- the provider route is really taken ---

    def test_sw_engine_serves_rsa_and_ecdsa_handshakes(self):
        s = self.start(offload_block("sw"), ec=True)
        self.assert_logged(s, 'offload: crypto sw: engine "sw"')
        url = "https://127.0.0.1:%d/index.html" % s.port
        for args in (["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"]):
            for sigalg in ("RSA", "ECDSA"):
                code, out, err = curl("-k", *args, "--ciphers",
                                      "ECDHE-%s-AES128-GCM-SHA256" % sigalg, url)
                self.assertEqual((code, out), (0, b"hello offload\n"), err)
        m = scrape(s.port)
        self.assertGreater(ops(m, "sw", "rsa_sign", "ok"), 0)
        self.assertGreater(ops(m, "sw", "ecdsa_sign", "ok"), 0)
        self.assertGreater(ops(m, "sw", "x25519_derive", "ok"), 0)
        self.assertGreater(ops(m, "sw", "x25519_keygen", "ok"), 0)

    def test_crypto_off_keeps_the_plain_path(self):
        s = self.start(offload_block("off"))
        self.assertEqual(tls_get(s.port, "/index.html").body, b"hello offload\n")
        self.assertEqual(total(scrape(s.port)), 0)
        self.assert_logged(s, "crypto off")

    def test_emu_engine_computes_ops(self):
        s = self.start(offload_block("emu", "latency=1ms", "op_timeout 2s;"))
        self.assert_logged(s, 'offload: crypto emu: engine "emu", fallback on')
        self.load(s, seconds=1)
        m = scrape(s.port)
        self.assertGreater(ops(m, "emu", "rsa_sign", "ok"), 0)
        self.assertEqual(total(m, "emu", "error"), 0)
        self.assertEqual(total(m, "sw", "fallback"), 0)
        self.assertEqual(engine_up(m, "emu"), 1)
        self.assertIn(("accelgate_offload_latency_seconds_count",
                       '{engine="emu",op="rsa_sign"}'), m)

    def test_mb_engine_batches_handshake_ops(self):
        # Runs where the CPU has no IFMA too, on the portable back end (test hook; about 100 ms a
        # batch of eight here, so a generous op_timeout). One worker, so the batches form there.
        s = self.start(offload_block("mb", extra="op_timeout 5s;"), workers=1,
                       env={"ACCELGATE_TEST_MB_PORTABLE": "1"}, multi_accept=True)
        self.assert_logged(s, 'offload: crypto mb: engine "mb"')
        self.assertNotIn("batches stay small", s.error_log())
        self.load(s, connections=16, seconds=3)
        m = scrape(s.port)
        self.assertGreater(ops(m, "mb", "rsa_sign", "ok"), 0, m)
        self.assertEqual(total(m, "mb", "error") + total(m, "mb", "timeout"), 0, m)
        self.assertEqual(total(m, "sw", "fallback"), 0, m)
        # The ephemeral X25519 key of every handshake and its shared secret are mb's too.
        self.assertGreater(ops(m, "mb", "x25519_keygen", "ok"), 0, m)
        self.assertGreater(ops(m, "mb", "x25519_derive", "ok"), 0, m)
        self.assertEqual(total(m, "sw"), 0, m)
        self.assertEqual(m.get(("accelgate_offload_mb_recomputed_total", "")), 0, m)
        # Batches formed: more ops than batches, so some held several.
        batches = m[("accelgate_offload_batch_size_count", "")]
        lanes = m[("accelgate_offload_batch_size_sum", "")]
        self.assertGreater(lanes, batches, m)

    def test_mb_engine_serves_ecdsa_and_ecdh(self):
        # An ECDSA certificate and P-384 key exchange (the client's X25519 key share is refused:
        # a HelloRetryRequest): the signature and the ECDH secret are mb's; P-384 always
        # batches, even alone.
        s = self.start(offload_block("mb", extra="op_timeout 5s;"), workers=1, ec=True,
                       env={"ACCELGATE_TEST_MB_PORTABLE": "1"}, extra="ssl_ecdh_curve secp384r1;")
        # multi_accept is off here: the server says that mb's batches will stay small.
        self.assert_logged(s, 'engine "mb" batches the handshakes a loop iteration sees')
        self.load(s, connections=4, seconds=2)
        m = scrape(s.port)
        self.assertGreater(ops(m, "mb", "ecdsa_sign", "ok"), 0, m)
        self.assertGreater(ops(m, "mb", "ecdh_derive", "ok"), 0, m)
        self.assertEqual(total(m, "mb", "error") + total(m, "mb", "timeout") + total(m, "sw"), 0, m)
        self.assertEqual(m.get(("accelgate_offload_mb_recomputed_total", "")), 0, m)

    def test_pool_threads_are_counted_and_shared_across_reloads(self):
        main = offload_block("pool", extra="pool_threads 3;")
        s = self.start(main)
        self.load(s, seconds=1)
        m = scrape(s.port)
        self.assertGreater(ops(m, "pool", "rsa_sign", "ok"), 0)
        self.assertEqual(m.get(("accelgate_threads", '{role="worker"}')), 2)
        self.assertEqual(m.get(("accelgate_threads", '{role="crypto"}')), 3)
        # A reload with the same settings keeps the same device: still 3 crypto threads, never 6.
        s.signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: "configuration reloaded" in s.error_log(), timeout=5))
        self.load(s, seconds=1)
        m = scrape(s.port)
        self.assertEqual(m.get(("accelgate_threads", '{role="crypto"}')), 3)
        # New settings make a new device; the old one stops once its engines are idle.
        s.write_config(tls_server(self.certs, "ssl_session_tickets off;"), workers=2,
                       main=offload_block("pool", extra="pool_threads 1;"))
        s.signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: s.error_log().count("configuration reloaded") >= 2,
                                   timeout=5))
        self.load(s, seconds=1)
        self.assertTrue(wait_until(
            lambda: scrape(s.port).get(("accelgate_threads", '{role="crypto"}')) == 1,
            timeout=5), scrape(s.port))

    # --- degraded devices never fail a request ---

    def test_errors_fall_back(self):
        s = self.start(offload_block("emu", "latency=200us error_rate=0.3",
                                     "retry_interval 200ms;"))
        self.load(s)
        m = scrape(s.port)
        self.assertGreater(total(m, "emu", "error"), 0)
        self.assertGreater(total(m, "sw", "fallback"), 0)
        self.assertGreater(total(m, "emu", "ok"), 0)
        self.assert_back_up(s)

    def test_hangs_time_out_and_fall_back(self):
        s = self.start(offload_block("emu", "latency=200us hang_rate=0.1",
                                     "op_timeout 20ms; retry_interval 200ms;"))
        self.load(s)
        m = scrape(s.port)
        self.assertGreater(total(m, "emu", "timeout"), 0)
        self.assertGreater(total(m, "sw", "fallback"), 0)
        self.assertIn("did not complete in op_timeout", s.error_log())

    def test_full_device_is_busy_and_falls_back(self):
        s = self.start(offload_block("emu", "latency=5ms capacity=4"))
        self.load(s, connections=24)
        m = scrape(s.port)
        self.assertGreater(total(m, "emu", "busy"), 0)
        self.assertGreater(total(m, "emu", "ok"), 0)
        self.assertGreater(total(m, "sw", "fallback"), 0)

    def test_device_down_and_back_mid_run(self):
        s = self.server(tls_server(self.certs, "ssl_session_tickets off;"), workers=2,
                        main=offload_block("emu", "latency=200us control=var/emu.ctl",
                                           "retry_interval 200ms;"),
                        files={"html/index.html": "hello offload\n", "var/emu.ctl": "up\n"})
        s.start()
        control = s.path("var/emu.ctl")

        def flip():
            time.sleep(0.8)
            with open(control, "w") as f:
                f.write("down\n")
            time.sleep(1.2)
            with open(control, "w") as f:
                f.write("up\n")

        t = threading.Thread(target=flip, daemon=True)
        t.start()
        self.load(s, seconds=4)
        t.join()
        self.assertTrue(wait_until(lambda: "taken out" in s.error_log(), timeout=2),
                        s.error_log())
        self.assert_back_up(s)
        m = scrape(s.port)
        self.assertGreater(total(m, "sw", "fallback"), 0)
        self.assertGreater(total(m, "emu", "error"), 0)
        self.assertIn("back in service", s.error_log())

    # --- connections that go away while their op is in flight ---

    def test_clients_closing_mid_handshake(self):
        s = self.start(offload_block("emu", "latency=30ms"))
        threads = [threading.Thread(target=hello_then_close,
                                    args=(s.port,), kwargs={"reset": i % 2 == 0, "wait": 0.01})
                   for i in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.2)  # let the ops complete for connections that are gone
        self.assertTrue(s.alive())
        self.assertEqual(tls_get(s.port, "/index.html").body, b"hello offload\n")
        m = scrape(s.port)
        self.assertGreater(ops(m, "emu", "rsa_sign", "ok") + ops(m, "emu", "x25519_keygen", "ok"),
                           0)

    def test_reload_under_load(self):
        s = self.start(offload_block("emu", "latency=500us"))
        result = {}

        def run():
            result["r"] = wrk("https://127.0.0.1:%d/index.html" % s.port, connections=8,
                              duration=WRK_SECONDS)

        t = threading.Thread(target=run)
        t.start()
        for _ in range(4):
            time.sleep(0.5)
            s.signal(signal.SIGHUP)
        t.join()
        self.assert_no_failures(*result["r"])
        self.assertTrue(wait_until(lambda: s.error_log().count("configuration reloaded") >= 4,
                                   timeout=5))
        self.assertGreater(total(scrape(s.port), "emu", "ok"), 0)


# The module build/accelgate.so, next to the binary under test.
MODULE = os.path.join(os.path.dirname(os.path.abspath(BINARY)), "accelgate.so")


class OpensslEngineTest(OffloadCase):
    """`crypto openssl:ID` with accelgate's own module as the vendor's provider and that module's
    `emu` engine as the card (ACCELGATE_CRYPTO=emu for the module): each op goes from the
    server's dispatcher to the openssl engine, which runs its LibraryFn in an ASYNC job in the
    module's library context; the module pauses the job and wakes it through a wait fd, as a
    card's provider does."""

    def module_env(self, emu="latency=1ms", fallback=None):
        env = {"ACCELGATE_CRYPTO": "emu", "ACCELGATE_EMU": emu}
        if fallback is not None:
            env["ACCELGATE_FALLBACK"] = fallback
        return env

    def openssl_block(self, extra=""):
        # These tests are about the route, not deadlines (tested with emu): a generous op_timeout
        # keeps a loaded machine's scheduling delays from turning into fallbacks.
        return offload_block("openssl:" + MODULE, extra="op_timeout 2s;\n " + extra)

    def assert_served_by_openssl(self, s):
        m = scrape(s.port)
        self.assertGreater(ops(m, "openssl", "rsa_sign", "ok"), 0, m)
        self.assertGreater(ops(m, "openssl", "x25519_derive", "ok"), 0, m)
        self.assertEqual(total(m, "openssl", "error"), 0, s.error_log())
        self.assertEqual(total(m, "sw", "fallback"), 0, s.error_log())
        # X25519 keygen is not the openssl engine's: software makes the key, at first hand.
        self.assertEqual(sum(ops(m, "openssl", "x25519_keygen", r)
                             for r in ("ok", "error", "busy", "timeout")), 0)
        self.assertGreater(ops(m, "sw", "x25519_keygen", "ok"), 0, m)

    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(MODULE), "no module at %s (build accelgate_module)" % MODULE)

    def test_module_as_vendor_provider_serves_handshakes(self):
        s = self.start(self.openssl_block(), env=self.module_env())
        self.assert_logged(s, 'offload: crypto openssl:%s: engine "openssl:%s", fallback on'
                           % (MODULE, MODULE))
        self.load(s)
        self.assert_served_by_openssl(s)
        code, out, err = s.cli("--engines")
        self.assertEqual(code, 0, err)
        self.assertRegex(out, r"(?m)^openssl\s+available.*<- chosen")

    def test_notify_poll_timer_and_busy(self):
        for mode in ("timer", "busy"):
            with self.subTest(poll_mode=mode):
                s = self.start(self.openssl_block("notify poll; poll_mode %s;" % mode),
                               env=self.module_env())
                self.load(s, seconds=1)
                self.assert_served_by_openssl(s)
                s.stop()

    def test_card_errors_fall_back_to_software(self):
        # The module's own dispatcher must not fall back (ACCELGATE_FALLBACK=off), so that the
        # card's errors reach the openssl engine as failed ops.
        s = self.start(self.openssl_block(), env=self.module_env("error_rate=1", fallback="off"))
        self.load(s)
        m = scrape(s.port)
        self.assertGreater(total(m, "openssl", "error"), 0, m)
        self.assertGreater(total(m, "sw", "fallback"), 0, m)
        self.assertEqual(total(m, "openssl", "ok"), 0, m)

    def test_unloadable_provider(self):
        s = self.server(tls_server(self.certs, "ssl_session_tickets off;"), workers=2,
                        main="offload {\n crypto openssl:/nonexistent.so;\n fallback off;\n}\n",
                        files={"html/index.html": "hello offload\n"})
        code, out, err = s.cli("-t")
        self.assertEqual(code, 1, err)
        self.assertRegex(err, r'accelgate\.conf:\d+: offload engine "openssl:/nonexistent\.so" cannot be used: '
                              r'cannot load the OpenSSL provider "/nonexistent\.so"')
        s.write_config(tls_server(self.certs, "ssl_session_tickets off;"), workers=2,
                       main=offload_block("openssl:/nonexistent.so"))
        code, out, err = s.cli("-t")
        self.assertEqual(code, 0, err)
        self.assertRegex(err, r'\[warn\] .*accelgate\.conf:\d+: offload engine '
                              r'"openssl:/nonexistent\.so" cannot be used: cannot load the OpenSSL provider "/nonexistent\.so".*'
                              r'fallback on: software serves')
        s.start()
        self.load(s, seconds=1)
        m = scrape(s.port)
        self.assertGreater(ops(m, "sw", "rsa_sign", "ok"), 0, m)
        self.assertEqual(total(m, "openssl"), 0, m)


class EnginesCliTest(TlsTestCase):
    def test_engines_lists_every_engine(self):
        s = self.server(tls_server(self.certs), main=offload_block("emu"))
        code, out, err = s.cli("--engines")
        self.assertEqual(code, 0, err)
        for name in ("openssl", "mb", "pool", "emu", "sw"):
            self.assertRegex(out, r"(?m)^%s\s" % name)
        self.assertRegex(out, r"(?m)^emu\s+available.*<- chosen")
        self.assertIn('crypto emu: engine "emu", fallback on', out)
        self.assertRegex(out, r"(?m)^sw\s+available")

    def test_mb_is_available_exactly_where_the_cpu_has_ifma(self):
        with open("/proc/cpuinfo") as f:
            flags = next(line for line in f if line.startswith("flags")).split()
        ifma = all(x in flags for x in ("avx512f", "avx512vl", "avx512bw", "avx512ifma"))
        s = self.server(tls_server(self.certs),
                        main="offload {\n crypto mb;\n fallback off;\n}\n")
        code, out, err = s.cli("--engines")
        self.assertEqual(code, 0, err)
        if ifma:
            self.assertRegex(out, r"(?m)^mb\s+available.*<- chosen")
        else:
            self.assertRegex(out, r"(?m)^mb\s+no\b")
            self.assertIn("needs AVX-512 IFMA", out)
        code, out, err = s.cli("-t")
        self.assertEqual(code, 0 if ifma else 1, err)


if __name__ == "__main__":
    unittest.main()
