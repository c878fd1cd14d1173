"""`optseq serve`: the console in a browser, through textual-serve, behind a token and an Origin check.

textual-serve itself has no authentication and accepts a websocket from any Origin, so any web page
open in the user's browser could drive a console that launches lever runs. Here every request must
carry a random token (in the URL printed at start, then in a cookie the token-checked page load
sets), and a request whose Origin is not this server's own is refused. Each browser tab's websocket
starts its own console process on the same plan and store (`python -m optseq.console.tui.serve --tab`).

The page is our own template (serve_page.html beside this file), not textual-serve's: that one asks an
outside host for its font, and an offline machine's browser waited on it before starting the console. Ours
names nothing but this server (a Content-Security-Policy holds the browser to that) and gives the console
the keyboard once it has drawn.
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import ipaddress
import logging
import os
import secrets
import shlex
import signal
import socket
import sys
import weakref
from pathlib import Path

BAD_INPUT = 2
SHUTDOWN_S = 30.0
"""How long stopping the server waits for the tabs' consoles to quit: a console under a live run
takes up to its own 20 s to end the run (console/tui/app.py STOP_TIMEOUT_S) before it closes the store."""
IDLE_S = 5.0
"""How long a connection may sit without a whole request (half a request's headers, or nothing at all) before it
is closed: aiohttp's keep-alive timer runs from the connection's start, and closes one whose handler still waits
for a request. Silent half-open connections would otherwise hold descriptors for a minute and more each."""
MAX_CONNECTIONS = 64
"""Connections held at once; one more is answered 503 and closed. A tab holds its websocket and, for a moment,
a few for the page's files, so this is dozens of tabs, while anybody who can reach the port (no token is needed
to connect) cannot take the process's descriptors, which the tabs' consoles need for their pipes."""
ACCEPT_BATCH = 64
"""The listening socket's backlog, which is also how many connections asyncio accepts at once."""
_BUSY_TEXT = b"optseq serve: too many connections open\n"
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (
    len(_BUSY_TEXT), _BUSY_TEXT)
PAGE = "serve_page.html"
"""The page's template, beside this file: textual-serve's own, with every URL on this server, a local font with
a CJK fallback, and the console focused once it has drawn."""
COOKIE = "optseq_serve_{port}"
"""Cookies ignore ports: two servers on one host each need their own name, or one tab would log the
other out."""


class ServeError(Exception):
    """Bad input for `optseq serve` (a host it must not bind, a port in use): one line, exit 2."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origins_of(host: str, port: int) -> set[str]:
    """Every origin a browser may send for this server: on a loopback address, localhost and 127.0.0.1 (and
    [::1]) reach the same server, so a user who typed either is at home."""
    if not is_loopback(host):
        return {origin_of(host, port)}
    return {origin_of(name, port) for name in ("localhost", "127.0.0.1", "::1", host)}


class QuietLog(logging.Formatter):
    """A server log line: the message's first line, never a traceback (its locals held the Cookie header)."""

    def __init__(self, secret: str):
        super().__init__("optseq serve: %(levelname)s: %(message)s")
        self.secret = secret

    def format(self, record: logging.LogRecord) -> str:
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        text = super().format(record).splitlines()[0] if record.getMessage() else ""
        return text.replace(self.secret, "[token]") if self.secret else text


class TabGone(logging.Filter):
    """Drops textual-serve's error for a write to a tab's websocket that had already closed (its answer to the
    page's last ping, the tab being shut): the tab is gone and its console ends as usual; nothing went wrong."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else record.msg
        return not isinstance(error, ConnectionResetError)


def origin_of(host: str, port: int) -> str:
    """The origin a browser sends for pages of this server (what the Origin check compares with)."""
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    return f"http://{host}:{port}"


def bind(host: str, port: int, public: bool) -> socket.socket:
    """The listening socket, bound before anything is served: a bad host or a busy port is one line."""
    if not 0 <= port <= 65535:
        raise ServeError(f"--port {port}: expected 0 (any free port) to 65535")
    try:
        unspecified = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        unspecified = False
    if unspecified:
        # the printed URL and the Origin check need the one address the browser will use
        raise ServeError(f"--host {host}: give the address or name browsers will reach this machine by")
    if not public and not is_loopback(host):
        raise ServeError(f"--host {host} is not a loopback address: anyone who can reach it and learns the "
                         "URL drives the console (and its runs); add --public to mean it")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ServeError(f"--host {host}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} on {host} is in use; give --port another, or 0 for any free "
                             "port") from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def tab_command(plan_path: Path, db: Path) -> str:
    """The shell command textual-serve runs for each tab: this interpreter, the same plan and store.

    Absolute paths, so that a tab finds the plan and store whatever directory the server was started in."""
    argv = [sys.executable, "-m", "optseq.console.tui.serve", "--tab", "--plan", str(Path(plan_path).absolute()),
            "--db", str(Path(db).absolute())]
    return "exec " + shlex.join(argv)  # exec: the console is the tab's process, not a shell above it


def content_policy(own: set[str]) -> str:
    """What the browser may load for the page: this server only, so that no request leaves the machine
    whatever textual.js or a later textual-serve asks for, and no other site may frame the console."""
    # 'self' covers the websocket in browsers of CSP 3; the ws:// sources are for older ones (CSP has no way
    # to write an IPv6 address: [::1] is left to 'self')
    sockets = " ".join(sorted("ws" + origin.removeprefix("http") for origin in own if "[" not in origin))
    return ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            f"img-src 'self' data:; font-src 'self'; connect-src 'self' {sockets}; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'")


class _Busy(asyncio.Protocol):
    """The connection past MAX_CONNECTIONS: answered at once and closed, before aiohttp sees it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if isinstance(transport, asyncio.WriteTransport):  # a socket's always is
            transport.write(BUSY)
        transport.close()


class BoundedLoop(asyncio.SelectorEventLoop):
    """An event loop whose servers hold at most MAX_CONNECTIONS connections: aiohttp has no such bound.

    A connection is counted from its protocol's making (asyncio accepts up to a backlog of them in one go, and
    aiohttp counts one only once its `connection_made` has run) to the web.Server's `connection_lost` for it.
    The backlog is ACCEPT_BATCH, which bounds the descriptors a burst holds before its refusals are closed."""

    async def create_server(self, protocol_factory, *args, **kwargs):
        held: set = set()  # aiohttp's handlers take no weak reference
        lost = getattr(protocol_factory, "connection_lost", None)
        if lost is not None:  # aiohttp's web.Server: each handler tells it when its connection is gone
            def connection_lost(handler, exc=None):
                held.discard(handler)
                lost(handler, exc)

            protocol_factory.connection_lost = connection_lost

        def bounded():
            if len(held) >= MAX_CONNECTIONS:
                return _Busy()
            protocol = protocol_factory()
            held.add(protocol)
            return protocol

        kwargs["backlog"] = ACCEPT_BATCH
        return await super().create_server(bounded, *args, **kwargs)


def make_server(plan_path: Path, db: Path, sock: socket.socket, host: str, token: str):
    """textual-serve's Server, its aiohttp app wrapped in the token and Origin checks."""
    from aiohttp import WSCloseCode, web
    import aiohttp_jinja2
    from rich.console import Console
    from textual_serve.server import Server, to_int

    port = sock.getsockname()[1]
    origin = origin_of(host, port)
    own = origins_of(host, port)
    cookie = COOKIE.format(port=port)
    policy = content_policy(own)

    class GuardedServer(Server):
        def __init__(self) -> None:
            super().__init__(tab_command(plan_path, db), host=host, port=port, title="optseq", public_url=origin,
                             templates_path=Path(__file__).parent)
            self.console = Console(stderr=True)  # stdout carries the URL line only
            self._sockets: weakref.WeakSet = weakref.WeakSet()
            self._stopping = False

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.insert(0, guard)
            app.on_response_prepare.append(self._track)
            app.on_cleanup.append(self._reap)
            return app

        async def handle_index(self, request: web.Request) -> web.Response:
            size = to_int(request.query.get("fontsize", "16"), 16)
            return aiohttp_jinja2.render_template(PAGE, request, {"title": self.title, "font_size": size})

        async def _track(self, request: web.Request, response: web.StreamResponse) -> None:
            if isinstance(response, web.WebSocketResponse):
                self._sockets.add(response)

        async def on_startup(self, app: web.Application) -> None:
            pass  # the URL line is printed before serving; textual-serve's banner would print the URL bare

        async def on_shutdown(self, app: web.Application) -> None:
            # Closing each tab's websocket ends its message loop, and textual-serve then tells that
            # tab's console to quit and waits for it: the consoles close their stores before we exit.
            await asyncio.gather(*(ws.close(code=WSCloseCode.GOING_AWAY, message=b"optseq serve stopped")
                                   for ws in list(self._sockets)), return_exceptions=True)

        async def _reap(self, app: web.Application) -> None:
            # textual-serve stops waiting for a tab when its output ends, a moment before the console's
            # process has exited: wait for them all here, so `optseq serve` returns only once every tab
            # has closed its store, and asyncio reaps them while its loop still runs.
            if not hasattr(os, "waitid"):
                return
            end = asyncio.get_running_loop().time() + SHUTDOWN_S
            while asyncio.get_running_loop().time() < end:
                try:
                    # WNOWAIT: look without reaping; asyncio's child watcher reaps them
                    os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    return  # no child left
                await asyncio.sleep(0.02)

        def request_exit(self) -> None:
            if self._stopping:
                # a second GracefulExit would escape aiohttp's cleanup as exit status 1 and abandon the tabs
                print(f"optseq: stopping: waiting for the tabs' consoles to close (up to {SHUTDOWN_S:g} s)",
                      file=sys.stderr, flush=True)
                return
            self._stopping = True
            super().request_exit()

        asked_to_stop: list = []
        """Signals that came between the URL line and the loop's handlers: each one a stop, served at once."""

        def initialize_logging(self) -> None:
            # textual-serve's rich tracebacks show locals (a request's Cookie header: the token) and print ~50
            # lines for each bad request a stranger sends: one line each instead, warnings and up
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(QuietLog(token))
            handler.addFilter(TabGone())
            logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)

        def serve(self, debug: bool = False) -> None:
            self.initialize_logging()
            loop = BoundedLoop()
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            if self.asked_to_stop:
                loop.call_soon(self.request_exit)
            # access_log off: its request lines would print the token
            web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, print=None,
                        access_log=None, shutdown_timeout=SHUTDOWN_S, keepalive_timeout=IDLE_S)

    @web.middleware
    async def guard(request: web.Request, handler):
        sent_origin = request.headers.get("Origin")
        if sent_origin is not None and sent_origin not in own:
            raise web.HTTPForbidden(text=f"optseq serve: requests from {sent_origin} are refused (only {origin})\n")
        in_url = request.query.get("token")
        given = in_url if in_url is not None else request.cookies.get(cookie)
        if given is None or not secrets.compare_digest(given.encode(), token.encode()):
            raise web.HTTPForbidden(text="optseq serve: this needs the URL with ?token=... that optseq serve "
                                         "printed\n")
        if request.path == "/ws" and request.headers.get("Upgrade", "").lower() != "websocket":
            # textual-serve would wait on a handshake that never comes: a plain GET is answered at once
            raise web.HTTPBadRequest(text="optseq serve: /ws takes a websocket upgrade only\n")
        response = await handler(request)
        if in_url is not None and not response.prepared:
            # the page's own requests (its script, styles, the websocket) carry no token: the cookie does.
            # Strict keeps other sites' pages from sending it; a page on another port of this host is the
            # same site, and the Origin check above is what refuses that one.
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
        if not response.prepared:
            response.headers["Referrer-Policy"] = "no-referrer"  # the page's URL holds the token
            response.headers["Cache-Control"] = "no-store"
            response.headers["Content-Security-Policy"] = policy
        return response

    return GuardedServer()


def run_serve(plan_path: Path, db: Path, host: str, port: int, public: bool) -> int:
    """Check the plan and store, bind, print the URL (one line on stdout), serve until Ctrl+C."""
    from optseq.state.api import Sequencer

    try:
        sock = bind(host, port, public)
    except ServeError as exc:
        print(f"optseq: {exc}", file=sys.stderr)
        return BAD_INPUT
    try:
        # each tab opens them the same way: a bad plan or store is one line here, not a blank page per tab
        with Sequencer.open(plan_path, db, mode="auto") as seq:
            readonly = seq.readonly
        token = secrets.token_urlsafe(32)
        server = make_server(plan_path, db, sock, host, token)
    except BaseException:
        sock.close()
        raise
    # a stop that comes once the URL is out and before the server's own handlers is a stop, not a kill
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: server.asked_to_stop.append(True))
    print(f"{server.public_url}/?token={token}", flush=True)
    print(f"optseq: serving the console for {plan_path} on {server.public_url} (each browser tab runs its own "
          f"console{'; the store is read-only here' if readonly else ''}); Ctrl+C stops",
          file=sys.stderr, flush=True)
    server.serve()
    return 0


def tab_main(argv: list[str] | None = None) -> int:
    """One browser tab's console: textual-serve runs this with its web driver on stdin/stdout."""
    parser = argparse.ArgumentParser(prog="optseq-serve-tab")
    parser.add_argument("--tab", action="store_true", required=True)
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True)
    args = parser.parse_args(argv)
    from optseq.console.tui.app import make_app
    from optseq.state.api import PlanError
    from optseq.state.api import StoreError

    try:
        app = make_app(args.plan, args.db)
    except (PlanError, StoreError) as exc:
        print(f"optseq: {exc}", file=sys.stderr)  # textual-serve relays a tab's stderr to the server's log
        return BAD_INPUT
    app.run()
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(tab_main())
