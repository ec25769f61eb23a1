"""Accepting connections: worker_connections is a limit (a full worker stops accepting and
resumes when a connection closes, losing none of the queued ones), and multi_accept on/off
both serve a burst of connections."""

import os
import socket
import threading
import time
import unittest

from harness import Client, ServerTestCase, wait_until

HTTP = """
    server {
        listen 127.0.0.1:{port};
        server_name localhost;
        location = /hello { return 200 "hello"; }
    }
"""

REQUEST = b"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"


def cpu_seconds(pid):
    """User + system CPU seconds of process |pid| so far, all threads (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class AcceptTest(ServerTestCase):
    def test_full_worker_pauses_and_resumes(self):
        s = self.server(HTTP, events="worker_connections 3;").start()
        held = [Client(s.port) for _ in range(3)]
        try:
            for c in held:
                self.assertEqual(c.request(REQUEST).status, 200)
            # A fourth client is queued by the kernel, not served, while three are open.
            waiting = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            waiting.sendall(REQUEST)
            waiting.settimeout(0.5)
            with self.assertRaises(socket.timeout):
                waiting.recv(100)
            self.assertTrue(wait_until(lambda: "worker_connections are not enough" in s.error_log()))
            # Paused means not listening: a level-triggered listener left in epoll would spin.
            before = cpu_seconds(s.proc.pid)
            time.sleep(1.0)
            self.assertLess(cpu_seconds(s.proc.pid) - before, 0.5, "the full worker spins")
            # One closes: the queued one is accepted and answered.
            held.pop().close()
            waiting.settimeout(5)
            self.assertIn(b"200 OK", waiting.recv(4096))
            waiting.close()
            # Still serving, and still within the limit, after the pause.
            for c in held:
                self.assertEqual(c.request(REQUEST).status, 200)
        finally:
            for c in held:
                c.close()

    def burst(self, multi_accept):
        s = self.server(HTTP, events="worker_connections 256; multi_accept %s;" % multi_accept)
        s.start()
        results = []
        lock = threading.Lock()

        def one():
            with Client(s.port) as c:
                status = c.request(REQUEST).status
            with lock:
                results.append(status)

        threads = [threading.Thread(target=one) for _ in range(60)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        self.assertEqual(results, [200] * 60)

    def test_multi_accept_off_serves_a_burst(self):
        self.burst("off")

    def test_multi_accept_on_serves_a_burst(self):
        self.burst("on")


if __name__ == "__main__":
    unittest.main()
