"""Helpers for the gzip integration tests: web-like test files made in the test (HTML, CSS, JS,
JSON and binary, deterministic), checks that a body is exactly one gzip member that inflates to
the expected bytes (Python's zlib, and `gzip -t`), and a metrics scrape."""

import os
import random
import re
import subprocess
import tempfile
import zlib

from harness import get

WORDS = ["alpha", "beta", "gamma", "delta", "header", "footer", "main", "button", "active",
         "value", "item", "list", "title", "color", "margin", "0px", "true", "null"]


def make_content(kind, size, seed=1):
    """|size| bytes of kind html, css, js, json or binary."""
    rng = random.Random("%s-%d-%d" % (kind, size, seed))
    if kind == "binary":
        return rng.randbytes(size)
    parts = []
    total = 0
    while total < size:
        w1, w2, n = rng.choice(WORDS), rng.choice(WORDS), rng.randrange(100000)
        piece = {
            "html": '<div class="%s"><a href="/%s/%d.html">%s %s</a></div>\n' % (w1, w2, n, w1, w2),
            "css": ".%s-%s { margin: %dpx; color: #%d; }\n" % (w1, w2, n % 50, n),
            "js": "function %s%d(a, b) { return a.%s + b[%d]; }\n" % (w1, n, w2, n % 17),
            "json": '{"%s": %d, "%s": "%s", "list": [%d]},\n' % (w1, n, w2, w1, n % 9),
        }[kind]
        parts.append(piece)
        total += len(piece)
    return "".join(parts).encode()[:size]


def gunzip_exact(body):
    """The bytes |body| inflates to; raises unless it is exactly one complete gzip member."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(body) + d.flush()
    if not d.eof:
        raise AssertionError("gzip stream is truncated (%d bytes)" % len(body))
    if d.unused_data:
        raise AssertionError("%d bytes after the gzip stream" % len(d.unused_data))
    return out


def gzip_t(body):
    """`gzip -t` on |body|: (exit code, stderr)."""
    with tempfile.NamedTemporaryFile(suffix=".gz", delete=False) as f:
        f.write(body)
        name = f.name
    try:
        p = subprocess.run(["gzip", "-t", name], capture_output=True, timeout=60)
        return p.returncode, p.stderr.decode(errors="replace")
    finally:
        os.unlink(name)


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def metrics(port):
    """{"name{labels}": value} from /metrics."""
    r = get(port, "/metrics")
    assert r.status == 200, r
    out = {}
    for line in r.body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
