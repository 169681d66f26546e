"""The console's browser tests: Debian's Chromium driven by Playwright, a ``/api`` prefix proxy
(API Gateway's stage prefix), and seeding through the API.

Chromium comes from the system (``apt-get install chromium``), never from ``playwright
install``. Without it the browser tests skip with a loud line, unless ``CAIRN_REQUIRE_BROWSER=1``
(CI), which turns the skip into a failure."""

from __future__ import annotations

import http.client
import os
import shutil
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pycrdt import Doc, Text

from .conftest import Http

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "console"
AXE = ROOT / "tests" / "node" / "node_modules" / "axe-core" / "axe.min.js"
SKIP_LINE = "BROWSER TESTS SKIPPED: install Debian's chromium (apt-get install chromium) and playwright to run them"
TIMEOUT_MS = 20_000  # a page's or an assertion's wait: generous, the machine may be busy (a cold index build)
HOP_HEADERS = ("content-length", "connection", "transfer-encoding", "keep-alive", "date", "server")


def chromium_path() -> str | None:
    """The system Chromium (``CAIRN_CHROMIUM`` overrides: a path that is not an executable file
    means none), or None."""
    override = os.environ.get("CAIRN_CHROMIUM")
    if override:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser_or_skip():
    """``(playwright, browser)`` on the system Chromium; skips (fails under
    ``CAIRN_REQUIRE_BROWSER=1``) when Chromium or Playwright is missing."""
    path = chromium_path()
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -r requirements-dev.txt)"
    if reason is None and not path:
        reason = "no chromium on PATH"
    if reason is not None:
        if os.environ.get("CAIRN_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CAIRN_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(f"{SKIP_LINE} ({reason})")
    from playwright.sync_api import expect as _expect
    _expect.set_options(timeout=TIMEOUT_MS)
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-dev-shm-usage"])
    return pw, browser


def browser_skip_alarm(report: pytest.TestReport) -> str | None:
    """The run's closing alarm for a report that ``browser_or_skip`` skipped (its reason named),
    None for any other report."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return None
    message = str(report.longrepr[2]).removeprefix("Skipped: ")
    if not message.startswith(SKIP_LINE):
        return None
    return f"{message}; CAIRN_REQUIRE_BROWSER=1 turns this into a failure"


class PrefixProxy:
    """A small HTTP/1.1 proxy serving ``upstream`` under ``/api`` (``/api/console`` ->
    ``upstream/console``), as API Gateway's stage prefix does; anything else is 404."""

    def __init__(self, upstream: str) -> None:
        up = urlsplit(upstream)
        host, port = up.hostname, up.port

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if not (self.path == "/api" or self.path.startswith("/api/")):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                conn = http.client.HTTPConnection(host, port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path[len("/api"):] or "/", body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP_HEADERS:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api"

    def __enter__(self) -> PrefixProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def unique(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:8]


def ok(resp, *statuses: int):
    """The JSON body of ``resp``, asserting its status."""
    assert resp.status_code in (statuses or (200, 201)), (resp.status_code, resp.text[:500])
    return resp.json() if resp.content else None


def mint(http: Http, user_id: str | None, permissions: list[str], kind: str = "person", **kw) -> dict:
    """A new token through the API: the 201 body (``token`` holds the secret)."""
    body = {"kind": kind, "permissions": permissions, **kw}
    if user_id is not None:
        body["user_id"] = user_id
    return ok(http.post("/v1/api/admin/tokens", json=body), 201)


class TeamSeed:
    """A team space (DLP ``redact``) where ``alice`` writes drafts and ``bob`` reviews them."""

    def __init__(self, http: Http) -> None:
        self.http = http
        self.alice = mint(http, unique("alice-"), [])
        self.bob = mint(http, unique("bob-"), [])
        self.space = ok(http.post("/api/v1/context/spaces", json={"name": unique("Platform team "),
                                                                   "dlp_policy": "redact"}), 201)["id"]
        admin = ok(http.get("/v1/me"))  # the admin reads the space too (the views' screenshots)
        for who in (self.alice, self.bob, admin):
            ok(http.put(f"/api/v1/context/spaces/{self.space}/members/{who['user_id']}",
                        json={"permissions": ["context:space:read", "context:space:write"]}))

    def as_(self, who: dict) -> Http:
        return Http(self.http.base_url, who["token"])

    def draft(self, title: str, text: str) -> str:
        """A draft by alice holding ``text``: its id."""
        alice = self.as_(self.alice)
        eid = ok(alice.post("/api/v1/context/memory/entries",
                            json={"spaceId": self.space, "kind": "decision", "title": title}), 201)["id"]
        self.append(eid, text)
        return eid

    def append(self, eid: str, text: str, who: dict | None = None) -> None:
        """``text`` appended to the entry's document by ``who`` (alice), as a Yjs V1 update."""
        import base64
        client = self.as_(who or self.alice)
        snap = ok(client.get(f"/api/v1/context/memory/entries/{eid}"))["snapshot"]
        doc = Doc(client_id=int(uuid.uuid4().int % 2**31))
        content = doc.get("content", type=Text)
        doc.apply_update(base64.b64decode(snap))
        before = doc.get_state()
        content.insert(len(str(content)), text)
        update = doc.get_update(before)
        ok(client.post(f"/api/v1/context/memory/entries/{eid}/updates",
                       json={"updateId": uuid.uuid4().hex, "update": base64.b64encode(update).decode()}))


def expect(target):
    """Playwright's ``expect`` (imported here, so the module loads without Playwright and skips)."""
    from playwright.sync_api import expect as _expect
    return _expect(target)
