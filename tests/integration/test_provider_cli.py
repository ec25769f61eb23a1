"""The provider module build/accelgate.so inside OpenSSL's own command-line tools.

Every run sets ACCELGATE_STATS_FILE, where the module writes how many private operations of each
kind each engine served when the process ends: that is how a test tells that the work really went
through the provider and the engine it asked for, rather than OpenSSL's default provider (a
timing threshold would be fragile on a shared machine).
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from harness import BINARY, curl, free_port

BUILD_DIR = os.path.dirname(os.path.abspath(BINARY))
MODULE = os.path.join(BUILD_DIR, "accelgate.so")
PROVIDER_ARGS = ["-provider-path", BUILD_DIR, "-provider", "accelgate", "-provider", "default"]


def module_env():
    """The environment for an uninstrumented `openssl` loading the module: a sanitizer build of
    the module needs the ASan runtime loaded first, and `openssl speed` leaks its ECDSA key (so
    leak reports about the tool itself are turned off; the unit tests check our leaks)."""
    env = dict(os.environ)
    ldd = subprocess.run(["ldd", MODULE], capture_output=True, text=True).stdout
    m = re.search(r"(\S*libasan\.so\S*) => (\S+)", ldd)
    if m:
        env["LD_PRELOAD"] = m.group(2)
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def assert_no_sanitizer_report(test, output):
    for marker in ("AddressSanitizer", "runtime error:", "LeakSanitizer"):
        test.assertNotIn(marker, output, "sanitizer report from the module:\n" + output[-4000:])


def read_stats(path):
    """{(op, engine): count} from an ACCELGATE_STATS_FILE."""
    stats = {}
    with open(path) as f:
        for line in f:
            op, engine, count = line.split()
            stats[(op, engine)] = int(count)
    return stats


class ProviderCliTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(MODULE), "no module at %s (build accelgate_module)" % MODULE)
        self.dir = tempfile.mkdtemp(prefix="accelgate-prov-")
        self.stats_file = os.path.join(self.dir, "stats")
        self.env = module_env()
        self.env["ACCELGATE_STATS_FILE"] = self.stats_file
        self.env.pop("ACCELGATE_CRYPTO", None)
        self.env.pop("ACCELGATE_EMU", None)
        self.env.pop("OPENSSL_CONF", None)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def openssl(self, *args, env=None, timeout=120):
        p = subprocess.run(["openssl"] + list(args), capture_output=True, text=True,
                           env=env or self.env, timeout=timeout)
        assert_no_sanitizer_report(self, p.stdout + p.stderr)
        return p.returncode, p.stdout + p.stderr

    def assert_served_by(self, ops, engine):
        """Every op in |ops| ran, mostly on |engine| (a few may run inline, outside a job)."""
        self.assertTrue(os.path.exists(self.stats_file), "the module wrote no stats")
        stats = read_stats(self.stats_file)
        for op in ops:
            on_engine = stats.get((op, engine), 0)
            elsewhere = sum(n for (o, e), n in stats.items() if o == op and e != engine)
            self.assertGreater(on_engine, 0, "%s never ran on %s: %s" % (op, engine, stats))
            self.assertGreater(on_engine, elsewhere, "%s mostly not on %s: %s" % (op, engine, stats))
        return stats

    def test_list_providers(self):
        code, out = self.openssl("list", "-providers", "-provider-path", BUILD_DIR,
                                 "-provider", "accelgate")
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"(?m)^  accelgate\n\s+name: accelgate")
        self.assertRegex(out, r"status: active")
        code, out = self.openssl("list", "-signature-algorithms", "-key-exchange-algorithms",
                                 "-provider-path", BUILD_DIR, "-provider", "accelgate")
        self.assertEqual(code, 0, out)
        for name in ("RSA", "ECDSA", "ECDH", "X25519"):
            self.assertRegex(out, r"%s\b.*@ accelgate" % name)

    def speed(self, engine, emu=None):
        self.env["ACCELGATE_CRYPTO"] = engine
        if emu is not None:
            self.env["ACCELGATE_EMU"] = emu
        code, out = self.openssl("speed", *PROVIDER_ARGS, "-async_jobs", "16", "-elapsed",
                                 "-seconds", "1", "rsa2048", "ecdsap256", "ecdhp256", "ecdhx25519")
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"(?m)^rsa 2048 bits\s+\S+s\s+\S+s\s+[1-9][0-9.]*\s+[1-9]")
        self.assertRegex(out, r"(?m)^\s*256 bits ecdsa \(nistp256\)\s+\S+s\s+\S+s\s+[1-9]")
        self.assertRegex(out, r"(?m)^\s*256 bits ecdh \(nistp256\)\s+\S+s\s+[1-9]")
        self.assertRegex(out, r"(?m)^\s*253 bits ecdh \(X25519\)\s+\S+s\s+[1-9]")
        self.assert_served_by(["rsa_sign", "ecdsa_sign", "ecdh_derive", "x25519_derive"], engine)

    def test_speed_sw(self):
        self.speed("sw")

    def test_speed_pool(self):
        self.speed("pool")

    def test_speed_emu(self):
        self.speed("emu", emu="latency=300us capacity=64 error_rate=0 hang_rate=0")

    def test_speed_mb(self):
        # The mb engine in another application (openssl speed), batching the jobs' signatures
        # (mb_flush 20us); on a CPU without IFMA on the portable back end (test hook). Three
        # seconds: `openssl speed` drops the row of a key size that did one signature or none, and
        # an ASan portable batch beside CI's other tests took up to a second on Zen 3 (1 s gave
        # 1-9 signatures there).
        self.env["ACCELGATE_CRYPTO"] = "mb"
        self.env["ACCELGATE_TEST_MB_PORTABLE"] = "1"
        code, out = self.openssl("speed", *PROVIDER_ARGS, "-async_jobs", "8", "-elapsed",
                                 "-seconds", "3", "rsa2048")
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"(?m)^rsa 2048 bits\s+\S+s\s+\S+s\s+[1-9][0-9.]*\s+[1-9]")
        self.assert_served_by(["rsa_sign"], "mb")

    def test_crypto_parameter_in_openssl_cnf(self):
        # The provider's `crypto` parameter wins over the environment.
        cnf = os.path.join(self.dir, "openssl.cnf")
        with open(cnf, "w") as f:
            f.write("openssl_conf = openssl_init\n"
                    "[openssl_init]\nproviders = provider_sect\n"
                    "[provider_sect]\naccelgate = accelgate_sect\ndefault = default_sect\n"
                    "[accelgate_sect]\nmodule = %s\ncrypto = pool\nactivate = 1\n"
                    "[default_sect]\nactivate = 1\n" % MODULE)
        self.env["OPENSSL_CONF"] = cnf
        self.env["ACCELGATE_CRYPTO"] = "sw"
        code, out = self.openssl("speed", "-async_jobs", "8", "-elapsed", "-seconds", "1",
                                 "ecdhx25519")
        self.assertEqual(code, 0, out)
        self.assert_served_by(["x25519_derive"], "pool")

    def test_bad_crypto_setting_computes_in_software(self):
        self.env["ACCELGATE_CRYPTO"] = "nonsense"
        code, out = self.openssl("speed", *PROVIDER_ARGS, "-async_jobs", "4", "-elapsed",
                                 "-seconds", "1", "ecdhx25519")
        self.assertEqual(code, 0, out)
        self.assertIn("accelgate provider: crypto \"nonsense\"", out)
        self.assert_served_by(["x25519_derive"], "inline")


def make_cert(directory, name, newkey):
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", *newkey, "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True,
                   timeout=60)
    return cert, key


class SServerTest(unittest.TestCase):
    """`openssl s_server -async` with the module: handshakes complete, and the private
    operations were the provider's, on the pool engine's threads."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="accelgate-prov-certs-")
        cls.rsa = make_cert(cls.dir, "rsa", ["-newkey", "rsa:2048"])
        cls.ec = make_cert(cls.dir, "ec", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_server(self, cert_key, clients):
        """Starts s_server for len(clients) connections, runs each client (a function of the
        port), waits for the server to exit and returns its stats."""
        stats_file = os.path.join(self.dir, "stats-%d" % time.monotonic_ns())
        env = module_env()
        env["ACCELGATE_STATS_FILE"] = stats_file
        env["ACCELGATE_CRYPTO"] = "pool"
        port = free_port()
        cert, key = cert_key
        server = subprocess.Popen(
            ["openssl", "s_server", *PROVIDER_ARGS, "-async", "-accept", "127.0.0.1:%d" % port,
             "-cert", cert, "-key", key, "-www", "-naccept", str(len(clients) + 1), "-cipher", "ALL"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    self.assertIsNone(server.poll(), "s_server exited early")
                    self.assertLess(time.monotonic(), deadline, "s_server did not listen")
                    time.sleep(0.05)
            # That probe was one accepted connection; the server serves one more than asked.
            for client in clients:
                client(port)
            out, _ = server.communicate(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        assert_no_sanitizer_report(self, out.decode(errors="replace"))
        self.assertEqual(server.returncode, 0, out.decode(errors="replace"))
        return read_stats(stats_file)

    def curl_client(self, *args):
        def run(port):
            code, body, err = curl("-k", *args, "https://127.0.0.1:%d/" % port)
            self.assertEqual(code, 0, err)
            self.assertIn(b"s_server", body)
        return run

    def s_client(self, *args):
        def run(port):
            p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                                "-ign_eof", *args],
                               input=b"GET / HTTP/1.0\r\n\r\n", capture_output=True, timeout=20)
            out = (p.stdout + p.stderr).decode(errors="replace")
            self.assertEqual(p.returncode, 0, out)
            self.assertIn("HTTP/1.0 200 ok", out)
        return run

    def expect_on_pool(self, stats, ops):
        for op in ops:
            self.assertGreater(stats.get((op, "pool"), 0), 0, "%s not on pool: %s" % (op, stats))

    def test_rsa_certificate(self):
        stats = self.run_server(self.rsa, [
            self.curl_client("--tlsv1.3"),
            self.curl_client("--tlsv1.2", "--tls-max", "1.2"),
            self.s_client("-tls1_2", "-cipher", "AES128-SHA"),      # RSA key exchange
            self.s_client("-tls1_3", "-groups", "P-256"),
        ])
        self.expect_on_pool(stats, ["rsa_sign", "rsa_decrypt", "x25519_keygen", "x25519_derive",
                                    "ecdh_derive"])

    def test_ecdsa_certificate(self):
        stats = self.run_server(self.ec, [
            self.curl_client("--tlsv1.3"),
            self.curl_client("--tlsv1.2", "--tls-max", "1.2"),
        ])
        self.expect_on_pool(stats, ["ecdsa_sign", "x25519_keygen", "x25519_derive"])


if __name__ == "__main__":
    unittest.main()
