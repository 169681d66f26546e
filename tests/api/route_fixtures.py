"""One request fixture per route and method of the app's route table, in one place.

``World(api)`` seeds an org through the API so that something stands behind every path parameter,
and plants a canary (``canary(org, *unit)``) in the data of every tenant unit it creates: banks,
structured-memory scopes, owners (sessions, workstreams, projects), team spaces (accepted and draft
entries), tokens (their labels) and hook sessions. ``ROUTES[(method, pattern)]`` names the variants
of each route: a builder ``world -> Call`` giving path parameters, query and body that a caller
with full rights in the world's org uses successfully (``Call.expect`` marks a probe whose intended
answer is a refusal). A builder for a route that consumes its target (a delete, an accept, a
restore) makes a fresh target each time it is called, so every caller meets an intact one.

``Call.touches`` names the units (relative to the caller's org; one starting with ``_system`` is
the system's own) a successful call may change besides the side units every call may touch (audit,
its own idempotency and rate rows, access counters and attributions of what it may read); ``None``
means any unit the caller may write.

``MCP_TOOLS[("MCP", tool)]`` does the same for every tool of the MCP registry
(``chalicelib.api.mcp_tools.TOOLS``): each variant is a JSON-RPC ``tools/call`` to ``POST /mcp``
whose ``touches`` are those of the REST fixture of the tool's operation. ``mcp_status`` gives the
status an answer of ``/mcp`` counts as (a tool's error result or a JSON-RPC error in a 200 counts as
the status of its stable code).

tests/api/test_edge_validation.py sends poison to the JSON bodies (and to each tool's
``arguments``); tests/api/test_isolation_matrix.py sends every variant with every kind of token.
Both fail when a route or a tool has no fixture here.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

FINALIZE_VIEWS = ("not_found", "method_not_allowed")  # the 404/405 answers finalize() adds
MEM = "/api/v1/context/memory"
MCP = "/mcp"
MCP_ROW = "MCP"  # the "method" of a tool's row: ("MCP", tool name)
SPACES = "/api/v1/context/spaces"
RW = ["context:space:read", "context:space:write"]
MAX_MS = 9_999_999_999_999

CANARY_RE = re.compile(r"zq[g-v]{10}")  # g-v: never hex, so no id, digest or fingerprint holds one


def canary(*unit: str) -> str:
    """The canary string of a tenant unit (``org, kind, *ids``): ``zq`` + 10 letters g-v."""
    h = hashlib.sha256("\x1f".join(unit).encode()).digest()
    return "zq" + "".join("ghijklmnopqrstuv"[b & 15] for b in h[:10])


def app_routes(app, methods: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """``(method, pattern)`` of every route of the app's route table (``methods`` only, when given),
    without the 404/405 answers ``finalize`` adds."""
    out = []
    for path, entries in app.routes.items():
        for method, entry in entries.items():
            if entry.view_function.__name__.startswith(FINALIZE_VIEWS):
                continue
            if methods is None or method in methods:
                out.append((method, path))
    return sorted(out)


def missing_fixtures(app, methods: tuple[str, ...] | None = None) -> tuple[set, set]:
    """``(routes without a fixture, fixtures of routes that no longer exist)``."""
    routes = set(app_routes(app, methods))
    fixtures = {r for r in ROUTES if methods is None or r[0] in methods}
    return routes - fixtures, fixtures - routes


@dataclass(frozen=True)
class Call:
    """One request: ``path`` (concrete), ``query``, a JSON ``body`` or a ``raw`` body with its
    ``content_type``; ``expect`` the status a full-rights caller should get when the variant probes
    a refusal (None: it succeeds); ``touches`` the units a successful call may change."""

    path: str
    body: Any = None
    query: dict[str, str] | None = None
    raw: str | None = None
    content_type: str | None = None
    expect: int | None = None
    touches: tuple[tuple[str, ...], ...] | None = None
    poison: bool = True  # False: the body repeats another variant's shape; the poison tests skip it
    public: bool = False  # no authentication: every caller, even with a revoked token, gets the answer

    @property
    def url(self) -> str:
        return self.path + ("?" + urlencode(self.query) if self.query else "")

    def request_text(self) -> str:
        """Everything the caller sent: what a response may echo back without leaking."""
        return " ".join([self.url, json.dumps(self.body, ensure_ascii=False) if self.body is not None else "",
                         self.raw or ""])


def _json_bodies(calls: list[Call]) -> list[Any]:
    return [c.body for c in calls if c.expect is None and c.poison and c.body is not None]


class World:
    """An org seeded through ``api`` (a full-rights person token of ``user`` in ``org``).

    Banks ``main`` (``mids``: the first memory's text has no canary, so its id is the same in every
    org) and ``beta``; hook session ``s1`` extracted into ``main``; workstream ``ws-a``, projects
    ``p-apollo`` (active) and ``p-dormant`` (deactivated, with ``dormant_session``), an interactive
    ``session`` on both the workstream and ``p-apollo``, a coordinator session; structured memories
    in global, the user's scope, ``bob``'s and ``dave``'s (imported), the workstream, the project
    and the coordinator scope; team spaces ``sid`` (members: the user, ``carl``, ``dave`` denied by a
    deny rule; accepted entries ``old_entry`` and ``new_entry``, a draft, ``edited``) and ``ops``
    (``carl`` and ``dave``, an accepted entry and a draft). ``canaries`` maps each planted canary to
    its unit; ``setup_calls`` counts the calls seeding made (a builder that makes a fresh target
    raises it)."""

    def __init__(self, api, org: str = "default", user: str = "admin"):
        self.api, self.org, self.user = api, org, user
        self.canaries: dict[str, tuple[str, ...]] = {}
        self.tokens: dict[str, str] = {}  # name -> secret
        self.setup_calls = 0
        self._n = itertools.count(1)
        self._seed_banks()
        self._seed_structured()
        self._seed_team()
        self.seeded = set(self.canaries.values())  # the units seeding planted a canary in

    # --- helpers ------------------------------------------------------------------------------

    def plant(self, *unit: str) -> str:
        """The canary of ``(org, *unit)``, registered."""
        full = (self.org, *unit)
        c = canary(*full)
        self.canaries[c] = full
        return c

    def call(self, method: str, path: str, body: Any = None, token: str | None = None, ok=(200, 201, 202),
             **kw) -> Any:
        self.setup_calls += 1
        s, b = self.api.call(method, path, body, token=token, **kw)
        assert s in ok, (method, path, s, b)
        return b

    def post(self, path: str, body: Any = None, **kw) -> Any:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw) -> Any:
        return self.call("PUT", path, body, **kw)

    def fresh(self, prefix: str) -> str:
        """A new id for a client-chosen name."""
        return f"{prefix}-{next(self._n)}"

    def mint(self, name: str, user_id: str | None = None, permissions: list[str] | None = None,
             banks: list[str] | None = None, kind: str = "person", expires_at: int | None = None) -> str:
        """Mint a token of this org whose label holds the canary of its unit; returns the secret
        (kept in ``tokens[name]``)."""
        from chalicelib.auth.principal import PERMISSIONS
        from chalicelib.auth.tokens import MintRequest, mint, token_id_for
        secret = "cairn_" + secrets.token_urlsafe(32)
        label = f"{name} {self.plant('token', token_id_for(secret))}"
        req = MintRequest(kind=kind, user_id=None if kind == "api_key" else (user_id or name),
                          permissions=list(PERMISSIONS) if permissions is None else permissions,
                          label=label, banks=banks, expires_at=expires_at)
        mint(self.org, req, created_by="test", token=secret)
        self.setup_calls += 1
        self.tokens[name] = secret
        return secret

    # --- banks --------------------------------------------------------------------------------

    def _memory(self, bank: str, text: str, **fields) -> str:
        b = self.post(f"/v1/banks/{bank}/memories", {"text": text, **fields})
        return b["memory"]["id"]

    def _seed_banks(self) -> None:
        c = self.plant("bank", "main")
        self.mids = [self._memory("main", text, tags=["style"], entities=["user"]) for text in (
            "User prefers short names", f"User prefers tabs, {c}", f"User likes tea, {c}", f"User drinks coffee, {c}")]
        self.put("/v1/banks/main/rules/style", {"content": f"# brief\n\nAnswer briefly ({c})."})
        b = self.plant("bank", "beta")
        self.beta_mid = self._memory("beta", f"Beta team keeps notes in {b}", tags=["beta"])
        self.put("/v1/banks/beta/rules/beta", {"content": f"# beta\n\nMention {b}."})
        self.hook_session = self.fresh_hook_session("s1")

    def fresh_bank(self, prefix: str = "gone") -> str:
        """A new bank with one memory and a rule."""
        name = self.fresh(prefix)
        c = self.plant("bank", name)
        self._memory(name, f"Bank {name} remembers {c}")
        self.put(f"/v1/banks/{name}/rules/r", {"content": f"# rule {c}"})
        return name

    def fresh_trash(self) -> tuple[str, str]:
        """``(bank, trashed_to)`` of a new bank moved to trash."""
        name = self.fresh_bank("old")
        return name, self.call("DELETE", f"/v1/banks/{name}")["trashed_to"]

    def fresh_memory(self, bank: str = "main") -> str:
        """A new memory in ``bank`` (its text holds the bank's canary)."""
        return self._memory(bank, f"Fact number {next(self._n)} of {self.plant('bank', bank)}")

    def fresh_upload(self, bank: str = "main") -> str:
        """The ``s3_key`` of an uploaded ndjson file for ``POST /v1/banks/{bank}/import``."""
        from chalicelib.storage import blobs
        key = self.post(f"/v1/banks/{bank}/import-uploads")["s3_key"]
        blobs.put_bytes(blobs.org_key(self.org, key), b'{"text": "an uploaded memory"}\n', "application/x-ndjson")
        self.setup_calls += 1
        return key

    def fresh_hook_session(self, session_id: str | None = None, bank: str = "main") -> str:
        """A hook session whose extraction (run inline, offline extractor) saved a memory into
        ``bank`` with provenance and left a cursor."""
        from chalicelib.extraction import job as jobs
        from chalicelib.extraction.models import OfflineExtractor
        sid = session_id or self.fresh("hs")
        c = self.plant("bank", bank)
        messages = [{"role": "user", "content": f"Remember that the build host of {sid} is called {c}.", "id": "m1"},
                    {"role": "assistant", "content": "Noted, I will keep that in mind for the build host."},
                    {"role": "user", "content": "I prefer short answers about the build host and its configuration."}]
        job = jobs.make_job(self.org, bank, sid, "t0", messages, actor="test", window_size=20)
        out = jobs.run_job(job, OfflineExtractor())
        assert out.status == "applied" and out.saved >= 1, out
        self.setup_calls += 1
        return sid

    # --- structured memory --------------------------------------------------------------------

    def _seed_structured(self) -> None:
        u = self.user
        owner = self.plant("owner", u)
        self.ws = self.post("/v1/api/workstreams", {"workstream_id": "ws-a", "title": f"Migration {owner}"})[
            "workstream_id"]
        self.project = self.post("/v1/api/projects", {"project_id": "p-apollo", "name": f"Apollo {owner}"})[
            "project_id"]
        self.dormant = self.post("/v1/api/projects", {"project_id": "p-dormant", "name": f"Dormant {owner}"})[
            "project_id"]
        self.session = self.post("/v1/api/sessions", {"workstream_id": self.ws, "project_id": self.project})[
            "session_id"]
        self.dormant_session = self.post("/v1/api/sessions", {"project_id": self.dormant})["session_id"]
        self.call("PATCH", f"/v1/api/projects/{self.dormant}", {"active": False})
        coordinator = self.post("/v1/api/sessions", {"kind": "coordinator"})["session_id"]
        g = self.plant("scope", "global", "")
        self.smem = self.post("/v1/api/memories", {"name": "deploy", "description": "How we deploy",
                                                   "content": f"Deploys go through CI ({g})."})["memory_id"]
        self.umem = self.post("/v1/api/memories", {"name": "mine", "description": "private note", "scope": "user",
                                                   "content": f"My locker code is {self.plant('scope', 'user', u)}"})[
            "memory_id"]
        tool = f"/v1/api/sessions/{self.session}/memory"
        for scope, sid in (("workstream", self.ws), ("project", self.project)):
            self.post(tool, {"action": "save", "name": f"{scope} note", "description": "d", "scope": scope,
                             "content": f"The {scope} uses {self.plant('scope', scope, sid)}"})
        self.post(f"/v1/api/sessions/{coordinator}/memory", {
            "action": "save", "name": "plan", "description": "d",
            "content": f"Coordinate via {self.plant('scope', 'coordinator', u)}"})
        lines = [json.dumps({"name": f"{who} note", "description": "d", "scope": "user", "scope_id": who,
                             "content": f"{who} keeps {self.plant('scope', 'user', who)}"}) for who in ("bob", "dave")]
        b = self.post("/v1/api/admin/memories/import", raw="\n".join(lines), headers={"Content-Type":
                                                                                       "application/x-ndjson"})
        assert b["imported"] == 2, b
        self.post(f"/v1/api/sessions/{self.session}/context",
                  {"messages": [{"role": "user", "content": "how do we deploy?"}]})

    def fresh_structured(self, name: str | None = None) -> tuple[str, str]:
        """``(name, memory_id)`` of a new global structured memory."""
        name = name or self.fresh("note")
        b = self.post("/v1/api/memories", {"name": name, "description": "d",
                                           "content": f"Note {name}: {self.plant('scope', 'global', '')}"})
        return name, b["memory_id"]

    def fresh_session(self) -> str:
        return self.post("/v1/api/sessions", {"workstream_id": self.ws})["session_id"]

    def fresh_project_member(self) -> str:
        user = self.fresh("member")
        self.put(f"/v1/api/projects/{self.project}/members/{user}", {"access": "read"})
        return user

    # --- team memory --------------------------------------------------------------------------

    def _text(self, eid: str, text: str, token: str | None = None) -> None:
        from tests.api.team_support import Editor, b64
        snap = self.call("GET", f"{MEM}/entries/{eid}", token=token)["snapshot"]
        ed = Editor()
        ed.load(snap)
        self.post(f"{MEM}/entries/{eid}/updates", {"updateId": self.fresh("upd-seed"),
                                                   "update": b64(ed.insert(len(ed.text), text))}, token=token)

    def entry(self, title: str, text: str = "", token: str | None = None, accept: str | None = None,
              space: str | None = None) -> tuple[str, str]:
        """``(entry id, documentSha256)`` of a new entry drafted with ``token``; ``accept``, a
        token of another member, accepts it."""
        e = self.post(f"{MEM}/entries", {"spaceId": space or self.sid, "kind": "decision", "title": title},
                      token=token)
        if text:
            self._text(e["id"], text, token)
        sha = self.call("GET", f"{MEM}/entries/{e['id']}", token=token)["documentSha256"]
        if accept is not None:
            self.post(f"{MEM}/entries/{e['id']}/accept", {"documentSha256": sha}, token=accept)
        return e["id"], sha

    def _seed_team(self) -> None:
        # a space's entries hold the canary of ("space", id), its name that of ("spacemeta", id):
        # space administrators see names and members, only members see entries
        self.sid = self.post(SPACES, {"name": "Platform"})["id"]
        p = self.plant("space", self.sid)
        self.call("PATCH", f"{SPACES}/{self.sid}", {"name": f"Platform {self.plant('spacemeta', self.sid)}"})
        self.carl = self.mint("carl", permissions=[])  # drafts entries the world's user accepts
        for member in (self.user, "carl", "dave"):
            self.put(f"{SPACES}/{self.sid}/members/{member}", {"permissions": RW})
        self.deny = [{"memberId": "dave", "spaceId": self.sid}]
        self.put("/api/v1/context/deny-rules", {"rules": self.deny})
        self.old_entry, _ = self.entry(f"Use MySQL {p}", f"We used MySQL, see {p}", self.carl, accept=self.api.token)
        self.new_entry, _ = self.entry(f"Use Postgres {p}", f"Postgres for everything, see {p}", self.carl,
                                       accept=self.api.token)
        self.draft, self.draft_sha = self.entry(f"Use Redis {p}", f"Redis for caching, draft {p}", self.carl)
        self.edited, _ = self.entry("Use Kafka")
        self.ops = self.post(SPACES, {"name": "Ops"})["id"]
        o = self.plant("space", self.ops)
        self.call("PATCH", f"{SPACES}/{self.ops}", {"name": f"Ops {self.plant('spacemeta', self.ops)}"})
        dave = self.mint("dave-seed", user_id="dave", permissions=[])
        for member in ("carl", "dave"):
            self.put(f"{SPACES}/{self.ops}/members/{member}", {"permissions": RW})
        self.entry(f"Ops runbook {o}", f"Restart with {o}", self.carl, accept=dave, space=self.ops)
        self.entry(f"Ops draft {o}", f"Draft of {o}", self.carl, space=self.ops)
        self.post(f"{MEM}/retrieve", {"spaceIds": [self.sid], "query": "postgres"})

    def fresh_entry(self, accepted: bool = False) -> tuple[str, str]:
        """A new entry of space ``sid`` (drafted by carl; ``accepted`` by the world's user)."""
        return self.entry(f"Decision {next(self._n)} {self.plant('space', self.sid)}", "", self.carl,
                          accept=self.api.token if accepted else None)

    def fresh_space_member(self) -> str:
        member = self.fresh("frank")
        self.put(f"{SPACES}/{self.sid}/members/{member}", {"permissions": ["context:space:read"]})
        return member

    # --- the JSON bodies (for the poison tests) -------------------------------------------------

    @functools.cached_property
    def routes(self) -> dict[tuple[str, str], tuple[str, list[Any]]]:
        """``{(method, pattern): (path, [bodies])}`` of every POST/PUT/PATCH route: the bodies of
        its variants that succeed (built now, once)."""
        out = {}
        for route, variants in sorted(ROUTES.items()):
            if route[0] not in ("POST", "PUT", "PATCH"):
                continue
            calls = [build(self) for build in variants.values()]
            calls = [c for c in calls if c.expect is None] or calls
            out[route] = (calls[0].path, _json_bodies(calls) or [{}])
        return out

    @functools.cached_property
    def tool_bodies(self) -> dict[tuple[str, str], list[Any]]:
        """``{("MCP", tool): [tools/call bodies]}``: the bodies of each tool's variants that
        succeed (built now, once)."""
        return {row: _json_bodies([build(self) for build in variants.values()])
                for row, variants in sorted(MCP_TOOLS.items())}


# --- the fixtures -----------------------------------------------------------------------------

Builder = Callable[[World], Call]
B = ("bank", "main")
NDJSON = "application/x-ndjson"


def _hook_messages() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Remember that I like tea.", "id": "m1"},
            {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}]


def _restore(w: World) -> Call:
    bank, trashed_to = w.fresh_trash()
    return Call(f"/v1/banks/{bank}/restore", {"trashed_to": trashed_to}, touches=(("bank", bank),))


def _delete_rule(w: World) -> Call:
    name = w.fresh("rule")
    w.put(f"/v1/banks/main/rules/{name}", {"content": f"# {name}\n\nMention {w.plant('bank', 'main')}."})
    return Call(f"/v1/banks/main/rules/{name}", touches=(B,))


def _next_banks_page(w: World) -> Call:
    cursor = w.call("GET", "/v1/banks?limit=1")["next_cursor"]
    return Call("/v1/banks", query={"limit": "1", "cursor": cursor})


def _next_page(path: str, fresh: dict[str, Any] | None = None) -> Builder:
    """The second page of a listing, its cursor issued to the world's user (``fresh``:
    the body of one more object first, so there is a second page)."""
    def build(w: World) -> Call:
        if fresh is not None:
            w.post(path, {k: w.fresh(v) if k.endswith("_id") else v for k, v in fresh.items()})
        return Call(path, query={"limit": "1", "cursor": w.call("GET", f"{path}?limit=1")["next_cursor"]})
    return build


def _trash(w: World) -> Call:
    bank = w.fresh_bank()
    return Call(f"/v1/banks/{bank}", touches=(("bank", bank),))


def _scope(w: World, scope: str, scope_id: str = "") -> tuple[tuple[str, ...], ...]:
    return (("scope", scope, scope_id),)


def _owner(w: World) -> tuple[tuple[str, ...], ...]:
    return (("owner", w.user),)


def _space(w: World) -> tuple[tuple[str, ...], ...]:
    return (("space", w.sid),)


def _accept(w: World) -> Call:
    eid, sha = w.fresh_entry()
    return Call(f"{MEM}/entries/{eid}/accept", {"documentSha256": sha}, touches=_space(w))


def _supersede_entry(w: World) -> Call:
    eid, _ = w.fresh_entry(accepted=True)
    return Call(f"{MEM}/entries/{eid}/supersede", {"supersededBy": w.new_entry}, touches=_space(w))


def _archive(w: World) -> Call:
    eid, _ = w.fresh_entry()
    return Call(f"{MEM}/entries/{eid}/archive", {}, touches=_space(w))


def _revoke(kind: str) -> Builder:
    def build(w: World) -> Call:
        from chalicelib.auth.tokens import token_id_for
        if kind == "person":
            secret = w.mint(w.fresh("zed"), permissions=None)
        else:
            secret = w.mint(w.fresh("key"), kind="api_key", permissions=["memory:read"], banks=["beta"])
        return Call(f"/v1/api/admin/tokens/{token_id_for(secret)}", touches=(("token", "*"),))
    return build


def _delete_structured(w: World) -> Call:
    name, _ = w.fresh_structured()
    return Call(f"/v1/api/memories/{quote(name)}", touches=_scope(w, "global"))


def _admin_delete(w: World) -> Call:
    _, mid = w.fresh_structured()
    return Call(f"/v1/api/admin/memories/{mid}", touches=_scope(w, "global"))


def _tool(action: dict[str, Any], touches=None, session: str = "session", expect=None, poison=True) -> Builder:
    def build(w: World) -> Call:
        return Call(f"/v1/api/sessions/{getattr(w, session)}/memory", action, expect=expect, poison=poison,
                    touches=touches(w) if callable(touches) else touches)
    return build


def rpc(method: str, params: dict[str, Any] | None = None, touches: tuple[tuple[str, ...], ...] | None = (),
        **kw) -> Call:
    """A JSON-RPC request (id 1) to ``POST /mcp``."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    return Call(MCP, body, touches=touches, **kw)


def _mcp_tool(name: str, arguments: dict[str, Any] | Callable[[World], dict[str, Any]], touches=(),
              **kw) -> Builder:
    """A ``tools/call`` of tool ``name`` with ``arguments`` (or ``arguments(world)``, built fresh)."""
    def build(w: World) -> Call:
        args = arguments(w) if callable(arguments) else arguments
        return rpc("tools/call", {"name": name, "arguments": args},
                   touches=touches(w) if callable(touches) else touches, **kw)
    return build


ROUTES: dict[tuple[str, str], dict[str, Builder]] = {
    # --- banks ---
    ("GET", "/v1/health"): {"health": lambda w: Call("/v1/health", public=True)},
    ("GET", "/v1/me"): {"me": lambda w: Call("/v1/me")},
    ("GET", "/v1/openapi.json"): {"document": lambda w: Call("/v1/openapi.json", public=True)},
    ("GET", "/v1/banks"): {"live": lambda w: Call("/v1/banks"),
                           "page": lambda w: Call("/v1/banks", query={"limit": "1"}),
                           "next": _next_banks_page,
                           "trashed": lambda w: Call("/v1/banks", query={"trashed": "true"})},
    ("POST", "/v1/banks"): {"create": lambda w: Call("/v1/banks", {"name": "fresh", "description": "A fresh bank"},
                                                     touches=(("bank", "fresh"),))},
    ("GET", "/v1/banks/{bank}"): {"main": lambda w: Call("/v1/banks/main")},
    ("PATCH", "/v1/banks/{bank}"): {"describe": lambda w: Call("/v1/banks/main", {"description": "The main bank."},
                                                               touches=(B,))},
    ("DELETE", "/v1/banks/{bank}"): {"trash": _trash},
    ("POST", "/v1/banks/{bank}/restore"): {"restore": _restore},
    ("GET", "/v1/banks/{bank}/rules"): {"main": lambda w: Call("/v1/banks/main/rules")},
    ("GET", "/v1/banks/{bank}/rules/{name}"): {"main": lambda w: Call("/v1/banks/main/rules/style"),
                                               "beta": lambda w: Call("/v1/banks/beta/rules/beta")},
    ("DELETE", "/v1/banks/{bank}/rules/{name}"): {"delete": _delete_rule},
    ("PUT", "/v1/banks/{bank}/rules/{name}"): {"set": lambda w: Call(
        "/v1/banks/main/rules/style", {"content": "# Answer briefly.\n\nAlways."}, touches=(B,))},
    ("GET", "/v1/banks/{bank}/memories"): {"list": lambda w: Call("/v1/banks/main/memories"),
                                           "tag": lambda w: Call("/v1/banks/main/memories",
                                                                 query={"tag": "style", "include_superseded": "true"}),
                                           "beta": lambda w: Call("/v1/banks/beta/memories")},
    ("POST", "/v1/banks/{bank}/memories"): {"save": lambda w: Call("/v1/banks/main/memories", {
        "text": "User likes green tea", "entities": ["user", "tea"], "tags": ["drinks"], "pinned": False,
        "session_id": "s1"}, touches=(B,))},
    ("GET", "/v1/banks/{bank}/memories/{memory_id}"): {"get": lambda w: Call(f"/v1/banks/main/memories/{w.mids[1]}")},
    ("PATCH", "/v1/banks/{bank}/memories/{memory_id}"): {"patch": lambda w: Call(
        f"/v1/banks/main/memories/{w.mids[0]}",
        {"text": "User prefers short names", "entities": ["user"], "tags": ["style"], "pinned": True}, touches=(B,))},
    ("DELETE", "/v1/banks/{bank}/memories/{memory_id}"): {"delete": lambda w: Call(
        f"/v1/banks/main/memories/{w.fresh_memory()}", touches=(B,))},
    ("POST", "/v1/banks/{bank}/memories/{memory_id}/pin"): {"pin": lambda w: Call(
        f"/v1/banks/main/memories/{w.mids[0]}/pin", {"pinned": True}, touches=(B,))},
    ("POST", "/v1/banks/{bank}/memories/{memory_id}/supersede"): {"supersede": lambda w: Call(
        f"/v1/banks/main/memories/{w.fresh_memory()}/supersede", {"superseded_by": w.mids[0]}, touches=(B,))},
    ("GET", "/v1/banks/{bank}/memories/{memory_id}/history"): {"history": lambda w: Call(
        f"/v1/banks/main/memories/{w.mids[1]}/history")},
    ("POST", "/v1/banks/{bank}/memories/{memory_id}/purge"): {"purge": lambda w: Call(
        f"/v1/banks/main/memories/{w.fresh_memory()}/purge", {}, touches=(B,))},
    ("GET", "/v1/banks/{bank}/tags"): {"tags": lambda w: Call("/v1/banks/main/tags")},
    ("GET", "/v1/banks/{bank}/conflicts"): {"conflicts": lambda w: Call("/v1/banks/main/conflicts")},
    ("GET", "/v1/banks/{bank}/export"): {"export": lambda w: Call("/v1/banks/main/export",
                                                                  query={"history": "true"})},
    ("POST", "/v1/banks/{bank}/import"): {"upload": lambda w: Call(
        "/v1/banks/main/import", {"s3_key": w.fresh_upload()}, touches=(B,))},
    ("POST", "/v1/banks/{bank}/import-uploads"): {"url": lambda w: Call("/v1/banks/main/import-uploads", {},
                                                                        touches=())},
    ("POST", "/v1/banks/{bank}/recall"): {
        "plain": lambda w: Call("/v1/banks/main/recall", {"query": "short names", "limit": 5, "tag": "style",
                                                           "include_superseded": False}, touches=()),
        "as-of": lambda w: Call("/v1/banks/main/recall", {"query": "tea", "as_of": 4102444800000}, touches=()),
        "beta": lambda w: Call("/v1/banks/beta/recall", {"query": "notes"}, touches=(), poison=False)},
    ("POST", "/v1/banks/{bank}/preview"): {"preview": lambda w: Call("/v1/banks/main/preview",
                                                                     {"query": "what names?"}, touches=())},
    ("POST", "/v1/banks/{bank}/forget-session"): {"forget": lambda w: Call(
        "/v1/banks/main/forget-session", {"session_id": w.fresh_hook_session(), "purge": False}, touches=(B,))},
    # --- hooks, reload, doctor ---
    ("POST", "/v1/hooks/pre-generate"): {
        "main": lambda w: Call("/v1/hooks/pre-generate", {
            "messages": _hook_messages(), "metadata": {"memory_bank": "main", "harness": "x"}, "session_id": "s1",
            "step": 1}, touches=()),
        "recall": lambda w: Call("/v1/hooks/pre-generate", {
            "messages": [{"role": "user", "content": "what does the user drink, tea?"}],
            "metadata": {"memory_bank": "main"}}, touches=(), poison=False),
        "beta": lambda w: Call("/v1/hooks/pre-generate", {
            "messages": [{"role": "user", "content": "where are the notes?"}], "metadata": {"memory_bank": "beta"}},
            touches=(), poison=False)},
    ("POST", "/v1/hooks/turn-completed"): {"turn": lambda w: Call("/v1/hooks/turn-completed", {
        "session_id": "s1", "turn_id": "t1", "status": "ok", "messages": _hook_messages(),
        "metadata": {"memory_bank": "main"}}, touches=(B,))},
    ("POST", "/v1/hooks/session-deleted"): {"drop": lambda w: Call(
        "/v1/hooks/session-deleted", {"session_id": w.fresh_hook_session()}, touches=(B,))},
    ("POST", "/v1/reload"): {"reload": lambda w: Call("/v1/reload", {}, touches=(("config",), ("_system", "tuning")))},
    ("GET", "/v1/doctor"): {"doctor": lambda w: Call("/v1/doctor")},
    # --- usage limits (an org admin may lower them; these bodies leave the limits in force unchanged) ---
    ("GET", "/v1/usage/limits"): {"get": lambda w: Call("/v1/usage/limits")},
    ("PUT", "/v1/usage/limits"): {"lower": lambda w: Call("/v1/usage/limits", {
        "memories_per_bank": 250000, "extraction_tokens_per_day": None}, touches=(("limits",),))},
    ("GET", "/v1/status"): {"status": lambda w: Call("/v1/status")},
    # --- the console (static files, no token) ---
    ("GET", "/console"): {"page": lambda w: Call("/console", public=True)},
    ("GET", "/console/{asset}"): {"script": lambda w: Call("/console/app.js", public=True)},
    # --- tokens ---
    ("POST", "/v1/api/admin/tokens"): {
        "api_key": lambda w: Call("/v1/api/admin/tokens", {
            "kind": "api_key", "permissions": ["memory:read"], "label": "ci", "banks": ["beta"],
            "expires_at": 4102444800000}, touches=(("token", "*"),)),
        "person": lambda w: Call("/v1/api/admin/tokens", {"kind": "person", "user_id": "carol", "permissions": [],
                                                          "banks": ["beta"]}, touches=(("token", "*"),))},
    ("GET", "/v1/api/admin/tokens"): {"list": lambda w: Call("/v1/api/admin/tokens")},
    ("DELETE", "/v1/api/admin/tokens/{token_id}"): {"person": _revoke("person"), "api_key": _revoke("api_key")},
    # --- structured memory: REST ---
    ("GET", "/v1/api/memories"): {"default": lambda w: Call("/v1/api/memories"),
                                  "user": lambda w: Call("/v1/api/memories", query={"scope": "user"})},
    ("POST", "/v1/api/memories"): {
        "global": lambda w: Call("/v1/api/memories", {
            "name": "deploy notes", "description": "How we deploy", "content": "Deploys go through CI.",
            "type": "reference", "scope": "global"}, touches=_scope(w, "global")),
        "user": lambda w: Call("/v1/api/memories", {"name": "mine", "description": "d", "content": "c",
                                                     "scope": "user", "scope_id": w.user},
                               touches=_scope(w, "user", w.user))},
    ("POST", "/v1/api/memories/search"): {"search": lambda w: Call("/v1/api/memories/search", {
        "query": "deploy", "type": "reference", "limit": 5, "scope": "global"}, touches=())},
    ("GET", "/v1/api/memories/{name}"): {"global": lambda w: Call("/v1/api/memories/deploy"),
                                         "user": lambda w: Call("/v1/api/memories/mine", query={"scope": "user"})},
    ("DELETE", "/v1/api/memories/{name}"): {"delete": _delete_structured},
    # --- workstreams, projects, sessions ---
    ("GET", "/v1/api/workstreams"): {"list": lambda w: Call("/v1/api/workstreams"),
                                     "next": _next_page("/v1/api/workstreams", {"workstream_id": "ws"})},
    ("GET", "/v1/api/projects"): {"list": lambda w: Call("/v1/api/projects"),
                                  "next": _next_page("/v1/api/projects")},
    ("GET", "/v1/api/sessions"): {"list": lambda w: Call("/v1/api/sessions"),
                                  "next": _next_page("/v1/api/sessions")},
    ("POST", "/v1/api/workstreams"): {"create": lambda w: Call("/v1/api/workstreams", {
        "workstream_id": w.fresh("ws"), "title": "Next"}, touches=(("owner", "*"),))},
    ("POST", "/v1/api/projects"): {"create": lambda w: Call("/v1/api/projects", {
        "project_id": w.fresh("p"), "name": "Gemini", "active": True}, touches=(("owner", "*"),))},
    ("PATCH", "/v1/api/projects/{project_id}"): {"activate": lambda w: Call(
        f"/v1/api/projects/{w.project}", {"active": True}, touches=_owner(w))},
    ("PUT", "/v1/api/projects/{project_id}/members/{user_id}"): {"put": lambda w: Call(
        f"/v1/api/projects/{w.project}/members/gus", {"access": "read"}, touches=_owner(w))},
    ("DELETE", "/v1/api/projects/{project_id}/members/{user_id}"): {"delete": lambda w: Call(
        f"/v1/api/projects/{w.project}/members/{w.fresh_project_member()}", touches=_owner(w))},
    ("POST", "/v1/api/sessions"): {
        "interactive": lambda w: Call("/v1/api/sessions", {
            "kind": "interactive", "workstream_id": w.ws, "project_id": w.project, "memory_enabled": True,
            "user_id": w.user}, touches=_owner(w)),
        "child": lambda w: Call("/v1/api/sessions", {"parent_session_id": w.session}, touches=_owner(w))},
    ("DELETE", "/v1/api/sessions/{session_id}"): {"delete": lambda w: Call(
        f"/v1/api/sessions/{w.fresh_session()}", touches=_owner(w))},
    ("POST", "/v1/api/sessions/{session_id}/memory"): {
        "save": _tool({"action": "save", "name": "tea", "content": "User likes tea", "description": "drinks",
                       "type": "user", "scope": "user"}, lambda w: _scope(w, "user", w.user)),
        "search": _tool({"action": "search", "query": "uses", "limit": 5}, ()),
        "get": _tool({"action": "get", "name": "workstream note", "scope": "workstream"}, ()),
        "list": _tool({"action": "list"}, (), poison=False),
        # a session whose project was deactivated has no inherited target: no fall-back to global
        "save-dormant": _tool({"action": "save", "name": "private", "content": "a private note",
                               "description": "d"}, (), session="dormant_session", expect=409)},
    ("POST", "/v1/api/sessions/{session_id}/context"): {"turn": lambda w: Call(
        f"/v1/api/sessions/{w.session}/context", {"messages": [
            {"role": "user", "content": "how do we deploy?"},
            {"role": "user", "content": [{"type": "text", "text": "no, actually"}]}]}, touches=_owner(w))},
    # --- structured memory: admin ---
    ("GET", "/v1/api/admin/memories"): {"all": lambda w: Call("/v1/api/admin/memories")},
    ("GET", "/v1/api/admin/memories/search"): {"search": lambda w: Call("/v1/api/admin/memories/search",
                                                                        query={"q": "keeps"})},
    ("GET", "/v1/api/admin/memories/{memory_id}"): {"user": lambda w: Call(f"/v1/api/admin/memories/{w.umem}")},
    ("GET", "/v1/api/admin/memories/{memory_id}/history"): {
        "user": lambda w: Call(f"/v1/api/admin/memories/{w.umem}/history")},
    ("PATCH", "/v1/api/admin/memories/{memory_id}"): {"describe": lambda w: Call(
        f"/v1/api/admin/memories/{w.smem}", {"description": "New description"}, touches=_scope(w, "global"))},
    ("DELETE", "/v1/api/admin/memories/{memory_id}"): {"delete": _admin_delete},
    ("POST", "/v1/api/admin/memories/import"): {"import": lambda w: Call("/v1/api/admin/memories/import", {
        "name": w.fresh("imported"), "description": "d", "content": "c", "scope": "global", "type": "reference",
        "created": "2026-03-10T10:00:00", "access_count": 2}, touches=_scope(w, "global"))},
    ("GET", "/v1/api/admin/audit"): {"all": lambda w: Call("/v1/api/admin/audit")},
    ("GET", "/v1/audit"): {"all": lambda w: Call("/v1/audit"),
                           "action": lambda w: Call("/v1/audit", query={"action": "token.mint", "limit": "5"}),
                           "actor": lambda w: Call("/v1/audit", query={"actor": f"person:{w.user}", "since": "1"}),
                           "target": lambda w: Call("/v1/audit", query={"target": w.sid, "until": str(MAX_MS)})},
    ("GET", "/v1/usage"): {"json": lambda w: Call("/v1/usage", query={"group_by": "token"}),
                           "csv": lambda w: Call("/v1/usage", query={"format": "csv", "granularity": "day"})},
    # --- team memory: spaces ---
    ("GET", SPACES): {"list": lambda w: Call(SPACES), "next": _next_page(SPACES)},
    ("POST", SPACES): {"create": lambda w: Call(SPACES, {
        "name": "Infra", "kind": "team", "classification": "internal", "dlpPolicy": "redact",
        "teamMemoryEnabled": True}, touches=(("space", "*"),))},
    ("GET", f"{SPACES}/{{space_id}}"): {"get": lambda w: Call(f"{SPACES}/{w.sid}"),
                                       "ops": lambda w: Call(f"{SPACES}/{w.ops}")},
    ("PATCH", f"{SPACES}/{{space_id}}"): {"patch": lambda w: Call(f"{SPACES}/{w.sid}", {
        "classification": "internal", "dlpPolicy": "redact"}, touches=_space(w))},
    ("PUT", f"{SPACES}/{{space_id}}/members/{{member_id}}"): {"put": lambda w: Call(
        f"{SPACES}/{w.sid}/members/frank", {"permissions": ["context:space:read"]}, touches=_space(w))},
    ("DELETE", f"{SPACES}/{{space_id}}/members/{{member_id}}"): {"delete": lambda w: Call(
        f"{SPACES}/{w.sid}/members/{w.fresh_space_member()}", touches=_space(w))},
    ("GET", "/api/v1/context/deny-rules"): {"get": lambda w: Call("/api/v1/context/deny-rules")},
    ("PUT", "/api/v1/context/deny-rules"): {"put": lambda w: Call("/api/v1/context/deny-rules", {"rules": [
        *w.deny, {"memberId": "mallory", "spaceId": w.sid, "permissions": ["context:space:write"]}]},
        touches=(("deny",),))},
    # --- team memory: entries ---
    ("POST", f"{MEM}/entries"): {"create": lambda w: Call(f"{MEM}/entries", {
        "spaceId": w.sid, "kind": "decision", "title": "Use SQLite", "links": ["https://example.com/adr/2",
                                                                               "source:adr-2"],
        "classification": "internal"}, touches=_space(w))},
    ("GET", f"{MEM}/entries"): {"space": lambda w: Call(f"{MEM}/entries", query={"spaceId": w.sid}),
                                "search": lambda w: Call(f"{MEM}/entries", query={"spaceId": w.sid, "q": "use"}),
                                # the world's user is not a member of ops: only its members read it
                                "ops": lambda w: Call(f"{MEM}/entries", query={"spaceId": w.ops}, expect=404)},
    ("GET", f"{MEM}/entries/{{entry_id}}"): {"accepted": lambda w: Call(f"{MEM}/entries/{w.new_entry}"),
                                             "draft": lambda w: Call(f"{MEM}/entries/{w.draft}")},
    ("PATCH", f"{MEM}/entries/{{entry_id}}"): {"patch": lambda w: Call(f"{MEM}/entries/{w.edited}", {
        "title": "Use Kafka 4", "links": ["source:adr-1"]}, touches=_space(w))},
    ("GET", f"{MEM}/entries/{{entry_id}}/updates"): {"updates": lambda w: Call(f"{MEM}/entries/{w.draft}/updates")},
    ("POST", f"{MEM}/entries/{{entry_id}}/updates"): {"update": lambda w: Call(f"{MEM}/entries/{w.edited}/updates", {
        "updateId": "upd-00000001", "update": base64.b64encode(b"\x00\x00").decode()}, touches=_space(w))},
    ("GET", f"{MEM}/entries/{{entry_id}}/accepted"): {
        "accepted": lambda w: Call(f"{MEM}/entries/{w.old_entry}/accepted"),
        "never": lambda w: Call(f"{MEM}/entries/{w.fresh_entry()[0]}/accepted", expect=404)},
    ("GET", f"{MEM}/entries/{{entry_id}}/history"): {"history": lambda w: Call(f"{MEM}/entries/{w.old_entry}/history")},
    ("POST", f"{MEM}/entries/{{entry_id}}/accept"): {"accept": _accept},
    ("POST", f"{MEM}/entries/{{entry_id}}/supersede"): {"supersede": _supersede_entry},
    ("POST", f"{MEM}/entries/{{entry_id}}/archive"): {"archive": _archive},
    ("POST", f"{MEM}/retrieve"): {"retrieve": lambda w: Call(f"{MEM}/retrieve", {
        "spaceIds": [w.sid], "query": "postgres", "limit": 5}, touches=())},
    ("GET", f"{MEM}/attributions"): {"space": lambda w: Call(f"{MEM}/attributions", query={"spaceId": w.sid})},
    # --- MCP: the endpoint itself; each tool is a row of MCP_TOOLS ---
    ("POST", MCP): {
        "initialize": lambda w: rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                   "clientInfo": {"name": "matrix", "version": "1"}}),
        "tools-list": lambda w: rpc("tools/list"),
        "notification": lambda w: Call(MCP, {"jsonrpc": "2.0", "method": "notifications/initialized"}, touches=(),
                                       poison=False)},
}


# One row per MCP tool (chalicelib.api.mcp_tools.TOOLS): a ``tools/call`` to ``POST /mcp`` that the
# world's user makes successfully, touching what the REST fixture of the tool's operation touches.
MCP_TOOLS: dict[tuple[str, str], dict[str, Builder]] = {
    (MCP_ROW, "bank_list"): {"list": _mcp_tool("bank_list", {"limit": 50})},
    (MCP_ROW, "bank_create"): {"create": _mcp_tool("bank_create", {"name": "fresh", "description": "A fresh bank"},
                                                   touches=(("bank", "fresh"),))},
    (MCP_ROW, "memory_save"): {"save": _mcp_tool("memory_save", {
        "bank": "main", "text": "User likes green tea", "entities": ["user", "tea"], "tags": ["drinks"],
        "pinned": False, "session_id": "s1"}, touches=(B,))},
    (MCP_ROW, "memory_observe"): {"observe": _mcp_tool("memory_observe", {
        "bank": "main", "session_id": "s1", "turn_id": "t-observe", "messages": [
            {"role": "user", "content": "I drink green tea every morning."},
            {"role": "assistant", "content": "Noted: green tea in the mornings."}]}, touches=(B,))},
    (MCP_ROW, "memory_recall"): {
        "plain": _mcp_tool("memory_recall", {"bank": "main", "query": "short names", "limit": 5, "tag": "style",
                                             "include_superseded": False}),
        "as-of": _mcp_tool("memory_recall", {"bank": "main", "query": "tea", "as_of": 4102444800000}),
        "beta": _mcp_tool("memory_recall", {"bank": "beta", "query": "notes"}, poison=False)},
    (MCP_ROW, "memory_get"): {"get": _mcp_tool("memory_get", lambda w: {"bank": "main", "memory_id": w.mids[1]})},
    (MCP_ROW, "memory_list"): {"tag": _mcp_tool("memory_list", {"bank": "main", "tag": "style",
                                                                "include_superseded": True})},
    (MCP_ROW, "memory_update"): {"patch": _mcp_tool("memory_update", lambda w: {
        "bank": "main", "memory_id": w.mids[0], "text": "User prefers short names", "entities": ["user"],
        "tags": ["style"], "pinned": True}, touches=(B,))},
    (MCP_ROW, "memory_forget"): {"forget": _mcp_tool("memory_forget", lambda w: {
        "bank": "main", "memory_id": w.fresh_memory()}, touches=(B,))},
    (MCP_ROW, "memory_pin"): {"pin": _mcp_tool("memory_pin", lambda w: {
        "bank": "main", "memory_id": w.mids[0], "pinned": True}, touches=(B,))},
    (MCP_ROW, "memory_supersede"): {"supersede": _mcp_tool("memory_supersede", lambda w: {
        "bank": "main", "memory_id": w.fresh_memory(), "superseded_by": w.mids[0]}, touches=(B,))},
    (MCP_ROW, "memory_history"): {"history": _mcp_tool("memory_history", lambda w: {
        "bank": "main", "memory_id": w.mids[1]})},
    (MCP_ROW, "rules_list"): {"main": _mcp_tool("rules_list", {"bank": "main"})},
    (MCP_ROW, "rule_set"): {"set": _mcp_tool("rule_set", {"bank": "main", "name": "style",
                                                          "content": "# Answer briefly.\n\nAlways."}, touches=(B,))},
    (MCP_ROW, "context_preview"): {"preview": _mcp_tool("context_preview", {"bank": "main", "query": "what names?"})},
    (MCP_ROW, "session_open"): {
        "interactive": _mcp_tool("session_open", {"kind": "interactive", "memory_enabled": True},
                                 touches=(("owner", "*"),)),  # the caller's own user
        "child": _mcp_tool("session_open", lambda w: {"parent_session_id": w.session}, touches=_owner)},
    (MCP_ROW, "session_list"): {"list": _mcp_tool("session_list", {"limit": 50})},
    (MCP_ROW, "structured_memory"): {
        "save": _mcp_tool("structured_memory", lambda w: {
            "session_id": w.session, "action": "save", "name": "tea", "content": "User likes tea",
            "description": "drinks", "type": "user", "scope": "user"}, touches=lambda w: _scope(w, "user", w.user)),
        "get": _mcp_tool("structured_memory", lambda w: {
            "session_id": w.session, "action": "get", "name": "workstream note", "scope": "workstream"})},
    (MCP_ROW, "space_list"): {"list": _mcp_tool("space_list", {"limit": 50})},
    (MCP_ROW, "team_search"): {"search": _mcp_tool("team_search", lambda w: {
        "space_ids": [w.sid], "query": "postgres", "limit": 5})},
    (MCP_ROW, "team_draft"): {
        "create": _mcp_tool("team_draft", lambda w: {
            "space_id": w.sid, "kind": "decision", "title": "Use SQLite", "text": "SQLite for the edge caches."},
            touches=_space),
        "edit": _mcp_tool("team_draft", lambda w: {"entry_id": w.edited, "text": "Use Kafka for the event bus."},
                          touches=_space)},
}


def tool_rows() -> list[tuple[str, str]]:
    """``("MCP", tool name)`` of every tool of the registry, in its order."""
    from chalicelib.api.mcp_tools import TOOLS
    return [(MCP_ROW, name) for name in TOOLS]


def missing_tool_fixtures() -> tuple[set, set]:
    """``(tool rows without a fixture, fixtures of tools that no longer exist)``."""
    rows = set(tool_rows())
    return rows - set(MCP_TOOLS), set(MCP_TOOLS) - rows


def mcp_status(status: int, body: Any) -> int:
    """The status a ``POST /mcp`` answer counts as: the HTTP status unless it is 200; in a 200, the
    status (``chalicelib.errors.CODES``) of the stable code of a tool's error result
    (``isError``: ``structuredContent.code``) or of a JSON-RPC error (``error.data.code``); else
    200. A code outside the catalogue counts as 500."""
    from chalicelib.errors import CODES
    if status != 200 or not isinstance(body, dict):
        return status
    if isinstance(body.get("error"), dict):
        code = (body["error"].get("data") or {}).get("code")
    else:
        result = body.get("result") or {}
        if result.get("isError") is not True:
            return 200
        code = (result.get("structuredContent") or {}).get("code")
    return CODES.get(code, (500, ""))[0]


# ndjson import routes: a good line, and a line whose leaves the poison tests poison
IMPORT_LINES = {
    ("POST", "/v1/banks/{bank}/import"): (
        {"text": "a good line"},
        {"text": "an imported memory", "entities": ["user"], "tags": ["t"], "confidence": "stated",
         "corroboration": 2, "pinned": False, "source": {"agent": "cli"}, "created_at": 1700000000000,
         "updated_at": 1700000000001, "revision": 1}),
    ("POST", "/v1/api/admin/memories/import"): (
        {"name": "good", "description": "d", "content": "c"},
        {"name": "imported", "description": "d", "content": "c", "scope": "user", "scope_id": "alice",
         "type": "user", "created": "2026-03-10T10:00:00", "updated": "2026-03-11T10:00:00", "access_count": 2}),
}
