"""Integration test harness: starts the real accelgate binary on ephemeral loopback ports.

Each test gets a private prefix directory (config, html root, var/) under a temporary folder.
The binary comes from the AG_BINARY environment variable (CTest sets it to the build's
accelgate). Servers are stopped by pid at the end of each test; a server that crashed, or that
printed a sanitizer report, fails the test.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BINARY = os.environ.get("AG_BINARY", os.path.join(os.path.dirname(__file__), "../../build/accelgate"))
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))


def free_port():
    """A loopback TCP port nobody listens on right now (bind to 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=10.0, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("accelgate exited with %d before listening" % proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise AssertionError("accelgate did not listen on port %d in %.0fs" % (port, timeout))


class Server:
    """One accelgate process with its own prefix. |http_body| is the inside of the http block
    (use {port} for the listening port); |main| is extra main-context text."""

    def __init__(self, http_body=None, main="", workers=1, files=None,
                 access_log="access_log var/access.log;", error_level="info",
                 events="worker_connections 256;"):
        """|access_log| is the http-level access_log line; |error_level| the error_log level;
        |events| the inside of the events block."""
        self.access_log_line = access_log
        self.error_level = error_level
        self.events = events
        self.prefix = tempfile.mkdtemp(prefix="accelgate-it-")
        self.port = free_port()
        self.proc = None
        try:
            os.makedirs(os.path.join(self.prefix, "conf"))
            os.makedirs(os.path.join(self.prefix, "html"))
            os.makedirs(os.path.join(self.prefix, "var"))
            shutil.copy(os.path.join(SOURCE_DIR, "conf/mime.types"), os.path.join(self.prefix, "conf"))
            for name, content in (files or {}).items():
                self.write_file(name, content)
            if http_body is None:
                http_body = DEFAULT_HTTP
            self.write_config(http_body, main, workers)
        except BaseException:
            self.cleanup()
            raise

    def write_file(self, name, content):
        path = os.path.join(self.prefix, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)
        return path

    def config_text(self, http_body, main="", workers=1):
        return (
            "worker_processes %d;\n"
            "pid var/accelgate.pid;\n"
            "error_log var/error.log %s;\n"
            "%s\n"
            "events { %s }\n"
            "http {\n include mime.types;\n %s\n%s\n}\n"
            % (workers, self.error_level, main, self.events, self.access_log_line,
               http_body.replace("{port}", str(self.port)))
        )

    def write_config(self, http_body, main="", workers=1):
        self.config_path = self.write_file("conf/accelgate.conf", self.config_text(http_body, main, workers))

    def start(self, user=None, env=None):
        """Starts the server and waits until it listens. |user| (only when the tests run as
        root): run it as that user through setpriv, owning the prefix, so that file permissions
        apply to it (root reads a chmod 000 file). |env|: extra environment variables."""
        self.stderr = open(os.path.join(self.prefix, "var/stderr.log"), "w+")
        argv = [BINARY, "-p", self.prefix, "-c", "conf/accelgate.conf"]
        if user is not None:
            import pwd
            entry = pwd.getpwnam(user)
            for root, dirs, files in os.walk(self.prefix):
                for name in [root] + [os.path.join(root, n) for n in dirs + files]:
                    if not os.path.islink(name):
                        os.chown(name, entry.pw_uid, entry.pw_gid)
            argv = ["setpriv", "--reuid=%d" % entry.pw_uid, "--regid=%d" % entry.pw_gid,
                    "--clear-groups", "--"] + argv
        full_env = None
        if env:
            full_env = dict(os.environ)
            full_env.update(env)
        self.proc = subprocess.Popen(argv, stdout=self.stderr, stderr=self.stderr, env=full_env)
        wait_for_port(self.port, proc=self.proc)
        return self

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=None, timeout=15):
        """Stops the server and returns its exit code; raises if it crashed or a sanitizer spoke.
        (|sig| defaults to SIGTERM; the default is not written in the signature because the
        method `signal` above shadows the module inside the class body.)"""
        if sig is None:
            sig = signal.SIGTERM
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("accelgate did not stop within %ds after signal %d" % (timeout, sig))
        code = self.proc.returncode
        self.proc = None
        self.stderr.seek(0)
        err = self.stderr.read()
        self.stderr.close()
        for marker in ("AddressSanitizer", "runtime error:", "LeakSanitizer"):
            if marker in err:
                raise AssertionError("sanitizer report from accelgate:\n" + err[-4000:])
        if code != 0:
            raise AssertionError("accelgate exited with %d:\n%s" % (code, err[-4000:]))
        return code

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def path(self, name):
        return os.path.join(self.prefix, name)

    def cli(self, *args, timeout=30):
        """Runs `accelgate -p PREFIX ARGS...` to completion; returns (exit code, stdout, stderr)."""
        p = subprocess.run([BINARY, "-p", self.prefix] + list(args), capture_output=True,
                           timeout=timeout)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def error_log(self):
        with open(os.path.join(self.prefix, "var/error.log")) as f:
            return f.read()

    def access_log(self):
        path = os.path.join(self.prefix, "var/access.log")
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    def cleanup(self):
        shutil.rmtree(self.prefix, ignore_errors=True)


DEFAULT_HTTP = """
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        root html;
        location = /metrics { metrics; }
    }
"""


def raw_request(port, data, timeout=5.0, read_all=True):
    """Sends |data| on a fresh connection and returns everything received until the server
    closes (or |timeout| passes with no byte)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            chunks.append(b)
            if not read_all:
                break
        return b"".join(chunks)


def status_of(response):
    """The status code of the first response in |response| bytes, or None."""
    if not response.startswith(b"HTTP/1."):
        return None
    return int(response.split(b" ", 2)[1])


def curl(*args, timeout=10):
    """Runs curl, returns (exit code, stdout bytes, stderr text)."""
    p = subprocess.run(["curl", "-sS", "--max-time", str(timeout)] + list(args),
                       capture_output=True, timeout=timeout + 5)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def wait_until(predicate, timeout=10.0, interval=0.05):
    """Polls |predicate| until it returns a true value (returned) or |timeout| passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


class Response:
    """One parsed HTTP response: status, reason, headers (lower-case name -> last value; all
    values in header_list), body bytes and the raw head."""

    def __init__(self, head, body):
        self.head = head
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        self.version = parts[0]
        self.status = int(parts[1])
        self.reason = parts[2] if len(parts) > 2 else ""
        self.header_list = []
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            self.header_list.append((name.strip().lower(), value.strip()))
        self.headers = dict(self.header_list)
        self.body = body

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __repr__(self):
        return "<Response %d %r body=%d bytes>" % (self.status, self.head[:300], len(self.body))


class Client:
    """A raw-socket HTTP client on one connection, for keep-alive, pipelining and abuse.
    Every socket operation has a timeout."""

    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.timeout = timeout
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        """Reads more bytes into the buffer; False when the peer closed (or reset)."""
        try:
            b = self.sock.recv(65536)
        except ConnectionResetError:
            return False
        if not b:
            return False
        self.buf += b
        return True

    def _need(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise AssertionError("connection closed after %d of %d bytes" % (len(self.buf), n))

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise AssertionError("connection closed before a full response head; got %r"
                                     % self.buf[:300])
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head

    def read_response(self, head_request=False):
        """Reads one response; the body is delimited by Content-Length, chunked coding or close.
        A 1xx, 204, 304 or a response to HEAD (|head_request|) has no body."""
        r = Response(self.read_head(), b"")
        if head_request or r.status < 200 or r.status in (204, 304):
            return r
        if "chunked" in r.header("transfer-encoding", "").lower():
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    if not self._fill():
                        raise AssertionError("connection closed inside a chunk size")
                line, _, self.buf = self.buf.partition(b"\r\n")
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while not self.buf.startswith(b"\r\n") and b"\r\n\r\n" not in self.buf:
                        if not self._fill():
                            break
                    self.buf = self.buf.split(b"\r\n", 1)[1] if self.buf.startswith(b"\r\n") \
                        else self.buf.partition(b"\r\n\r\n")[2]
                    break
                self._need(size + 2)
                body += self.buf[:size]
                self.buf = self.buf[size + 2:]
            r.body = body
        elif r.header("content-length") is not None:
            n = int(r.header("content-length"))
            self._need(n)
            r.body, self.buf = self.buf[:n], self.buf[n:]
        else:
            while self._fill():
                pass
            r.body, self.buf = self.buf, b""
        return r

    def request(self, data, head_request=False):
        self.send(data)
        return self.read_response(head_request)

    def closed_within(self, timeout):
        """True when the server closes the connection (EOF or reset) within |timeout| seconds,
        discarding any bytes that arrive first; False if it is still open then."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                b = self.sock.recv(65536)
            except socket.timeout:
                return False
            except ConnectionResetError:
                return True
            finally:
                self.sock.settimeout(self.timeout)
            if not b:
                return True
            self.buf += b

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def get(port, path="/", host="localhost", headers="", method="GET", timeout=5.0):
    """One request with `Connection: close` on a fresh connection; returns the Response."""
    with Client(port, timeout) as c:
        return c.request(("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n"
                          % (method, path, host, headers)).encode("latin-1"),
                         head_request=(method == "HEAD"))


class ServerTestCase(unittest.TestCase):
    """A test case whose servers are stopped and cleaned up after each test."""

    def setUp(self):
        self.servers = []

    def server(self, *args, **kwargs):
        s = Server(*args, **kwargs)
        self.servers.append(s)
        return s

    def tearDown(self):
        errors = []
        for s in self.servers:
            try:
                s.stop()
            except AssertionError as e:
                errors.append(str(e))
            s.cleanup()
        if errors:
            self.fail("\n".join(errors))
