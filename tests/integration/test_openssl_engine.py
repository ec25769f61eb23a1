"""`crypto openssl:<ENGINE>`: the server drives an OpenSSL ENGINE, here build/ag_emu_engine.so,
the emulated ENGINE of tests/engine (it pauses the async job until its device thread completes
the operation, then computes with OpenSSL's own methods; it is not an accelerator). Handshakes
under wrk with `Connection: close` must never fail; the engine's own counters (its stats file)
prove that it computed the RSA and ECDSA operations; notify event and the three poll modes;
a failing engine falls back to software; an engine that cannot load fails `-t` with fallback
off and is a warning with fallback on; a reload keeps the engine (initialised once); and the
same shared object works with the openssl command-line tools (`openssl speed -engine`,
`openssl pkeyutl -engine`)."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from harness import BINARY, curl, wait_until
from test_offload import OffloadCase, engine_up, ops, total
from test_provider_cli import assert_no_sanitizer_report
from tls_harness import scrape, tls_get, tls_server

BUILD_DIR = os.path.dirname(os.path.abspath(BINARY))
ENGINE = os.path.join(BUILD_DIR, "ag_emu_engine.so")


def read_emu_stats(path):
    """{name: count} from the emulated engine's AG_EMU_ENGINE_STATS file ({} before its first)."""
    stats = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                name, count = line.split()
                stats[name] = int(count)
    return stats


def engine_block(extra="", crypto="openssl:" + ENGINE, op_timeout="2s"):
    """The offload block. A generous op_timeout: these tests are about what the engine computes,
    and on a loaded 2-core machine a worker may wait longer than 50 ms for a core (the timeout
    path has tests of its own, in test_offload)."""
    return "offload {\n crypto %s;\n op_timeout %s;\n %s\n}\n" % (crypto, op_timeout, extra)


class EngineCase(OffloadCase):
    """Servers with the emulated engine; its stats and event log files in the server's var/."""

    def setUp(self):
        super().setUp()
        self.assertTrue(os.path.exists(ENGINE), "no engine at %s (build ag_emu_engine)" % ENGINE)

    def engine_env(self, s, **settings):
        env = {"AG_EMU_ENGINE_STATS": s.path("var/emu.stats"),
               "AG_EMU_ENGINE_LOG": s.path("var/emu.log"),
               "AG_EMU_ENGINE_LATENCY_US": "1000"}
        env.update({"AG_EMU_ENGINE_" + k.upper(): str(v) for k, v in settings.items()})
        return env

    def start_engine(self, main, ec=True, workers=2, **settings):
        # RSA and ECDSA certificates; tickets off: every request is a full handshake.
        s = self.server(tls_server(self.certs, "ssl_session_tickets off;", ec=ec), main=main,
                        workers=workers, files={"html/index.html": "hello offload\n"})
        s.start(env=self.engine_env(s, **settings))
        return s

    def emu_stats(self, s):
        return read_emu_stats(s.path("var/emu.stats"))

    def wait_emu(self, s, predicate):
        """The engine rewrites its stats within 100 ms of a change."""
        wait_until(lambda: predicate(self.emu_stats(s)), timeout=5)
        return self.emu_stats(s)

    def emu_log(self, s):
        path = s.path("var/emu.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def forced_handshakes(self, s, count=5):
        """TLS 1.2 handshakes with each signature algorithm and ECDH on P-256 (curl)."""
        url = "https://127.0.0.1:%d/index.html" % s.port
        for sigalg in ("RSA", "ECDSA"):
            for _ in range(count):
                code, out, err = curl("-k", "--tlsv1.2", "--tls-max", "1.2", "--curves", "P-256",
                                      "--ciphers", "ECDHE-%s-AES128-GCM-SHA256" % sigalg, url)
                self.assertEqual((code, out), (0, b"hello offload\n"), err)

    def assert_engine_served(self, s, polled=False):
        m = scrape(s.port)
        for op in ("rsa_sign", "ecdsa_sign", "ecdh_derive"):
            self.assertGreater(ops(m, "openssl", op, "ok"), 0, (op, m))
        self.assertEqual(total(m, "openssl", "error"), 0, s.error_log())
        self.assertEqual(total(m, "openssl", "timeout"), 0, s.error_log())
        self.assertEqual(total(m, "sw", "fallback"), 0, s.error_log())
        # The ENGINE does no X25519: software at first hand, nothing counted on openssl.
        for op in ("x25519_derive", "x25519_keygen"):
            self.assertEqual(sum(ops(m, "openssl", op, r)
                                 for r in ("ok", "error", "busy", "timeout", "fallback")), 0, op)
        self.assertGreater(ops(m, "sw", "x25519_derive", "ok"), 0, m)
        # The engine itself computed them, in jobs it paused.
        stats = self.wait_emu(s, lambda st: st.get("rsa_priv_enc", 0) > 0 and
                              st.get("ecdsa_sign", 0) > 0 and st.get("ecdh_compute_key", 0) > 0)
        for name in ("rsa_priv_enc", "ecdsa_sign", "ecdh_compute_key", "async"):
            self.assertGreater(stats.get(name, 0), 0, (name, stats))
        self.assertEqual(stats.get("failed", 0), 0, stats)
        self.assertEqual(stats.get("polls", 0) > 0, polled, stats)
        return stats


class EngineServerTest(EngineCase):
    def test_rsa_and_ecdsa_handshakes_with_notify_event(self):
        s = self.start_engine(engine_block())
        self.assert_logged(s, 'openssl engine: ENGINE "ag_emu"')
        self.assert_logged(s, "accelerates RSA sign, RSA decrypt, ECDSA sign, ECDH derive")
        self.load(s)
        self.forced_handshakes(s)
        stats = self.assert_engine_served(s)
        # The certificate keys are bound to the engine once, not once per handshake (an ECDH's
        # ephemeral key is new in every handshake, so each is bound once too).
        self.assertGreater(stats["rsa_priv_enc"] + stats["ecdsa_sign"], 20, stats)
        self.assertLessEqual(stats.get("rsa_keys", 0), 2, stats)
        self.assertLessEqual(stats.get("ec_keys", 0), 2 + stats["ecdh_compute_key"], stats)
        self.assertEqual(engine_up(scrape(s.port), "openssl"), 1)
        # One ENGINE_init for the two workers.
        self.assertEqual(self.emu_log(s).count("init"), 1, self.emu_log(s))

    def test_notify_poll_heuristic_timer_busy(self):
        for mode in ("heuristic", "timer", "busy"):
            with self.subTest(poll_mode=mode):
                s = self.start_engine(engine_block("notify poll; poll_mode %s;" % mode))
                self.assert_logged(s, "polled with POLL (external polling)")
                self.load(s, seconds=1)
                self.forced_handshakes(s, count=2)
                self.assert_engine_served(s, polled=True)
                # Set before ENGINE_init, as QAT_Engine wants it.
                log = self.emu_log(s)
                self.assertLess(log.index("ctrl ENABLE_EXTERNAL_POLLING"), log.index("init"), log)
                s.stop()

    def test_failing_engine_falls_back_to_software(self):
        # The error rate through openssl_engine_ctrl, before ENGINE_init.
        s = self.start_engine(engine_block("openssl_engine_ctrl ERROR_RATE 0.3;\n"
                                           " retry_interval 200ms;"))
        self.load(s)
        m = scrape(s.port)
        self.assertGreater(total(m, "openssl", "error"), 0, m)
        self.assertGreater(total(m, "openssl", "ok"), 0, m)
        self.assertGreater(total(m, "sw", "fallback"), 0, m)
        stats = self.wait_emu(s, lambda st: st.get("failed", 0) > 0)
        self.assertGreater(stats.get("failed", 0), 0, stats)
        self.assertIn("ctrl ERROR_RATE 0.3", self.emu_log(s))

    def test_engine_failing_every_op(self):
        s = self.start_engine(engine_block(), error_rate=1)
        self.load(s)
        m = scrape(s.port)
        self.assertGreater(total(m, "openssl", "error"), 0, m)
        self.assertEqual(total(m, "openssl", "ok"), 0, m)
        self.assertGreater(total(m, "sw", "fallback"), 0, m)
        self.assertIn("taken out", s.error_log())

    def test_unloadable_engine(self):
        bogus = "/nonexistent/engine.so"
        s = self.server(tls_server(self.certs), workers=2,
                        main=engine_block("fallback off;", crypto="openssl:" + bogus),
                        files={"html/index.html": "hello offload\n"})
        code, out, err = s.cli("-t")
        self.assertEqual(code, 1, err)
        self.assertRegex(err, r'accelgate\.conf:\d+: offload engine "openssl:/nonexistent/engine\.so" '
                              r'cannot be used: .*cannot load the OpenSSL ENGINE "/nonexistent/engine\.so"')
        s.write_config(tls_server(self.certs), workers=2,
                       main=engine_block(crypto="openssl:" + bogus))
        code, out, err = s.cli("-t")
        self.assertEqual(code, 0, err)
        self.assertRegex(err, r"\[warn\] .*accelgate\.conf:\d+: offload engine .*cannot load the "
                              r"OpenSSL ENGINE.*fallback on: software serves")
        s.start()
        self.load(s, seconds=1)
        m = scrape(s.port)
        self.assertGreater(ops(m, "sw", "rsa_sign", "ok"), 0, m)
        self.assertEqual(total(m, "openssl"), 0, m)

    def test_control_command_refused(self):
        s = self.server(tls_server(self.certs), workers=1,
                        main=engine_block("fallback off;\n openssl_engine_ctrl LATENCY_US 20;\n"
                                          " openssl_engine_ctrl NO_SUCH_COMMAND 1;"),
                        files={"html/index.html": "hello offload\n"})
        code, out, err = s.cli("-t")
        self.assertEqual(code, 1, err)
        # The line of the refused directive (the block starts on line 4 of the file).
        self.assertRegex(err, r"accelgate\.conf:\d+: openssl_engine_ctrl NO_SUCH_COMMAND 1: "
                              r"refused by the OpenSSL ENGINE")
        # A syntax error is caught before any engine loads.
        s.write_config(tls_server(self.certs), main=engine_block("openssl_engine_ctrl A B C;"))
        code, out, err = s.cli("-t")
        self.assertEqual(code, 1, err)
        self.assertRegex(err, r'accelgate\.conf:\d+: invalid number of arguments in '
                              r'"openssl_engine_ctrl" directive')

    def test_control_commands_reach_the_engine(self):
        s = self.start_engine(engine_block("openssl_engine_ctrl LATENCY_US 300;"))
        self.load(s, seconds=1)
        self.assertIn("ctrl LATENCY_US 300", self.emu_log(s))
        log = self.emu_log(s)
        self.assertLess(log.index("ctrl LATENCY_US 300"), log.index("init"), log)

    def test_reload_keeps_the_engine(self):
        s = self.start_engine(engine_block())
        self.load(s, seconds=1)
        before = total(scrape(s.port), "openssl", "ok")
        result = {}

        def run():
            result["r"] = self.load(s, seconds=2)

        t = threading.Thread(target=run)
        t.start()
        for _ in range(2):
            time.sleep(0.5)
            s.signal(signal.SIGHUP)
        t.join()
        self.assertTrue(wait_until(lambda: s.error_log().count("configuration reloaded") >= 2,
                                   timeout=5))
        self.load(s, seconds=1)
        self.assertGreater(total(scrape(s.port), "openssl", "ok"), before)
        # Initialised once, never finished: the same ENGINE served both configurations.
        log = self.emu_log(s)
        self.assertEqual(log.count("init"), 1, log)
        self.assertEqual(log.count("finish"), 0, log)
        self.assertEqual(log.count("bind"), 1, log)
        # A reload that sets it up otherwise keeps it as it is, says so, and still serves.
        s.write_config(tls_server(self.certs, "ssl_session_tickets off;", ec=True), workers=2,
                       main=engine_block("notify poll;"))
        s.signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: s.error_log().count("configuration reloaded") >= 3,
                                   timeout=5))
        self.assert_logged(s, "keeps the set-up it was initialised with")
        self.load(s, seconds=1)
        self.assertEqual(self.emu_log(s).count("bind"), 1, self.emu_log(s))
        m = scrape(s.port)
        self.assertEqual(total(m, "openssl", "timeout"), 0, s.error_log())

    def test_engines_lists_engine_support(self):
        s = self.server(tls_server(self.certs), main=engine_block())
        code, out, err = s.cli("--engines")
        self.assertEqual(code, 0, err)
        self.assertRegex(out, r"(?m)^openssl\s+available.*<- chosen")
        self.assertIn("OpenSSL ENGINE support: compiled in", out)
        self.assertRegex(out, r'loaded: ENGINE "ag_emu" .*accelerates RSA sign, RSA decrypt, '
                              r'ECDSA sign, ECDH derive')
        s.write_config(tls_server(self.certs), main="")
        code, out, err = s.cli("--engines")
        self.assertEqual(code, 0, err)
        self.assertIn("OpenSSL ENGINE support: compiled in", out)


class EngineCliTest(unittest.TestCase):
    """The emulated engine in OpenSSL's own tools, as README.md demonstrates it."""

    def setUp(self):
        self.assertTrue(os.path.exists(ENGINE), "no engine at %s (build ag_emu_engine)" % ENGINE)
        self.dir = tempfile.mkdtemp(prefix="accelgate-engine-")
        self.stats = os.path.join(self.dir, "emu.stats")
        self.env = dict(os.environ)
        # A sanitizer build of the engine needs the ASan runtime first in an uninstrumented
        # `openssl` (whose own leaks are not ours to report).
        ldd = subprocess.run(["ldd", ENGINE], capture_output=True, text=True).stdout
        m = re.search(r"(\S*libasan\.so\S*) => (\S+)", ldd)
        if m:
            self.env["LD_PRELOAD"] = m.group(2)
            self.env["ASAN_OPTIONS"] = "detect_leaks=0"
        self.env["AG_EMU_ENGINE_STATS"] = self.stats
        self.env["AG_EMU_ENGINE_LATENCY_US"] = "200"

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def openssl(self, *args):
        p = subprocess.run(["openssl"] + list(args), capture_output=True, text=True,
                           env=self.env, timeout=120, cwd=self.dir)
        assert_no_sanitizer_report(self, p.stdout + p.stderr)
        return p.returncode, p.stdout + p.stderr

    def test_openssl_speed_with_async_jobs(self):
        code, out = self.openssl("speed", "-engine", ENGINE, "-async_jobs", "8", "-seconds", "1",
                                 "-elapsed", "rsa2048", "ecdsap256")
        self.assertEqual(code, 0, out)
        self.assertIn('Engine "ag_emu" set.', out)
        self.assertRegex(out, r"rsa 2048 bits")
        stats = read_emu_stats(self.stats)
        self.assertGreater(stats.get("rsa_priv_enc", 0), 0, stats)
        self.assertGreater(stats.get("ecdsa_sign", 0), 0, stats)
        self.assertGreater(stats.get("async", 0), stats.get("inline", 0), stats)

    def test_openssl_pkeyutl_signature_verifies(self):
        for algorithm, opts in (("RSA", ["-pkeyopt", "rsa_keygen_bits:2048"]),
                                ("EC", ["-pkeyopt", "ec_paramgen_curve:P-256"])):
            with self.subTest(algorithm=algorithm):
                key = os.path.join(self.dir, algorithm + ".pem")
                digest = os.path.join(self.dir, "digest")
                sig = os.path.join(self.dir, algorithm + ".sig")
                code, out = self.openssl("genpkey", "-algorithm", algorithm, *opts, "-out", key)
                self.assertEqual(code, 0, out)
                with open(digest, "wb") as f:
                    f.write(os.urandom(32))
                if os.path.exists(self.stats):
                    os.unlink(self.stats)  # each process writes its own counts
                code, out = self.openssl("pkeyutl", "-engine", ENGINE, "-sign", "-inkey", key,
                                         "-in", digest, "-out", sig)
                self.assertEqual(code, 0, out)
                # Verified without the engine.
                code, out = self.openssl("pkeyutl", "-verify", "-inkey", key, "-in", digest,
                                         "-sigfile", sig)
                self.assertEqual(code, 0, out)
                self.assertIn("Signature Verified Successfully", out)
                stats = read_emu_stats(self.stats)
                name = "rsa_priv_enc" if algorithm == "RSA" else "ecdsa_sign"
                # Outside an async job: computed inline.
                self.assertGreater(stats.get(name, 0), 0, stats)
                self.assertGreater(stats.get("inline", 0), 0, stats)
                self.assertEqual(stats.get("async", 0), 0, stats)


if __name__ == "__main__":
    unittest.main()
