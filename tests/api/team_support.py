"""Helpers for the team-memory tests: a space with members, Yjs editors built with
pycrdt, and short HTTP calls."""

from __future__ import annotations

import base64
import itertools
import uuid

from pycrdt import Doc, Text

from tests.api.conftest import mint

MEM = "/api/v1/context/memory"
SPACES = "/api/v1/context/spaces"
_client_ids = itertools.count(1000)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(s: str) -> bytes:
    return base64.b64decode(s)


class World:
    """An org with a team space; ``tokens[name]`` for persons alice, bob, carol (members with read
    and write), reader (read only), writer (write grant only), stranger (no grant), other (another
    org), key (an API key member with read+write)."""

    def __init__(self, api, **space):
        self.api = api
        self.admin = api.token
        self.tokens = _Tokens()
        for name in ("alice", "bob", "carol", "reader", "writer", "stranger", "other", "key"):
            self.tokens[name]  # minted now, so that "nothing written" dumps never see a mint
        self.space = self.new_space(**space)

    def new_space(self, **space) -> str:
        st, body = self.api.post(SPACES, {"name": "Platform team", **space})
        assert st == 201, body
        sid = body["id"]
        for n in ("alice", "bob", "carol"):
            self.grant(sid, n, ["context:space:read", "context:space:write"])
        self.grant(sid, "reader", ["context:space:read"])
        self.grant(sid, "writer", ["context:space:write"])
        return sid

    def key_id(self) -> str:
        from chalicelib.auth.tokens import token_id_for
        return token_id_for(self.tokens["key"])

    def grant(self, sid: str, member: str, perms: list[str]) -> None:
        st, body = self.api.put(f"{SPACES}/{sid}/members/{member}", {"permissions": perms})
        assert st == 200, body

    def call(self, who: str, method: str, path: str, body=None):
        return self.api.call(method, path, body, token=self.tokens[who])

    def create(self, who: str = "alice", space: str | None = None, **fields) -> dict:
        st, body = self.call(who, "POST", f"{MEM}/entries",
                             {"spaceId": space or self.space, "kind": "decision", "title": "Use Postgres", **fields})
        assert st == 201, body
        return body

    def entry(self, who: str, eid: str) -> dict:
        st, body = self.call(who, "GET", f"{MEM}/entries/{eid}")
        assert st == 200, body
        return body

    def post_update(self, who: str, eid: str, update: bytes, uid: str | None = None):
        return self.call(who, "POST", f"{MEM}/entries/{eid}/updates",
                         {"updateId": uid or uuid.uuid4().hex, "update": b64(update)})

    def write_text(self, who: str, eid: str, text: str, client_id: int | None = None) -> Editor:
        ed = Editor(client_id)
        ed.load(self.entry(who, eid)["snapshot"])
        st, body = self.post_update(who, eid, ed.insert(len(ed.text), text))
        assert st == 200, body
        return ed

    def accept(self, who: str, eid: str, sha: str | None = None):
        if sha is None:
            sha = self.entry(who, eid)["documentSha256"]
        return self.call(who, "POST", f"{MEM}/entries/{eid}/accept", {"documentSha256": sha})

    def retrieve(self, who: str, query: str, spaces: list[str] | None = None, limit: int = 10):
        return self.call(who, "POST", f"{MEM}/retrieve",
                         {"spaceIds": spaces or [self.space], "query": query, "limit": limit})


class Editor:
    """A pycrdt ``Doc`` acting as a Yjs client: each edit returns its V1 update."""

    def __init__(self, client_id: int | None = None) -> None:
        self.doc = Doc(client_id=client_id if client_id is not None else next(_client_ids))
        self.content = self.doc.get("content", type=Text)

    @property
    def text(self) -> str:
        return str(self.content)

    def load(self, snapshot_b64: str) -> None:
        self.doc.apply_update(unb64(snapshot_b64))

    def apply(self, update: bytes) -> None:
        self.doc.apply_update(update)

    def insert(self, index: int, s: str) -> bytes:
        before = self.doc.get_state()
        self.content.insert(index, s)
        return self.doc.get_update(before)

    def delete(self, start: int, end: int) -> bytes:
        before = self.doc.get_state()
        del self.content[start:end]
        return self.doc.get_update(before)

    def diff_against(self, state_vector_b64: str) -> bytes:
        return self.doc.get_update(unb64(state_vector_b64))


class _Tokens(dict):
    """Tokens minted on first use (each mint is a transaction)."""

    def __missing__(self, name: str) -> str:
        if name == "other":
            tok = mint(org="other-org", user_id="alice", permissions=[])
        elif name == "key":
            tok = mint(kind="api_key", permissions=[])
        else:
            tok = mint(user_id=name, permissions=[])
        self[name] = tok
        return tok
