"""The generated isolation matrix: every route of the app's route table and every MCP tool x every
kind of caller.

Rows come from ``app.routes`` (without the 404/405 answers ``finalize`` adds) and from the MCP tool
registry (``chalicelib.api.mcp_tools.TOOLS``; row ``("MCP", tool name)``): each variant of each
row's request fixture (tests/api/route_fixtures.py; a row without one is a failing cell) is sent
by each grant below. A tool's variant is a ``tools/call`` to ``POST /mcp``; its status is
``mcp_status``'s (a tool's ``isError`` result counts as the status of its stable code), and the
rules below read the tool's REST operation (its path, its ``arguments`` as the body). The token
kind (person, api_key, service) of a cell is chosen pairwise: for one row the grants take
consecutive kinds from a hash of the row, so every (row, kind), (grant, kind) and (grant, row) pair
is covered without the full cartesian product.

One world per module: two orgs, ``acme`` (the target) and ``globex`` (the other org), each seeded
identically by ``World``, with a canary in every bank, structured-memory scope, owner, team space
(accepted and draft entries), token label and hook session. Each cell checks:

- LEAK: the response (body or headers) holds a canary of a unit the caller may not see (a canary
  the caller itself sent does not count);
- UNEXPECTED WRITE: the backend, hashed per tenant unit (DynamoDB items and S3 objects grouped by
  org, then bank, scope, owner, space or token), changed in a unit the caller may not write, or
  outside the units the variant's fixture says it touches; a refused call (4xx) changes nothing;
- STATUS: the intended answer where a rule fixes it (200 on a public route whatever the token, 401
  for revoked and expired tokens, 403 for a
  bank allow-list on structured-memory, session and admin-memory routes, 403 for ``as_of`` without
  ``admin.memories``, 403 for a tool the token may not use (``permitted``: the tool's permission,
  and no bank allow-list unless its route is bank-scoped), a fixture's ``expect`` for the org's
  admin).

``KNOWN_DEFECTS`` lists the cells that fail today for known reasons; they are xfailed (not strict),
so the set can be emptied as the fixes land. The module ends with the counts (cells run, leaks,
unexpected writes) and asserts zero outside the known defects.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto import mock_aws

from infra.local import motolock
from infra.local.resources import create_resources
from tests.api.conftest import Api, mint
from tests.api.route_fixtures import (
    CANARY_RE,
    MCP,
    MCP_ROW,
    MCP_TOOLS,
    ROUTES,
    Call,
    World,
    app_routes,
    mcp_status,
    missing_fixtures,
    missing_tool_fixtures,
    tool_rows,
)
from tests.api.state import is_version_name, plain

STACK = "cairn-isomatrix"
ALL_KINDS = ("person", "api_key", "service")
RW = ["context:space:read", "context:space:write"]
ROWS = {**ROUTES, **MCP_TOOLS}  # (method, pattern) of a route, ("MCP", name) of a tool -> its variants
SIDE_UNITS = ("audit", "idem", "rates", "touch", "spaceattr", "usage")  # read-side effects and logs of one's own call


@dataclass(frozen=True)
class Grant:
    """A kind of caller: its org, user (persons and services), permissions (None = all), bank
    allow-list, token state and the kinds of token it is tried with."""

    name: str
    org: str = "acme"
    user: str = "alice"
    permissions: tuple[str, ...] | None = None
    banks: tuple[str, ...] | None = None
    state: str = "live"
    kinds: tuple[str, ...] = ALL_KINDS


# the order is the order of the cells of one route: the org's admin comes last, so a consuming
# call by anyone else meets an intact target first
GRANTS = (
    Grant("revoked", state="revoked"),
    Grant("expired", state="expired"),
    Grant("read_only", user="rita", permissions=("memory:read",)),
    Grant("bank_confined", user="dana", banks=("beta",),
          permissions=("memory:read", "memory:write", "admin.memories", "admin.tokens")),
    Grant("other_user", user="bob", permissions=("memory:read", "memory:write"), kinds=("person", "service")),
    Grant("denied_space", user="dave", permissions=("memory:read", "memory:write")),
    Grant("other_org", org="globex"),
    Grant("admin"),
)

# Cells that fail for a known reason, xfailed (not strict) until the fix lands; keep each with a
# comment naming the defect. Empty: every defect found so far is fixed.
KNOWN_DEFECTS: set[str] = set()

# Cells that fail for a reason no fix is planned for yet: listed with what leaks, so that they are
# tracked, not hidden. Empty: a bank-confined admin lists only the tokens it could mint.
FOUND_DEFECTS: dict[str, str] = {}


# --- cells ----------------------------------------------------------------------------------

def _kind(grant_index: int, grant: Grant, route_key: str) -> str:
    h = int.from_bytes(hashlib.sha256(route_key.encode()).digest()[:4], "big")
    return grant.kinds[(h + grant_index) % len(grant.kinds)]


def _cells() -> list[tuple[str, Grant, str, tuple[str, str], str | None]]:
    """``(cell id, grant, kind, row, variant)`` for every route of the app and every MCP tool x
    variant x grant."""
    from app import app
    out = []
    for route in [*app_routes(app), *tool_rows()]:
        variants = list(ROWS.get(route, {})) or [None]
        for variant in variants:
            key = f"{route[0]} {route[1]}#{variant}"
            for i, grant in enumerate(GRANTS):
                kind = _kind(i, grant, key)
                out.append((f"{grant.name}/{kind}:{key}", grant, kind, route, variant))
    return out


CELLS = _cells()


def _param(cell):
    cid = cell[0]
    marks = []
    if cid in KNOWN_DEFECTS:
        marks.append(pytest.mark.xfail(reason="known defect", strict=False))
    elif cid in FOUND_DEFECTS:
        marks.append(pytest.mark.xfail(reason=FOUND_DEFECTS[cid], strict=False))
    return pytest.param(*cell[1:], id=cid, marks=marks)


# --- callers --------------------------------------------------------------------------------

@dataclass
class Caller:
    """One minted token of a grant and what the rules let it see and change."""

    grant: Grant
    kind: str
    token: str
    token_id: str
    org: str
    user: str | None
    permissions: frozenset[str]
    banks: tuple[str, ...] | None
    live: bool
    spaces_read: set[str] = field(default_factory=set)
    spaces_write: set[str] = field(default_factory=set)

    def has(self, p: str) -> bool:
        return p in self.permissions

    @property
    def member_id(self) -> str:
        return self.user if self.kind != "api_key" and self.user else self.token_id

    @property
    def owner_ids(self) -> set[str]:
        """Owner ids of what this caller creates: its user, its token (anonymous sessions); what
        an API key creates outside a session has no owner ("?")."""
        return {self.user or "?", f"tok:{self.token_id}"}

    @property
    def org_wide(self) -> bool:
        return self.banks is None

    def mintable(self, row: dict[str, Any] | None) -> bool:
        """True when this token administrator could have minted the token ``row``."""
        if row is None or not self.has("admin.tokens"):
            return False
        if self.org_wide:
            return True
        return (row.get("kind") == "api_key" and row.get("banks") is not None
                and set(row["banks"]) <= set(self.banks) and set(row.get("permissions") or []) <= self.permissions)


# --- the backend, hashed per tenant unit ------------------------------------------------------

IGNORED = {"tokens": {"last_used_at"}}  # authentication touches it: not a write the call asked for
TOUCH_ATTRS = {"access_count", "last_accessed"}  # structured mem# read counters


_plain = plain  # a moto ``DynamoType`` as a plain value


def _data(attrs: dict[str, Any], name: str = "data") -> dict[str, Any]:
    raw = attrs.get(name)
    return json.loads(raw) if isinstance(raw, str) else (raw or {})


class Placement:
    """Which tenant unit an item or object belongs to: ``(org, kind, *ids)``. It learns the
    lookups (bank incarnations, trash ids, entries' spaces, owners of sessions, projects and
    workstreams, the banks a hook session taught, token rows) from every state it sees; ids are
    never reused, so what a deleted row said still places what pointed at it."""

    def __init__(self):
        self.incarnations: dict[str, tuple[str, ...]] = {}
        self.trash: dict[tuple[str, str], str] = {}
        self.entries: dict[tuple[str, str], str] = {}
        self.owners: dict[tuple[str, str], str] = {}  # (org, session#id | project#id | workstream#id) -> owner
        self.members: dict[tuple[str, str], set[str]] = {}  # (org, project id) -> member user ids
        self.partitions: dict[str, set[str]] = {}  # extraction session_key -> banks it taught
        self.tokens: dict[str, dict[str, Any]] = {}

    def learn(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        for table, a in items:
            if table == "banks" and not a["name"].startswith("!lane/"):  # a lane row: its bank's
                self.incarnations[a["incarnation"]] = self.bank_unit(a["org_id"], a["name"], a.get("bank_name"))
                if a["name"].startswith(".trash/"):
                    self.trash[(a["org_id"], a["name"][len(".trash/"):])] = a.get("bank_name") or ""
            elif table == "team_entries":
                self.entries[(a["org_id"], a["entry_id"])] = a["space_id"]
            elif table == "structured":
                kind, _, rest = a["sk"].partition("#")
                if kind in ("session", "project", "workstream"):
                    d = _data(a)
                    owner = d.get("owner") if kind != "session" else d.get("user_id") or f"tok:{d.get('token_id')}"
                    self.owners[(a["org_id"], a["sk"])] = owner or "?"
                elif kind == "member":
                    pid, _, uid = rest.partition("#")
                    self.members.setdefault((a["org_id"], pid), set()).add(uid)
            elif table == "extraction" and a["sk"].startswith("mem#"):
                self.partitions.setdefault(a["session_key"], set()).add(a.get("bank") or "")
            elif table == "tokens":
                self.tokens[a["token_id"]] = a

    @staticmethod
    def bank_unit(org: str, name: str, bank_name: str | None = None) -> tuple[str, ...]:
        if name == "!config":  # the config version row (of an org, or the global one in "_system")
            return (org, "config")
        if name.startswith("!scope/"):
            scope, _, sid = name[len("!scope/"):].partition("/")
            return (org, "scope", scope, sid)
        if name.startswith("!space/"):
            return (org, "space", name[len("!space/"):])
        if name.startswith(".trash/"):
            return (org, "bank", bank_name or name)
        return (org, "bank", name)

    def owner(self, org: str, sk: str) -> tuple[str, ...]:
        return (org, "owner", self.owners.get((org, sk), "?"))

    def unit(self, table: str, a: dict[str, Any]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
        """``[(unit, attrs)]``: where the item ``a`` of ``table`` belongs (a structured memory
        location splits into the scope's unit and its read counters' unit)."""
        if table == "tokens":
            return [((a["org_id"], "token", a["token_id"]), a)]
        if table == "banks":
            if a["org_id"] == "_system" and a["name"] == "!config":
                # the global row: its version (seq; a row not yet bumped counts as 0) is every
                # org's; the last good tuning it keeps is the operator's configuration
                version = [(("_system", "config"), {"seq": a.get("seq")})] if int(a.get("seq") or 0) else []
                return [*version, (("_system", "tuning"), {k: v for k, v in a.items() if k != "seq"})]
            if a["name"].startswith("!lane/"):  # a write lane of the bank incarnation it names
                inc = a["name"].split("/")[1]
                return [(self.incarnations.get(inc, ("?", "incarnation", inc)), a)]
            return [(self.bank_unit(a["org_id"], a["name"], a.get("bank_name")), a)]
        if table in ("memories", "revisions"):
            return [(self.incarnations.get(a["bank_key"], ("?", "incarnation", a["bank_key"])), a)]
        if table == "idempotency":
            return [(("idem", a["key"].split("|", 1)[0]), a)]
        if table == "audit":
            return [((a["org_id"], "audit"), a)]
        if table == "structured":
            org, sk = a["org_id"], a["sk"]
            kind, _, rest = sk.partition("#")
            if kind in ("session", "project", "workstream"):
                return [(self.owner(org, sk), a)]
            if kind == "member":
                return [(self.owner(org, "project#" + rest.partition("#")[0]), a)]
            if kind == "nudge":
                return [(self.owner(org, "session#" + rest.partition("#")[0]), a)]
            if kind == "mem":
                d = _data(a)
                scope = (org, "scope", d.get("scope", "?"), d.get("scope_id", ""))
                touch = {k: v for k, v in a.items() if k in TOUCH_ATTRS}
                rest_attrs = {k: v for k, v in a.items() if k not in TOUCH_ATTRS}
                return [(scope, rest_attrs), ((org, "touch", *scope[2:]), {"sk": sk, **touch})]
            if kind == "deleted":  # where a deleted memory lived: its scope's
                d = _data(a)
                return [((org, "scope", d.get("scope", "?"), d.get("scope_id", "")), a)]
            return [((org, "structured", kind), a)]
        if table == "extraction":
            org = a.get("org_id") or a["session_key"].partition("#")[0]
            banks = self.partitions.get(a["session_key"], set())
            if len(banks) == 1:
                return [((org, "bank", next(iter(banks))), a)]
            return [((org, "hook", a["session_key"].partition("#")[2]), a)]
        if table == "team_spaces":
            org, sk = a["org_id"], a["sk"]
            if sk == "deny":
                return [((org, "deny"), a)]
            return [((org, "space", sk.split("#")[1]), a)]
        if table == "team_entries":
            return [((a["org_id"], "space", a["space_id"]), a)]
        if table in ("team_updates", "team_events"):
            org, _, eid = a["entry_key"].partition("#")
            return [((org, "space", self.entries.get((org, eid), "?")), a)]
        if table == "team_attributions":
            org, _, sid = a["space_key"].partition("#")
            return [((org, "spaceattr", sid), a)]
        if table == "team_rates":
            org, author = a["key"].split("#")[:2]
            return [((org, "rates", author), a)]
        if table == "usage":  # ``<kind>#<org>...`` items; an org-less pk names the org in its sk
            parts = a["pk"].split("#")
            org = parts[1] if len(parts) > 1 else a["sk"].split("#")[1]
            if parts[0] == "q" and a["sk"] == "limits":  # the org's own limits: its admins' to lower
                return [((org, "limits"), a)]
            return [((org, "usage"), a)]
        return [(("?", table), a)]

    def object_unit(self, key: str) -> tuple[str, ...]:
        if key == "config/memory.toml":
            return ("_system", "config")
        org, _, rest = key.partition("/")
        parts = rest.split("/")
        if parts[0] == "banks" and len(parts) > 1:
            return (org, "bank", parts[1])
        if parts[0] == ".trash" and len(parts) > 1:
            return (org, "bank", self.trash.get((org, parts[1]), parts[1]))
        if parts[0] == "entries" and len(parts) > 1:
            return (org, "space", self.entries.get((org, parts[1]), "?"))
        if parts[0] in ("indexes", "exports", "imports") and len(parts) > 2:
            return self.bank_unit(org, "/".join(parts[1:-1]))
        return ("?", key)


def _encode(b: Any) -> str:
    return b.hex()


def capture(prefix: str, bucket: str, placement: Placement) -> dict[tuple[str, ...], str]:
    """The whole in-process backend (read from moto's own structures: a scan per table through
    the API costs ten times more) as ``{unit: SHA-256 of its items and objects}``."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends
    from moto.s3.models import s3_backends
    items = []
    with motolock.lock():
        for name, table in dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables.items():
            logical = name[len(prefix):]
            for it in table.all_items():
                a = {k: _plain(v) for k, v in it.attrs.items()}
                if not (logical == "banks" and is_version_name(a.get("name"))):  # bookkeeping (tests/api/state.py)
                    items.append((logical, a))
        keys = s3_backends[DEFAULT_ACCOUNT_ID]["global"].buckets[bucket].keys
        objects = {k: keys[k].value for k in list(keys.keys())}
    placement.learn(items)
    groups: dict[tuple[str, ...], list[str]] = {}
    for table, a in items:
        skip = IGNORED.get(table, ())
        for unit, attrs in placement.unit(table, a):
            if skip:
                attrs = {k: v for k, v in attrs.items() if k not in skip}
            groups.setdefault(unit, []).append(table + json.dumps(attrs, sort_keys=True, default=_encode))
    for key, data in objects.items():
        groups.setdefault(placement.object_unit(key), []).append(key + hashlib.sha256(data).hexdigest())
    return {u: hashlib.sha256("\n".join(sorted(v)).encode()).hexdigest() for u, v in groups.items()}


# --- the rules ------------------------------------------------------------------------------

def _scope_owner(c: Caller, aux: Placement, org: str, scope: str, sid: str, write: bool) -> bool:
    if scope == "global":
        return c.has("memory:write") if write else c.has("memory:read")
    if c.user is None:
        return False
    if scope in ("user", "coordinator"):
        return sid == c.user
    if scope == "workstream":
        return aux.owners.get((org, f"workstream#{sid}")) == c.user
    if scope == "project":
        return aux.owners.get((org, f"project#{sid}")) == c.user or c.user in aux.members.get((org, sid), set())
    return False


def visible(c: Caller, unit: tuple[str, ...], aux: Placement) -> bool:
    """May ``c`` see data of ``unit``?"""
    if not c.live or unit[0] != c.org:
        return False
    kind = unit[1]
    if kind == "bank":
        return c.has("memory:read") and (c.org_wide or unit[2] in c.banks)
    if kind in ("scope", "touch"):
        if not c.org_wide:  # a bank allow-list never reaches structured memory
            return False
        return c.has("admin.memories") or _scope_owner(c, aux, unit[0], unit[2], unit[3], write=False)
    if kind == "owner":
        return unit[2] in c.owner_ids or (c.org_wide and c.has("service"))
    if kind == "space":  # entries: members only (a space administrator adds itself first)
        return unit[2] in c.spaces_read
    if kind in ("spacemeta", "spaceattr"):  # names, members, attributions
        return (c.org_wide and c.has("context:admin")) or unit[2] in c.spaces_read
    if kind == "token":
        return unit[2] == c.token_id or c.mintable(aux.tokens.get(unit[2]))
    if kind == "hook":
        return c.org_wide and c.has("memory:read")
    return c.org_wide


def writable(c: Caller, unit: tuple[str, ...], aux: Placement) -> bool:
    """May ``c`` change data of ``unit``?"""
    if not c.live:
        return False
    if unit[0] == "_system":  # the doctor's probe bank of the caller's org; the last good tuning a reload validated
        from chalicelib.doctor import probe_bank
        return c.has("admin.memories") and (unit[1:] in (("bank", probe_bank(c.org)), ("audit",))
                                            or (unit[1:] == ("tuning",) and c.org_wide))
    if unit[0] == "idem":
        return unit[1] == c.token_id
    if unit[0] != c.org:
        return False
    kind = unit[1]
    if kind == "bank":
        return (c.has("memory:write") or c.has("admin.memories")) and (c.org_wide or unit[2] in c.banks)
    if kind == "scope":
        if not c.org_wide or not (c.has("memory:write") or c.has("admin.memories")):
            return False
        return c.has("admin.memories") or c.has("service") or _scope_owner(c, aux, unit[0], unit[2], unit[3], True)
    if kind == "touch":
        return visible(c, unit, aux)
    if kind == "owner":
        return c.org_wide and (unit[2] in c.owner_ids or c.has("service") or c.has("admin.memories"))
    if kind == "space":
        return (c.org_wide and c.has("context:admin")) or unit[2] in c.spaces_write
    if kind == "spaceattr":
        return visible(c, unit, aux)
    if kind == "deny":
        return c.org_wide and c.has("context:admin")
    if kind == "token":
        return c.mintable(aux.tokens.get(unit[2]))
    if kind == "config":
        return c.has("admin.memories")
    if kind == "limits":
        return c.org_wide and c.has("admin.memories")
    if kind == "hook":
        return c.org_wide and c.has("memory:write")
    if kind == "rates":
        return unit[2] == c.member_id
    return kind in ("audit", "usage")


def _declared(c: Caller, unit: tuple[str, ...], call: Call) -> bool:
    """Is ``unit`` among the units ``call`` says it touches (side units always are)?"""
    if call.touches is None or (unit[0] != "_system" and unit[1] in SIDE_UNITS) or unit[0] == "idem":
        return True
    rel = unit[1:] if unit[0] == c.org else unit
    for t in call.touches:
        if len(t) == len(rel) and all(x == "*" or x == y for x, y in zip(t, rel, strict=False)):
            return True
    return False


API_ROUTES_UNDER_ALLOW_LIST = "/v1/api/"  # structured memory, sessions, admin memories


def permitted(c: Caller, tool: Any) -> bool:
    """May ``c`` list and call the MCP ``tool``: it holds the tool's permission and, unless the
    tool's REST route is bank-scoped, has no bank allow-list."""
    return (tool.permission is None or c.has(tool.permission)) and (tool.route.bank_scoped or c.org_wide)


def expected_status(c: Caller, grant: Grant, route: tuple[str, str], call: Call) -> int | None:
    """The status the rules fix for this cell, or None. A tool's row takes the rules of its REST
    operation (its path; its ``arguments`` as the body), and 403 when ``permitted`` says no."""
    body, tool = call.body, None
    if route[0] == MCP_ROW:
        from chalicelib.api.mcp_tools import TOOLS
        tool = TOOLS[route[1]]
        route, body = (tool.route.methods[0], tool.route.path), call.body["params"]["arguments"]
    if call.public:
        return 200
    if not c.live:
        return 401
    if not c.org_wide and route[1].startswith(API_ROUTES_UNDER_ALLOW_LIST) \
            and not route[1].startswith("/v1/api/admin/tokens"):
        return 403
    if tool is not None and not permitted(c, tool):
        return 403
    if isinstance(body, dict) and "as_of" in body and not c.has("admin.memories"):
        return 403
    if call.expect is not None and grant.name == "admin":
        return call.expect
    return None


# --- the module's world -----------------------------------------------------------------------

class Matrix:
    """The seeded backend, the callers and the tally."""

    def __init__(self, client, names: dict[str, str]):
        self.client = client
        self.prefix, self.bucket = names["CAIRN_TABLE_PREFIX"], names["CAIRN_BUCKET"]
        self.acme = World(Api(client, mint(org="acme", user_id="alice")), org="acme", user="alice")
        self.globex = World(Api(client, mint(org="globex", user_id="alice")), org="globex", user="alice")
        self.callers: dict[tuple[str, str], Caller] = {}
        for grant in GRANTS:
            for kind in grant.kinds:
                self.callers[(grant.name, kind)] = self._caller(grant, kind)
        self.placement = Placement()
        self.last: dict[tuple[str, ...], str] | None = None
        self.last_setup = -1
        self.built: dict[tuple, Call] = {}
        self.cells = 0
        self.seen: set[tuple[str, ...]] = set()  # units whose canary a caller allowed to see got
        self.failed: dict[str, list[str]] = {}

    def _caller(self, grant: Grant, kind: str) -> Caller:
        from chalicelib.auth.principal import PERMISSIONS
        from chalicelib.auth.tokens import revoke, token_id_for
        from chalicelib.storage.tables import TokenModel
        w = self.acme if grant.org == "acme" else self.globex
        perms = list(PERMISSIONS) if grant.permissions is None else list(grant.permissions)
        user = None if kind == "api_key" else grant.user
        secret = w.mint(f"{grant.name}-{kind}", user_id=user, permissions=perms,
                        banks=list(grant.banks) if grant.banks is not None else None, kind=kind)
        tid = token_id_for(secret)
        if grant.state == "revoked":
            revoke(w.org, tid, actor="test")
        elif grant.state == "expired":
            TokenModel(tid).update(actions=[TokenModel.expires_at.set(1)])
        c = Caller(grant, kind, secret, tid, w.org, user, frozenset(perms), grant.banks, grant.state == "live")
        if grant.name == "denied_space":  # a member of ops; of the target space too, but denied
            c.spaces_read = c.spaces_write = {w.ops}
            if kind == "api_key":  # API keys are members by token id
                for sid in (w.sid, w.ops):
                    w.put(f"/api/v1/context/spaces/{sid}/members/{tid}", {"permissions": RW})
                w.deny.append({"memberId": tid, "spaceId": w.sid})
                w.put("/api/v1/context/deny-rules", {"rules": w.deny})
        elif grant.name in ("admin", "other_org") and kind != "api_key":
            c.spaces_read = c.spaces_write = {w.sid}
        return c

    def counts(self, known: bool) -> tuple[int, int, int, int]:
        """``(cells, leaks, unexpected writes, wrong statuses)`` among the failing cells that are
        (``known``) or are not listed in ``KNOWN_DEFECTS``/``FOUND_DEFECTS``."""
        cells = [v for k, v in self.failed.items() if (k in KNOWN_DEFECTS or k in FOUND_DEFECTS) == known]
        return (len(cells), *(sum(p.startswith(tag) for ps in cells for p in ps)
                              for tag in ("LEAK", "UNEXPECTED WRITE", "STATUS")))

    def summary(self) -> str:
        _, leaks, writes, statuses = self.counts(known=False)
        k_cells, k_leaks, k_writes, k_statuses = self.counts(known=True)
        return (f"isolation matrix: {self.cells} cells run: {leaks} leaks, {writes} unexpected writes, "
                f"{statuses} wrong statuses; known defects (xfailed): {k_cells} cells with {k_leaks} leaks, "
                f"{k_writes} unexpected writes, {k_statuses} wrong statuses; {len(self.seen)} units read by "
                f"callers allowed to")

    def state(self) -> dict[tuple[str, ...], str]:
        """The backend's unit hashes now (the last cell's when nothing was seeded since)."""
        setup = self.acme.setup_calls + self.globex.setup_calls
        if self.last is None or setup != self.last_setup:
            self.last = capture(self.prefix, self.bucket, self.placement)
            self.last_setup = setup
        return self.last

    def send(self, c: Caller, method: str, call: Call) -> tuple[int, str]:
        """``(status, body and headers as text)``; a call to ``/mcp`` counts as ``mcp_status``."""
        headers = {"Authorization": f"Bearer {c.token}"}
        body = b""
        if call.raw is not None:
            headers["Content-Type"] = call.content_type or "application/x-ndjson"
            body = call.raw.encode()
        elif call.body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(call.body).encode()
        resp = self.client.http.request("POST" if method == MCP_ROW else method, call.url, headers=headers,
                                        body=body)
        text = resp.body.decode("utf-8", "replace") if isinstance(resp.body, bytes) else str(resp.body or "")
        status = resp.status_code
        if call.path == MCP:
            status = mcp_status(status, json.loads(text) if text else None)
        return status, text + "\n" + json.dumps(dict(resp.headers or {}))

    def run(self, cid: str, grant: Grant, kind: str, route: tuple[str, str], variant: str | None) -> list[str]:
        """Run one cell; returns its problems (and counts them)."""
        c = self.callers[(grant.name, kind)]
        self.cells += 1
        build = ROWS.get(route, {}).get(variant) if variant else None
        if build is None:
            problems = [f"NO FIXTURE: {route} has no request fixture in tests/api/route_fixtures.py"]
            self.failed[cid] = problems
            return problems
        # a target is built again only after a call that may have consumed it; a refused call
        # changed nothing (that is checked below), so the next caller meets it intact
        call = self.built.get((route, variant)) or build(self.acme)
        before = self.state()
        status, text = self.send(c, route[0], call)
        after = self.last = capture(self.prefix, self.bucket, self.placement)
        if 200 <= status < 300:
            self.built.pop((route, variant), None)
        else:
            self.built[(route, variant)] = call
        aux = self.placement
        problems = []
        sent = call.request_text()
        for found in sorted(set(CANARY_RE.findall(text))):
            unit = self.acme.canaries.get(found) or self.globex.canaries.get(found)
            if unit is None or found in sent:
                continue
            if visible(c, unit, aux):
                self.seen.add(unit)
            else:
                problems.append(f"LEAK: {status} response holds the canary of {unit}")
        for unit in sorted(set(before) | set(after)):
            if before.get(unit) == after.get(unit):
                continue
            if not 200 <= status < 300:
                why = f"a refused call ({status})"
            elif not writable(c, unit, aux):
                why = "a unit the caller may not write"
            elif not _declared(c, unit, call):
                why = f"a unit outside the fixture's touches {call.touches}"
            else:
                continue
            problems.append(f"UNEXPECTED WRITE: {why} changed {unit}")
        want = expected_status(c, grant, route, call)
        if want is not None and status != want:
            problems.append(f"STATUS: {status}, expected {want}: {text[:300]}")
        if problems:
            self.failed[cid] = problems
        return problems


@pytest.fixture(scope="module")
def matrix():
    keep = dict(os.environ)
    with mock_aws():
        names = create_resources(STACK)
        os.environ.update(names)
        os.environ.update({"CAIRN_STAGE": "test", "CAIRN_QUEUE_URL": "", "CAIRN_EXTRACTOR": "offline"})
        from chalice.test import Client

        from app import app
        with Client(app) as client:
            yield Matrix(client, names)
    os.environ.clear()
    os.environ.update(keep)


def test_every_route_has_a_request_fixture():
    """A new route (any method) must get a fixture in tests/api/route_fixtures.py, and so its cells."""
    from app import app
    missing, stale = missing_fixtures(app)
    assert missing == set(), "routes without a request fixture"
    assert stale == set(), "fixtures of routes that no longer exist"


def test_every_mcp_tool_has_a_request_fixture():
    """A new MCP tool (chalicelib.api.mcp_tools.TOOLS) must get a fixture in
    tests/api/route_fixtures.py's ``MCP_TOOLS``, and so its cells."""
    missing, stale = missing_tool_fixtures()
    assert missing == set(), "MCP tools without a request fixture"
    assert stale == set(), "fixtures of MCP tools that no longer exist"
    assert {r for _, _, _, r, _ in CELLS if r[0] == MCP_ROW} == set(tool_rows())


@pytest.mark.parametrize("status,body,counted", [
    (401, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "m", "data": {"code": "unauthorized"}}},
     401),
    (202, None, 202),
    (200, {"jsonrpc": "2.0", "id": 1, "result": {"isError": False, "structuredContent": {"code": "forbidden"}}}, 200),
    (200, {"jsonrpc": "2.0", "id": 1, "result": {"isError": True, "structuredContent": {
        "error": "m", "code": "forbidden"}}}, 403),
    (200, {"jsonrpc": "2.0", "id": 1, "result": {"isError": True, "structuredContent": {
        "error": "m", "code": "memory_not_found"}}}, 404),
    (200, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m", "data": {"code": "unknown_tool"}}},
     400),
    (200, {"jsonrpc": "2.0", "id": 1, "result": {"isError": True, "structuredContent": {"code": "no_such_code"}}},
     500),
])
def test_an_mcp_answer_counts_as_the_status_of_its_code(status, body, counted):
    assert mcp_status(status, body) == counted


def test_the_kinds_are_paired_with_every_grant_and_route():
    pairs = {(g.name, k) for _, g, k, _, _ in CELLS}
    assert pairs == {(g.name, k) for g in GRANTS for k in g.kinds}
    by_route: dict[tuple, set[str]] = {}
    for _, _, k, route, variant in CELLS:
        by_route.setdefault((route, variant), set()).add(k)
    assert all(kinds == set(ALL_KINDS) for kinds in by_route.values())


@pytest.mark.parametrize("grant,kind,route,variant", [_param(c) for c in CELLS])
def test_cell(matrix, request, grant, kind, route, variant):
    problems = matrix.run(request.node.callspec.id, grant, kind, route, variant)
    assert not problems, "\n".join(problems)


def test_every_fixture_serves_the_org_admin(matrix):
    """Every variant that is not a probe of a refusal succeeds for the world's own admin (a person
    token with every permission): a fixture that misses its target would test nothing. Runs after
    the cells, on fresh targets where a route consumes them."""
    failed = []
    for route, variants in sorted(ROWS.items()):
        for name, build in variants.items():
            call = build(matrix.acme)
            if call.expect is not None:
                continue
            headers = {"Content-Type": "application/json"} if call.body is not None else None
            s, b = matrix.acme.api.call("POST" if route[0] == MCP_ROW else route[0], call.url, call.body,
                                        headers=headers)
            if call.path == MCP:
                s = mcp_status(s, b)
            if not 200 <= s < 300:
                failed.append(f"{route} #{name}: {s} {b}")
    assert failed == [], "\n".join(failed)


def test_matrix_has_no_leak_and_no_unexpected_write(matrix, request):
    """The whole module's count: zero leaks, unexpected writes and wrong statuses outside the known
    defects (run after every cell). When every cell ran, the canary of every unit the world seeded
    reached a caller allowed to see it: the probes do reach the data they guard. The counts end
    the run (the repository's conftest.py prints this report's summary line)."""
    request.node.user_properties.append(("summary", matrix.summary()))
    assert matrix.cells > 0
    unknown = {k: v for k, v in matrix.failed.items() if k not in KNOWN_DEFECTS and k not in FOUND_DEFECTS}
    assert unknown == {}, "\n".join(f"{k}: {v}" for k, v in sorted(unknown.items()))
    assert matrix.counts(known=False) == (0, 0, 0, 0), matrix.summary()
    if matrix.cells == len(CELLS):
        assert matrix.acme.seeded - matrix.seen == set(), "seeded units no allowed caller ever read"
        assert {u for u in matrix.seen if u[0] == "globex"}, "the other org never read its own data"
