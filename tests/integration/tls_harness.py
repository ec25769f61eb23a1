"""Helpers for the TLS integration tests: test certificates made with `openssl req` in a temporary
directory (none are committed), TLS clients (Python's ssl module, `openssl s_client`), a
metrics scrape over TLS and the wrk runner."""

import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import time

from harness import Client

TLS_TIMEOUT = 10


def _openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)


class Certs:
    """Self-signed test certificates and keys (absolute paths; keys mode 0600):
    rsa_* (CN=localhost, RSA-2048), ec_* (CN=localhost, P-256), a_* (CN=a.test), b_* (CN=b.test)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="accelgate-certs-")
        try:
            self.rsa_cert, self.rsa_key = self._make("rsa", "localhost", ["-newkey", "rsa:2048"])
            self.ec_cert, self.ec_key = self._make(
                "ec", "localhost", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
            self.a_cert, self.a_key = self._make("a", "a.test", ["-newkey", "rsa:2048"])
            self.b_cert, self.b_key = self._make("b", "b.test", ["-newkey", "rsa:2048"])
        except BaseException:
            self.cleanup()
            raise

    def _make(self, name, cn, newkey):
        cert = os.path.join(self.dir, name + ".crt")
        key = os.path.join(self.dir, name + ".key")
        _openssl("req", "-x509", *newkey, "-nodes", "-keyout", key, "-out", cert,
                 "-days", "2", "-subj", "/CN=" + cn)
        os.chmod(key, 0o600)
        return cert, key

    def path(self, name):
        return os.path.join(self.dir, name)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def ssl_lines(certs, rsa=True, ec=False):
    """The ssl_certificate/ssl_certificate_key lines for the localhost certificates."""
    lines = ""
    if rsa:
        lines += "ssl_certificate %s; ssl_certificate_key %s;\n" % (certs.rsa_cert, certs.rsa_key)
    if ec:
        lines += "ssl_certificate %s; ssl_certificate_key %s;\n" % (certs.ec_cert, certs.ec_key)
    return lines


def tls_server(certs, extra="", rsa=True, ec=False, port="{port}", server_name="localhost"):
    """One `server` block listening with ssl on |port|, serving html/ and /metrics."""
    return """
    server {
        listen 127.0.0.1:%s ssl;
        server_name %s;
        root html;
        %s
        %s
        location = /metrics { metrics; }
    }
""" % (port, server_name, ssl_lines(certs, rsa, ec), extra)


def client_context(**kwargs):
    """An SSLContext that trusts anything (the certificates are self-signed)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    for name, value in kwargs.items():
        setattr(ctx, name, value)
    return ctx


class TlsClient(Client):
    """harness.Client over TLS (Python's ssl module); every operation has a timeout."""

    def __init__(self, port, timeout=5.0, server_hostname=None, context=None):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        try:
            ctx = context or client_context()
            self.sock = ctx.wrap_socket(raw, server_hostname=server_hostname)
        except BaseException:
            raw.close()
            raise
        self.timeout = timeout
        self.buf = b""

    def _fill(self):
        try:
            b = self.sock.recv(65536)
        except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            return False
        if not b:
            return False
        self.buf += b
        return True


def tcp_segments_in(sock):
    """(segments, data segments) |sock| has received so far: tcpi_segs_in and tcpi_data_segs_in
    of Linux's struct tcp_info (offsets 140 and 152, there since Linux 4.6)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 160)
    return struct.unpack_from("I", info, 140)[0], struct.unpack_from("I", info, 152)[0]


def tls_get(port, path="/", host="localhost", method="GET", headers="", timeout=5.0, **kwargs):
    """One request with `Connection: close` over a fresh TLS connection; returns the Response."""
    with TlsClient(port, timeout, **kwargs) as c:
        return c.request(("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n"
                          % (method, path, host, headers)).encode("latin-1"),
                         head_request=(method == "HEAD"))


def s_client(port, *args, request=True, timeout=TLS_TIMEOUT):
    """Runs `openssl s_client -connect 127.0.0.1:PORT ARGS`; with |request| it sends a GET with
    `Connection: close` and reads until the server closes (-ign_eof), so that TLS 1.3 session
    tickets arrive before it exits. Returns (exit code, stdout+stderr text)."""
    data = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" if request else b""
    argv = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port]
    if request:
        argv.append("-ign_eof")
    p = subprocess.run(argv + list(args), input=data, capture_output=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def field(output, pattern):
    """The first group of regex |pattern| in |output|, or None."""
    m = re.search(pattern, output, re.M)
    return m.group(1) if m else None


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def scrape(port, **kwargs):
    """{(name, labels text): value} from /metrics over TLS."""
    r = tls_get(port, "/metrics", **kwargs)
    assert r.status == 200, r
    samples = {}
    for line in r.body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "malformed metrics line: %r" % line
        samples[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return samples


def handshakes(samples, version, resumed):
    return samples.get(("accelgate_tls_handshakes_total",
                        '{version="%s",resumed="%s"}' % (version, resumed)), 0)


def handshake_errors(samples, reason):
    return samples.get(("accelgate_tls_handshake_errors_total", '{reason="%s"}' % reason), 0)


def wrk(url, connections=20, duration=3, timeout=60):
    """Runs wrk with `Connection: close` (every request a full handshake); returns
    (requests, socket errors dict, output)."""
    p = subprocess.run(["wrk", "-t1", "-c%d" % connections, "-d%ds" % duration,
                        "-H", "Connection: close", url],
                       capture_output=True, timeout=timeout)
    out = (p.stdout + p.stderr).decode(errors="replace")
    m = re.search(r"(\d+) requests in", out)
    requests = int(m.group(1)) if m else 0
    errors = {}
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors = {k: int(v) for k, v in zip(("connect", "read", "write", "timeout"), m.groups())}
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors["non2xx"] = int(m.group(1))
    return requests, errors, out


def client_hello(**kwargs):
    """The bytes of a real ClientHello (Python's ssl module over memory BIOs), to send on a
    plain socket: the handshake can never finish on the client's side."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = client_context(**kwargs).wrap_bio(incoming, outgoing)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def hello_then_close(port, reset=False, wait=0.05, **kwargs):
    """Sends a real ClientHello, waits |wait| seconds and closes (FIN, or RST with |reset|)
    before the handshake can finish."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        if reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.sendall(client_hello(**kwargs))
        time.sleep(wait)
