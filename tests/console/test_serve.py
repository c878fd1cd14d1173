"""`optseq serve` for real: the server as a subprocess, plain HTTP for the token and Origin checks, and a
headless chromium (driven over the DevTools protocol) that loads the printed URL and shows the lever table."""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from tests.conftest import DEFAULT_PLAN, OPTSEQ

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRE_BROWSER = os.environ.get("OPTSEQ_REQUIRE_BROWSER") == "1"
CEILING_S = 120.0
"""How long a wait for the server, the browser or the screen may take before the test calls it a hang:
only a guard, never a budget."""
SEED_LEVERS = ("julia_port", "port", "cython_bot", "option_b", "model_size", "amp", "compile", "tensorrt",
               "option_a")
EVIL = "http://evil.example"


def wait_until(what: str, check, timeout: float = CEILING_S, poll: float = 0.05):
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not after {timeout:g} s")
        time.sleep(poll)


@dataclass
class Served:
    url: str
    """The printed URL, token and all."""
    base: str
    proc: subprocess.Popen
    stderr: Path

    @property
    def token(self) -> str:
        return self.url.split("?token=", 1)[1]


@pytest.fixture
def served(tmp_path):
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    env = {**os.environ, "TEXTUAL_ANIMATIONS": "none"}
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        # its own session: the tabs' consoles are its children, and the test checks they all end with it
        proc = subprocess.Popen([*OPTSEQ, "--plan", str(DEFAULT_PLAN), "--db", str(tmp_path / "state"),
                                 "serve", "--port", "0"], stdout=stdout, stderr=stderr, cwd=tmp_path, env=env,
                                start_new_session=True)
    try:
        def url_line():
            if proc.poll() is not None:
                raise AssertionError(f"optseq serve exited {proc.returncode}: {err.read_text()}")
            text = out.read_text()
            return text.split("\n", 1)[0] if "\n" in text else None

        url = wait_until("optseq serve's URL line", url_line)
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, url
        yield Served(url, url.split("/?token=", 1)[0], proc, err)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=CEILING_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    assert proc.returncode == 0, err.read_text()

    def group_gone():
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until("the tabs' consoles ending with the server", group_gone)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.mark.slow
def test_every_request_needs_the_token_and_a_foreign_origin_is_refused(served):
    base, token = served.base, served.token
    assert get(base + "/")[0] == 403
    assert get(base + "/?token=" + token[:-1] + "x")[0] == 403
    assert get(base + "/static/js/textual.js")[0] == 403
    assert get(base + "/ws")[0] == 403
    # the token does not let another site's page in
    assert get(served.url, {"Origin": EVIL})[0] == 403
    assert get(served.url, {"Origin": "null"})[0] == 403

    code, headers, body = get(served.url)
    assert code == 200 and b"data-session-websocket-url" in body
    cookie = headers["Set-Cookie"]
    assert token in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
    assert headers["Referrer-Policy"] == "no-referrer"
    assert get(served.url, {"Origin": served.base})[0] == 200
    # the page's own requests carry the cookie, not the token
    jar = cookie.split(";", 1)[0]
    assert get(base + "/static/js/textual.js", {"Cookie": jar})[0] == 200
    assert get(base + "/static/js/textual.js", {"Cookie": jar, "Origin": EVIL})[0] == 403

    # the websocket is what drives a console: its upgrade is checked the same way
    async def upgrade(headers: dict[str, str]) -> int:
        import aiohttp

        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(base.replace("http", "ws", 1) + "/ws", headers=headers):
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status

    assert asyncio.run(upgrade({"Origin": served.base})) == 403
    assert asyncio.run(upgrade({"Cookie": jar, "Origin": EVIL})) == 403


def raw_request(base: str, line: bytes, headers: bytes = b"") -> bytes:
    """One HTTP/1.1 request sent as bytes, and the status line of the answer (b"" when the server closed)."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(line + b"\r\nHost: " + host.encode() + b"\r\n" + headers + b"Connection: close\r\n\r\n")
        return conn.makefile("rb").readline().strip()


@pytest.mark.slow
def test_odd_requests_get_a_4xx_at_once_and_nothing_leaks_the_token(served):
    base, token = served.base, served.token
    jar = f"optseq_serve_{base.rsplit(':', 1)[1]}={token}"
    # a plain GET on the websocket's path, with the cookie: answered, not left waiting for a handshake
    status, _, body = get(base + "/ws", {"Cookie": jar})
    assert status == 400 and b"websocket upgrade only" in body
    # localhost and 127.0.0.1 are this server's own origin alike
    port = base.rsplit(":", 1)[1]
    assert get(served.url, {"Origin": f"http://localhost:{port}"})[0] == 200
    assert get(served.url, {"Origin": f"http://localhost:{int(port) + 1}"})[0] == 403
    # over-long request lines and headers from a stranger: a 4xx each, one log line at most
    for _ in range(3):
        assert raw_request(base, b"GET /?" + b"a" * 20000 + b" HTTP/1.1").split(b" ")[1].startswith(b"4")
    assert raw_request(base, b"GET / HTTP/1.1", b"X-Big: " + b"b" * 20000 + b"\r\n").split(b" ")[1].startswith(b"4")
    assert raw_request(base, b"NOT-HTTP").split(b" ")[1].startswith(b"4")
    served.proc.send_signal(signal.SIGTERM)
    served.proc.wait(timeout=CEILING_S)
    log = served.stderr.read_text(errors="replace")
    assert token not in log and token[:12] not in log, log
    assert "Traceback" not in log and len(log.splitlines()) <= 10, log


# -- the page asks nothing of another machine --------------------------------------------------------

REFERENCE = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']|url\(\s*["']?([^"')\s]+)"""
                       r"""|@import\s+["']([^"']+)|\bfetch\(\s*["'`]([^"'`]+)|\bWebSocket\(\s*["'`]([^"'`]+)"""
                       r"""|\bdata-[\w-]*url\s*=\s*["']([^"']+)""")
"""Where a page or its styles and scripts name a URL to load."""
ABSOLUTE = re.compile(r"(?:\b[a-z][a-z0-9+.-]*:)?//[\w-]+(?:\.[\w-]+)*", re.I)
"""A URL with a host in it, anywhere (a string a script builds a request from, a style's url(), ...)."""
COMMENTS = re.compile(r"<!--.*?-->|/\*.*?\*/", re.S)


def references(text: str) -> list[str]:
    return [next(g for g in match.groups() if g is not None) for match in REFERENCE.finditer(text)]


@pytest.mark.slow
def test_the_page_and_what_it_loads_name_no_other_machine(served):
    """Every URL the page names (its styles, script, fonts, and what those name in turn) is on this server,
    and no host appears in them at all: an offline machine's browser waited for the outside font host
    textual-serve's own page asks, before the console could start."""
    code, headers, body = get(served.url)
    assert code == 200
    jar = headers["Set-Cookie"].split(";", 1)[0]
    page = body.decode()
    # the console is focused once it has drawn: keys work without a click (the browser test shows it does)
    assert "-first-byte" in page and ".xterm-helper-textarea" in page and ".focus()" in page
    # the websocket is this server as the browser reached it, and the fonts are Roboto Mono from this server
    # with a CJK fallback of the browser's own
    assert 'location.host + "/ws"' in page and 'data-session-websocket-url=""' in page
    assert 'local("Noto Sans Mono CJK KR")' in page and "unicode-range" in page

    loaded, queue = {}, [(served.url, page)]
    while queue:
        url, text = queue.pop()
        hosts = ABSOLUTE.findall(COMMENTS.sub("", text) if not url.endswith(".js") else text)
        assert not hosts, f"{url} names a host: {hosts[:5]}"
        for ref in references(text):
            target = urlsplit(urljoin(url, ref))
            if target.scheme == "data":
                continue
            assert (target.scheme, target.netloc) == ("http", urlsplit(served.base).netloc), f"{url}: {ref}"
            if target.geturl() in loaded:
                continue
            status, _, content = get(target.geturl(), {"Cookie": jar})
            assert status == 200, f"{url}: {ref} answers {status}"
            loaded[target.geturl()] = content
            if target.path.endswith((".css", ".js")):
                queue.append((target.geturl(), content.decode()))
    assert sorted(urlsplit(url).path for url in loaded) == [
        "/static/css/xterm.css", "/static/fonts/RobotoMono-Italic-VariableFont_wght.ttf",
        "/static/fonts/RobotoMono-VariableFont_wght.ttf", "/static/js/textual.js"]

    # and the browser is told to load nothing from elsewhere, whatever a later textual-serve's script asks
    port = urlsplit(served.base).port
    own = {"'self'", "'unsafe-inline'", "'none'", "data:", f"ws://127.0.0.1:{port}", f"ws://localhost:{port}"}
    policy = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'self'" and policy["frame-ancestors"] == "'none'", policy
    for directive, sources in policy.items():
        assert set(sources.split()) <= own, (directive, sources)


# -- a real browser ----------------------------------------------------------------------------------

# textual-serve's page draws the terminal with xterm.js on a canvas (WebGL or 2D), so no text reaches the DOM
# and the page keeps its Terminal in a closure. Before the page's script runs, this catches the Terminal
# when the page assigns it (`this.terminal = new Terminal(...)`), so the test can read xterm's own screen
# buffer: what is drawn, row by row.
CATCH_TERMINAL = """
window.__terminals = [];
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
    window.__terminals.push(value);
  },
});
"""
SCREEN = """(() => {
  const term = (window.__terminals || []).find(t => t && t.buffer && t.buffer.active);
  if (!term) return "";
  const buffer = term.buffer.active, rows = [];
  for (let y = 0; y < term.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
})()"""


KEPT_EVENTS = ("Network.requestWillBeSent", "Network.webSocketCreated", "Log.entryAdded")


class DevTools:
    """One page of a headless chromium, over the DevTools protocol's websocket."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0
        self.events: list[dict] = []
        """The requests and log entries that came while a call waited for its answer (all of them, once a later
        call returns); the rest (the websocket's frames, ...) are let go."""

    async def call(self, method: str, **params):
        self.next_id += 1
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        async with asyncio.timeout(CEILING_S):
            while True:
                message = await self.ws.receive_json()
                if message.get("method") in KEPT_EVENTS:
                    self.events.append(message)
                if message.get("id") == self.next_id:
                    if "error" in message:
                        raise AssertionError(f"{method}: {message['error']}")
                    return message["result"]

    def requested(self) -> list[str]:
        """Every URL the page asked for so far: its own load, its styles, scripts and fonts, its websocket."""
        return [event["params"]["request"]["url"] if event["method"] == "Network.requestWillBeSent"
                else event["params"]["url"] for event in self.events
                if event["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated")]

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def wait_for(self, what: str, expression: str, timeout: float = CEILING_S) -> str:
        """Poll `expression` (a string) until `what` is in it."""
        end = time.monotonic() + timeout
        while True:
            value = await self.evaluate(expression) or ""
            if what in value:
                return value
            if time.monotonic() > end:
                raise AssertionError(f"{what!r} not on the page after {timeout:g} s:\n{value}")
            await asyncio.sleep(0.1)


def chromium_args(profile: Path) -> list[str]:
    args = [CHROMIUM, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
            "--no-first-run", "--no-default-browser-check", "--window-size=1280,900",
            # no name resolves but 127.0.0.1 and localhost: a page that asked another machine would fail at once
            # here (and the test's request log says so) rather than wait on the network
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # chromium's sandbox refuses root (a container, CI)
    return args + ["about:blank"]


@contextlib.asynccontextmanager
async def chromium(profile: Path):
    """A headless chromium; yields `open_page(url)`, which loads a URL in a new tab and returns its DevTools."""
    import aiohttp

    browser = subprocess.Popen(chromium_args(profile), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"

        def devtools_port():
            if browser.poll() is not None:
                raise AssertionError(f"chromium exited {browser.returncode}")
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            return lines[0] if len(lines) >= 2 else None

        port = await asyncio.to_thread(wait_until, "chromium's DevToolsActivePort", devtools_port)
        async with aiohttp.ClientSession() as session, contextlib.AsyncExitStack() as pages:
            async def open_page(url: str) -> DevTools:
                async with session.put(f"http://127.0.0.1:{port}/json/new?about:blank") as response:
                    target = await response.json(content_type=None)
                ws = await pages.enter_async_context(session.ws_connect(target["webSocketDebuggerUrl"],
                                                                        max_msg_size=0))
                tools = DevTools(ws)
                await tools.call("Page.enable")
                await tools.call("Network.enable")
                await tools.call("Log.enable")
                # as a tab the user looks at: a headless tab is not focused, and a page's focus() on an element
                # of an unfocused tab waits (no focus event) until the tab is
                await tools.call("Emulation.setFocusEmulationEnabled", enabled=True)
                await tools.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
                await tools.call("Page.navigate", url=url)
                return tools

            yield open_page
    finally:
        os.killpg(browser.pid, signal.SIGKILL)
        browser.wait(timeout=CEILING_S)


def lever_rows(screen: str) -> list[str]:
    lines = screen.splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:1] == [SEED_LEVERS[0]])
    return [line.split()[0] for line in lines[first:first + len(SEED_LEVERS)]]


def cjk_font_named_by(page: str) -> str | None:
    """A CJK font this machine has that the page's fallback face names (fontconfig's full or PostScript
    name, what chromium matches local() against on Linux), or None."""
    if shutil.which("fc-list") is None:
        return None
    names = set(re.findall(r'local\("([^"]+)"\)', page))
    listed = subprocess.run(["fc-list", ":", "fullname", "postscriptname"], capture_output=True, text=True,
                            timeout=60).stdout
    found = {value for line in listed.splitlines() for field in line.split(":") if "=" in field
             for value in field.split("=", 1)[1].split(",")} & names
    return min(found) if found else None


FACES = """[...document.fonts].filter(f => %s).map(f => f.status).join(" ")"""
ROBOTO_FACES = FACES % 'f.unicodeRange === "U+0-10FFFF"'
"""Roboto Mono and its italic, from this server."""
CJK_FACES = FACES % 'f.unicodeRange.includes("U+AC00")'
"""The face that takes Hangul (and the rest of CJK) from a font of the browser's machine."""


@pytest.mark.slow
def test_the_page_shows_the_lever_table_in_a_real_browser(served, tmp_path):
    if CHROMIUM is None:
        if REQUIRE_BROWSER:
            pytest.fail("OPTSEQ_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("needs chromium (Debian: apt-get install chromium); OPTSEQ_REQUIRE_BROWSER=1 makes this fail")
    profile = tmp_path / "chromium"
    profile.mkdir()

    async def scenario():
        async with chromium(profile) as open_page:
            # the second as localhost: the same server, and its page must ask for everything there (where the
            # browser keeps its cookie), not at the 127.0.0.1 the server printed
            first, second = await open_page(served.url), await open_page(served.url.replace("127.0.0.1", "localhost"))
            page_text = get(served.url)[2].decode()
            # the status line is drawn last: the table above it is complete by then
            for page in (first, second):
                screen = await page.wait_for("next: nothing to run", SCREEN)
                assert lever_rows(screen) == list(SEED_LEVERS), screen
                assert "adopted" in screen and "read-only" not in screen, screen
            # nothing clicked: the page focused the terminal once the console had drawn, and the console knows
            # (it draws its key footer only while it has focus; textual starts a browser's console unfocused)
            for page in (first, second):
                assert await page.evaluate("document.activeElement.className") == "xterm-helper-textarea"
                await page.wait_for("? Help q Quit", SCREEN)
            # the terminal keeps each glyph as first drawn: its faces were loaded before it was made
            assert await first.evaluate(ROBOTO_FACES) == "loaded loaded"
            # the Korean in the plan's titles: the CJK face of "Roboto Mono" is this machine's CJK font, if it
            # has one the page names (Debian: fonts-noto-cjk); the page loaded it before making the terminal
            if cjk_font_named_by(page_text) is not None:
                assert await first.evaluate(CJK_FACES) == "loaded", cjk_font_named_by(page_text)
            # keys typed into one tab reach that tab's console only
            await first.call("Input.dispatchKeyEvent", type="keyDown", key="2", code="Digit2", text="2",
                             windowsVirtualKeyCode=50)
            await first.call("Input.dispatchKeyEvent", type="keyUp", key="2", code="Digit2", windowsVirtualKeyCode=50)
            await first.wait_for("NO-GO → option_b [blocked]", SCREEN)
            assert "NO-GO → option_b" not in await second.evaluate(SCREEN)
            # every request each page made was to this server (page, styles, script, fonts, websocket), and the
            # page's own Content-Security-Policy refused nothing it needs
            port = urlsplit(served.base).port
            for page, server in ((first, f"127.0.0.1:{port}"), (second, f"localhost:{port}")):
                requested = page.requested()
                assert any(url.startswith("ws://") for url in requested), requested
                assert all(urlsplit(url).netloc == server for url in requested if not url.startswith("data:")), \
                    requested
                refused = [event["params"]["entry"]["text"] for event in page.events
                           if event["method"] == "Log.entryAdded" and "Content Security Policy" in
                           event["params"]["entry"]["text"]]
                assert not refused, refused
            # stopping the server ends each tab's session (its page says so) rather than cutting it off
            served.proc.send_signal(signal.SIGTERM)
            for page in (first, second):
                await page.wait_for("-closed", "document.body.className")

    asyncio.run(scenario())


def test_a_host_others_can_reach_needs_public(cli_env):
    for host, fragment in (("192.0.2.1", "not a loopback address"), ("0.0.0.0", "give the address")):
        proc = subprocess.run([*OPTSEQ, "serve", "--host", host, "--port", "0"], env=cli_env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
        assert fragment in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_a_port_in_use_is_one_line(cli_env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([*OPTSEQ, "serve", "--port", str(port)], env=cli_env, capture_output=True,
                              text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    assert proc.stderr == f"optseq: port {port} on 127.0.0.1 is in use; give --port another, or 0 for any " \
                          "free port\n"


@pytest.mark.slow
def test_a_silent_half_open_request_is_dropped_within_its_timeout(served):
    """Half a request's headers, then silence: the server closes the connection once IDLE_S has passed (it reads
    b"" then), where it used to hold it for 75 s; a whole request on another connection is answered meanwhile."""
    from optseq.console.tui.serve import IDLE_S

    host, port = served.base.removeprefix("http://").rsplit(":", 1)
    started = time.monotonic()  # before the server's timer can start: IDLE_S is a lower bound from here
    # what a guard allows: a loaded machine fires the server's timer late, never 12 times late
    silent = [socket.create_connection((host, int(port)), timeout=12 * IDLE_S) for _ in range(20)]
    try:
        for conn in silent:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: " + host.encode() + b"\r\n")  # no blank line: never whole
        assert raw_request(served.base, b"GET /?token=" + served.token.encode() + b" HTTP/1.1").startswith(
            b"HTTP/1.1 ")
        for conn in silent:
            assert conn.recv(1) == b""  # closed by the server (a socket timeout fails the test)
        assert time.monotonic() - started >= IDLE_S  # not dropped before a browser could send its headers
    finally:
        for conn in silent:
            conn.close()



def _sockets_held(pid: int) -> int:
    held = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            held += os.readlink(fd).startswith("socket:")
        except OSError:
            pass  # closed while we looked
    return held


@pytest.mark.slow
def test_the_connections_it_holds_are_bounded(served):
    """300 connections opened and left silent, as a stranger who can reach the port but has no token might: the
    server never holds more than MAX_CONNECTIONS of them (each one past the bound is answered 503 at once and
    closed; each one it took is closed by its idle timer), and a whole request is answered afterwards."""
    import select

    from optseq.console.tui.serve import ACCEPT_BATCH, MAX_CONNECTIONS

    host, port = served.base.removeprefix("http://").rsplit(":", 1)
    opened = [socket.create_connection((host, int(port)), timeout=60) for _ in range(300)]
    fates: dict[socket.socket, bytes] = {}
    most = 0
    try:
        end = time.monotonic() + CEILING_S  # a guard against a hang, never a budget
        while len(fates) < len(opened):
            assert time.monotonic() < end, f"{len(opened) - len(fates)} connections neither refused nor dropped"
            most = max(most, _sockets_held(served.proc.pid))
            waiting = [c for c in opened if c not in fates]
            for conn in select.select(waiting, [], [], 0.05)[0]:
                fates[conn] = conn.makefile("rb").readline().strip()  # b"": dropped by the idle timer
    finally:
        for conn in opened:
            conn.close()
    assert set(fates.values()) <= {b"", b"HTTP/1.1 503 Service Unavailable"}, set(fates.values())
    assert b"HTTP/1.1 503 Service Unavailable" in fates.values()
    # + refusals not yet closed: asyncio closes a batch's a loop turn after it accepts them, by when it may have
    # accepted the next batch (how the client's and the server's turns interleave is the machine's, so two
    # batches are allowed), the listening socket and the loop's own
    assert most <= MAX_CONNECTIONS + 2 * ACCEPT_BATCH + 8, most
    assert raw_request(served.base, b"GET /?token=" + served.token.encode() + b" HTTP/1.1").startswith(
        b"HTTP/1.1 200")
