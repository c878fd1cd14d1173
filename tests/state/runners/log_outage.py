"""A fault in front of a real Ray dashboard: every request passes through to it, except a job's logs.

Ray's dashboard serves a job's logs from the node that ran it; with that node's agent gone it answers
500 while the job's status is still known. This proxy makes that state on demand, for the real cluster.
"""
from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOGS = re.compile(r"^/api/jobs/[^/]+/logs(/tail)?/?(\?.*)?$")
HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "host", "content-length"}


class LogOutage:
    """`address` is the proxy's; `refused` counts the log requests answered 500."""

    def __init__(self, target: str):
        parts = urlsplit(target)
        self.target = (parts.hostname, parts.port)
        self.refused = 0
        outage = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # the test's output stays the test's
                pass

            def _relay(self):
                if LOGS.match(self.path):
                    outage.refused += 1
                    body = b"log outage: the node that ran this job cannot be reached"
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(body)
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(*outage.target, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body,
                                 headers={k: v for k, v in self.headers.items() if k.lower() not in HOP})
                    reply = conn.getresponse()
                    data = reply.read()
                finally:
                    conn.close()
                self.send_response(reply.status, reply.reason)
                for key, value in reply.getheaders():
                    if key.lower() not in HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LogOutage:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
