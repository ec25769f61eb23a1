"""The command line: -t on good and bad files (errors name file:line), -v, bad options, and
-s reload|reopen|quit|stop through the pid file."""

import os
import re
import subprocess
import unittest

from harness import BINARY, SOURCE_DIR, ServerTestCase, get, wait_until

HEAD = "worker_processes 1;\nevents { worker_connections 64; }\n"

GOOD_CONFIGS = {
    "units": HEAD + """http {
    include mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile off;
    keepalive_timeout 1m;
    keepalive_requests 100;
    client_header_timeout 500ms;
    client_body_timeout 1h;
    send_timeout 1d;
    client_max_body_size 1g;
    client_header_buffer_size 2k;
    large_client_header_buffers 4 16k;
    server {
        listen 127.0.0.1:18081 default_server reuseport;
        server_name "example.com" 'www.example.com' *.example.net .example.org;
        root "html";  # a comment after a directive
        index index.html index.htm;
        location = /metrics { metrics; }
        location = /stub { stub_status; }
        location /r { return 301 https://$host$request_uri; }
        location /t { return 200 "a \\"quoted\\" text;{}#"; }
        location / { root html; index index.html; }
    }
}
""",
    "include glob": HEAD + "http {\n    include mime.types;\n    include servers/*.conf;\n"
                           "    include nothing-matches/*.conf;\n}\n",
    "auto workers": "worker_processes auto;\nerror_log var/e.log warn;\npid var/x.pid;\n"
                    "events { worker_connections 1024; }\nhttp { server { listen 18082; } }\n",
}

# (name, config text, the line the error must name, a word the message must contain)
BAD_CONFIGS = [
    ("unknown directive", HEAD + "http {\n    server {\n        bogus on;\n    }\n}\n", 5, "bogus"),
    ("directive in the wrong block", HEAD + "http {\n    worker_connections 5;\n}\n", 4,
     "worker_connections"),
    ("root in events", "events {\n    root html;\n}\n", 2, "root"),
    ("bad number", "worker_processes abc;\n" + HEAD[19:], 1, "abc"),
    ("bad size", HEAD + "http {\n    client_max_body_size 10x;\n}\n", 4, "10x"),
    ("bad time", HEAD + "http {\n\n    keepalive_timeout 5q;\n}\n", 5, "5q"),
    ("bad on/off", HEAD + "http {\n    sendfile maybe;\n}\n", 4, "maybe"),
    ("missing semicolon", HEAD + "http {\n    sendfile on\n    server { }\n}\n", 5, ""),
    ("unexpected }", HEAD + "}\n", 3, ""),
    ("too many arguments", HEAD + "http {\n    sendfile on off;\n}\n", 4, "sendfile"),
    ("no arguments", HEAD + "http {\n    server {\n        root;\n    }\n}\n", 5, "root"),
    ("bad listen port", HEAD + "http {\n    server {\n        listen 70000;\n    }\n}\n", 5, "70000"),
    ("bad return code", HEAD + "http {\n    server {\n        location / { return 1000; }\n"
     "    }\n}\n", 5, "1000"),
    ("duplicate directive", HEAD + "http {\n    server {\n        root a;\n        root b;\n"
     "    }\n}\n", 6, "root"),
    ("include of a missing file", HEAD + "http {\n    include missing.types;\n}\n", 4, "missing"),
    ("unterminated quote", HEAD + "http {\n    default_type \"text/plain;\n}\n", None, ""),
    ("unclosed block", HEAD + "http {\n    server {\n", None, ""),
]


class CliTest(ServerTestCase):
    def check(self, s, text, name="test.conf"):
        s.write_file("conf/" + name, text)
        return s.cli("-t", "-c", "conf/" + name)

    def test_t_on_good_files(self):
        s = self.server()
        s.write_file("conf/servers/a.conf", "server { listen 127.0.0.1:18083; server_name a; }\n")
        s.write_file("conf/servers/b.conf", "server { listen 127.0.0.1:18083; server_name b; }\n")
        for name, text in GOOD_CONFIGS.items():
            with self.subTest(config=name):
                code, out, err = self.check(s, text)
                self.assertEqual(code, 0, err)
        # The harness's own config and the shipped default config.
        code, out, err = s.cli("-t", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 0, err)
        p = subprocess.run([BINARY, "-p", SOURCE_DIR, "-t", "-c", "conf/accelgate.conf"],
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        # -t binds nothing and writes no pid file.
        self.assertFalse(os.path.exists(s.path("var/accelgate.pid")))

    def test_t_on_bad_files_names_file_and_line(self):
        s = self.server()
        for name, text, line, word in BAD_CONFIGS:
            with self.subTest(config=name):
                code, out, err = self.check(s, text, "bad.conf")
                self.assertEqual(code, 1, "exit %d for a bad config; stderr: %s" % (code, err))
                m = re.search(r"bad\.conf:(\d+):", err)
                self.assertIsNotNone(m, "no bad.conf:LINE: in stderr: %r" % err)
                if line is not None:
                    self.assertEqual(int(m.group(1)), line, err)
                self.assertIn(word, err)

    def test_t_error_in_included_file_names_that_file(self):
        s = self.server()
        s.write_file("conf/sub/inner.conf", "server {\n    listen 127.0.0.1:18084;\n\n    nonsense 1;\n}\n")
        code, out, err = self.check(s, HEAD + "http {\n    include sub/*.conf;\n}\n", "outer.conf")
        self.assertEqual(code, 1, err)
        self.assertRegex(err, r"inner\.conf:4:")
        self.assertIn("nonsense", err)

    def test_t_on_missing_file(self):
        s = self.server()
        code, out, err = s.cli("-t", "-c", "conf/does-not-exist.conf")
        self.assertEqual(code, 1)
        self.assertIn("does-not-exist.conf", err)

    def test_v_prints_version(self):
        p = subprocess.run([BINARY, "-v"], capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        text = (p.stdout + p.stderr).decode()
        self.assertRegex(text, r"accelgate[ /]+(version )?\d+\.\d+\.\d+")

    def test_bad_options(self):
        for args in (["-x"], ["--no-such-option"], ["-c"], ["-s", "explode"], ["-p"]):
            with self.subTest(args=args):
                p = subprocess.run([BINARY] + args, capture_output=True, timeout=30)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertNotEqual(p.stderr, b"")

    def test_s_reload_reopen_quit_through_pid_file(self):
        http = """
            server {
                listen 127.0.0.1:{port};
                location = /v { return 200 "%s"; }
            }
        """
        s = self.server(http % "one").start()
        pid_path = s.path("var/accelgate.pid")
        self.assertTrue(wait_until(lambda: os.path.exists(pid_path), timeout=5))
        with open(pid_path) as f:
            self.assertEqual(int(f.read().strip()), s.proc.pid)
        self.assertEqual(get(s.port, "/v").body, b"one")

        s.write_config(http % "two")
        code, out, err = s.cli("-s", "reload", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 0, err)
        self.assertTrue(wait_until(lambda: get(s.port, "/v").body == b"two", timeout=10))

        os.rename(s.path("var/access.log"), s.path("var/access.log.old"))
        code, out, err = s.cli("-s", "reopen", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 0, err)
        self.assertTrue(wait_until(lambda: os.path.exists(s.path("var/access.log")), timeout=5))

        code, out, err = s.cli("-s", "quit", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 0, err)
        self.assertTrue(wait_until(lambda: not s.alive(), timeout=10), "-s quit did not stop it")
        self.assertEqual(s.stop(), 0)
        # The pid file is removed on exit, as nginx does; -s then has nobody to signal.
        self.assertFalse(os.path.exists(pid_path))
        code, out, err = s.cli("-s", "reload", "-c", "conf/accelgate.conf")
        self.assertEqual(code, 1)
        self.assertIn("accelgate.pid", err)

    def test_s_stop(self):
        s = self.server().start()
        self.assertTrue(wait_until(lambda: os.path.exists(s.path("var/accelgate.pid")), timeout=5))
        code, out, err = s.cli("-s", "stop")
        self.assertEqual(code, 0, err)
        self.assertTrue(wait_until(lambda: not s.alive(), timeout=10))
        self.assertEqual(s.stop(), 0)

    def test_starting_with_a_bad_config_fails(self):
        s = self.server()
        s.write_file("conf/accelgate.conf", HEAD + "http {\n    nope;\n}\n")
        p = subprocess.run([BINARY, "-p", s.prefix, "-c", "conf/accelgate.conf"],
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr.decode(), r"accelgate\.conf:4:")


if __name__ == "__main__":
    unittest.main()
