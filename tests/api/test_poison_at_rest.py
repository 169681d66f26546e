"""Poison at rest: values no client can take, planted directly in DynamoDB and S3 (as a hand edit,
an older version or an object edited in the bucket would leave them), never take a bank, an org
or a space down. For each record type and each object kind, every read route answers without a
5xx, a damaged record is left out with a ``damaged`` marker (bank lists and exports) or counted in
``X-Cairn-Damaged`` (structured and team lists), a direct read of it is 409 ``damaged``, recall and
the pre-generate hook still serve the bank's other memories, and a tombstone (or a save or
import) replaces it.

Regression tests for the reproduced defects: ``test_structured_lone_surrogate_keeps_lists_and_search_up``
(content/description), ``test_bank_entities_lone_surrogate_keeps_the_bank_up_and_tombstone_recovers``
(bank entities), ``test_integers_beyond_2_63_keep_recall_preview_and_hook_up`` (corroboration,
times, revision).

"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import tarfile
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import zstandard

from chalicelib.core.store import version_key
from chalicelib.fingerprint import fingerprint
from chalicelib.storage.damage import MAX_TIME_MS
from tests.api.conftest import mint

H_TEA = "Alice prefers green tea in the morning"
H_BILLING = "Bob maintains the billing service"
H_DEPLOY = "The deploy pipeline runs on Fridays"
QUERY = "what tea does alice drink"
_orgs = itertools.count(1)


# --- the poison -------------------------------------------------------------------------------

def js(value: Any) -> dict[str, str]:
    """A JSON-string attribute as pynamodb stores one (ASCII escapes, so a lone surrogate is
    ``\\ud800`` in the stored text; NaN and Infinity as Python's json writes them)."""
    return {"S": json.dumps(value)}


# name -> the attributes a poisoned memory item gets (None removes one), from its healthy record
RECORD_POISONS = {
    "lone_surrogate_text": lambda r: {"record": js({**r, "text": r["text"] + " \ud800"})},
    "lone_surrogate_entity": lambda r: {"record": js({**r, "entities": [*r["entities"], "caf\udc00"]})},
    "int_2_63": lambda r: {"record": js({**r, "corroboration": 2**63, "revision": 2**63}),
                           "revision": {"N": str(2**63)}},
    "int_minus_2_63_minus_1": lambda r: {"record": js({**r, "updated_at": -2**63 - 1})},
    "time_after_9999": lambda r: {"record": js({**r, "created_at": MAX_TIME_MS + 1})},
    "huge_float": lambda r: {"record": js({**r, "corroboration": 1e300})},
    "infinity": lambda r: {"record": js({**r, "corroboration": float("inf")})},
    "nan": lambda r: {"record": js({**r, "meta": {"x": float("nan")}})},
    "wrong_type": lambda r: {"record": js({**r, "text": 5})},
    "wrong_type_list": lambda r: {"record": js({**r, "entities": "alice"})},
    "missing_field": lambda r: {"record": js({k: v for k, v in r.items() if k != "created_at"})},
    "not_an_object": lambda r: {"record": js([r["id"]])},
    "invalid_json": lambda r: {"record": {"S": '{"id": "%s", "text": ' % r["id"]}},
    "deep_nesting": lambda r: {"record": {"S": "[" * 5000 + "]" * 5000}},
    "wrong_dynamodb_type": lambda r: {"record": {"N": "42"}},
    "missing_attribute": lambda r: {"record": None},
}


# --- one backend for the module ---------------------------------------------------------------

@dataclass
class Resp:
    status: int
    body: Any
    headers: dict[str, str]


class Org:
    """An org of its own with an admin person token; ``call`` asserts no 5xx and a JSON body."""

    def __init__(self, client, user: str = "admin", org: str | None = None, permissions=None) -> None:
        self.client = client
        self.org = org or f"poison{next(_orgs)}"
        self.user = user
        self.token = mint(org=self.org, user_id=user, permissions=permissions)

    def call(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
             ctype: str = "application/json", token: str | None = None) -> Resp:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        if data is not None:
            headers["Content-Type"] = ctype
        r = getattr(self.client.http, method.lower())(path, headers=headers, body=data)
        assert r.status_code < 500, (method, path, r.status_code, r.body[:300])
        out = r.body
        if r.headers.get("Content-Type", "").startswith("application/json"):
            out = json.loads(r.body)
            assert isinstance(out, dict), (method, path)
            if r.status_code >= 400:
                assert {"error", "code"} <= set(out), out
        return Resp(r.status_code, out, {k.lower(): v for k, v in r.headers.items()})

    def get(self, path: str, **kw) -> Resp:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw) -> Resp:
        return self.call("POST", path, body, **kw)


@pytest.fixture
def client(aws, monkeypatch, tmp_path):
    """A fresh backend per test (moto's transactions cost time in proportion to the tables),
    jobs run inline, a private index directory."""
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    from chalice.test import Client

    from app import app
    from chalicelib.inject import rules_cache
    from chalicelib.search import index
    index.reset_default(root=str(tmp_path / "index"))
    rules_cache.drop()
    with Client(app) as c:
        yield c
    index.reset_default()


def ddb():
    return boto3.client("dynamodb", region_name="us-east-1")


def s3():
    return boto3.client("s3", region_name="us-east-1")


def table(logical: str) -> str:
    from chalicelib.settings import get_settings
    return get_settings().table_name(logical)


def plant(logical: str, key: dict[str, Any], attrs: dict[str, Any]) -> None:
    """Edit one item as a person with the AWS console would: set (or, with None, remove) raw
    attributes, no Cairn code involved."""
    item = ddb().get_item(TableName=table(logical), Key=key, ConsistentRead=True)["Item"]
    for k, v in attrs.items():
        if v is None:
            item.pop(k, None)
        else:
            item[k] = v
    ddb().put_item(TableName=table(logical), Item=item)


def raw_record(logical: str, key: dict[str, Any]) -> dict[str, Any]:
    return json.loads(ddb().get_item(TableName=table(logical), Key=key, ConsistentRead=True)["Item"]["record"]["S"])


def bank_inc(org: str, bank: str) -> str:
    item = ddb().get_item(TableName=table("banks"), Key={"org_id": {"S": org}, "name": {"S": bank}},
                          ConsistentRead=True)["Item"]
    return item["incarnation"]["S"]


def drop_caches() -> None:
    """Play a cold container: no index, no cached rules."""
    from chalicelib.inject import rules_cache
    from chalicelib.search import index
    index.active_cache().drop()
    rules_cache.drop()


def bucket() -> str:
    return os.environ["CAIRN_BUCKET"]


# --- bank memories ------------------------------------------------------------------------------

def seed_bank(o: Org, victims: list[str], bank: str = "main") -> dict[str, str]:
    """Healthy memories, a rule, and one victim memory per name: ``{name: memory id}``."""
    texts = {n: f"Victim {n}: Alice also drinks green tea" for n in victims}
    lines = [{"text": H_TEA, "entities": ["alice"], "tags": ["drinks"]}, {"text": H_BILLING, "entities": ["bob"]},
             {"text": H_DEPLOY}] + [{"text": t, "entities": ["alice"], "tags": ["drinks"]} for t in texts.values()]
    r = o.post(f"/v1/banks/{bank}/import", raw=b"\n".join(json.dumps(x).encode() for x in lines),
               ctype="application/x-ndjson")
    assert r.status == 200 and r.body["imported"] == len(lines), r.body
    assert o.call("PUT", f"/v1/banks/{bank}/rules/style", {"content": "Answer briefly."}).status == 200
    return {n: fingerprint(t) for n, t in texts.items()}


def poison_memories(o: Org, ids: dict[str, str], poisons: dict[str, Any], bank: str = "main") -> None:
    """Each victim's current record poisoned, and the same record appended as its newest revision
    at the bank's next ``seq`` (what an older version's write leaves: a warm index catches up
    through it, once the bank's version moves as every write moves it)."""
    inc = bank_inc(o.org, bank)
    row_key = {"org_id": {"S": o.org}, "name": {"S": bank}}
    seq = int(ddb().get_item(TableName=table("banks"), Key=row_key, ConsistentRead=True)["Item"]["seq"]["N"])
    for name, mid in ids.items():
        key = {"bank_key": {"S": inc}, "sk": {"S": mid}}
        healthy = raw_record("memories", key)
        attrs = poisons[name](healthy)
        plant("memories", key, attrs)
        seq += 1
        rev = {"bank_key": {"S": inc}, "seq": {"N": str(seq)}, "memory_id": {"S": mid}, "op": {"S": "update"},
               "rev_key": {"S": f"{mid}#{healthy['revision'] + 1:012d}#{seq:012d}"}, "at": {"N": "1"}}
        if attrs.get("record") is not None:
            rev["record"] = attrs["record"]
        ddb().put_item(TableName=table("revisions"), Item=rev)
    plant("banks", row_key, {"seq": {"N": str(seq)}})
    ddb().update_item(TableName=table("banks"), Key={"org_id": {"S": o.org}, "name": {"S": version_key(inc)}},
                      UpdateExpression="ADD seq :one", ExpressionAttributeValues={":one": {"N": "1"}})


def read_bank(o: Org, bank: str = "main") -> dict[str, Resp]:
    """Every read route of a bank once (the list paged through with a small limit)."""
    out = {name: o.get(path) for name, path in {
        "banks": "/v1/banks", "bank": f"/v1/banks/{bank}", "trash": "/v1/banks?trashed=true",
        "list_all": f"/v1/banks/{bank}/memories?include_superseded=true&limit=500",
        "list_tag": f"/v1/banks/{bank}/memories?tag=drinks", "tags": f"/v1/banks/{bank}/tags",
        "rules": f"/v1/banks/{bank}/rules", "export": f"/v1/banks/{bank}/export",
        "export_history": f"/v1/banks/{bank}/export?history=true"}.items()}
    pages, cursor = [], ""
    while True:
        page = o.get(f"/v1/banks/{bank}/memories?limit=3" + (f"&cursor={cursor}" if cursor else ""))
        pages.append(page.body)
        cursor = page.body.get("next_cursor")
        if not cursor:
            break
    out["pages"] = Resp(200, pages, {})
    out["recall"] = o.post(f"/v1/banks/{bank}/recall", {"query": QUERY, "limit": 20})
    out["recall_all"] = o.post(f"/v1/banks/{bank}/recall", {"query": QUERY, "limit": 20, "include_superseded": True})
    out["recall_as_of"] = o.post(f"/v1/banks/{bank}/recall", {"query": QUERY, "limit": 20, "as_of": 4102444800000})
    out["preview"] = o.post(f"/v1/banks/{bank}/preview", {"query": QUERY})
    out["hook"] = o.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": QUERY}],
                                                   "metadata": {"memory_bank": bank}})
    return out


def served(reads: dict[str, Resp]) -> None:
    """Recall, preview and the hook still serve the bank's healthy memory (and its rule)."""
    for name in ("recall", "recall_all", "recall_as_of", "preview"):
        assert reads[name].status == 200, (name, reads[name].body)
        assert H_TEA in [m["memory"]["text"] for m in reads[name].body["memories"]], name
    assert reads["hook"].status == 200, reads["hook"].body
    mutations = reads["hook"].body["mutations"]
    assert "Answer briefly." in mutations["system_prompt_append"]
    assert H_TEA in mutations["append_messages"][0]["content"]


def _victims_left_out(reads: dict[str, Resp], ids: dict[str, str]) -> None:
    bad = set(ids.values())
    listed = reads["list_all"].body
    assert {d["id"] for d in listed["damaged"]} == bad and all(d["reason"] for d in listed["damaged"])
    assert not bad & {m["id"] for m in listed["memories"]}
    assert {H_TEA, H_BILLING, H_DEPLOY} <= {m["text"] for m in listed["memories"]}
    paged = [m["id"] for p in reads["pages"].body for m in p["memories"]]
    paged_bad = [d["id"] for p in reads["pages"].body for d in p.get("damaged", [])]
    assert len(paged) == len(set(paged)) == 3 and set(paged_bad) == bad  # every record once across pages
    lines = [json.loads(x) for x in reads["export"].body.splitlines()]
    assert {x["id"] for x in lines if x.get("damaged")} == bad
    assert reads["export"].headers["x-cairn-damaged"] == str(len(bad))
    history = [json.loads(x) for x in reads["export_history"].body.splitlines()]
    assert {x["id"] for x in history if x.get("damaged")} == bad
    for name in ("recall", "recall_all", "preview"):
        assert not bad & {m["memory"]["id"] for m in reads[name].body["memories"]}, name
    # as_of ranks each memory's newest readable revision: a victim's earlier, healthy one
    assert all(m["memory"]["text"].startswith("Victim") for m in reads["recall_as_of"].body["memories"]
               if m["memory"]["id"] in bad)


def test_bank_records_poisoned_at_rest(client):
    """Every poison value in a bank memory's current record and newest revision: the warm index
    catches up past them, a cold one rebuilds without them, every read answers, a direct read
    is 409 ``damaged``, history still answers, and a tombstone, a purge, a save of the same text
    and an import each replace a damaged record."""
    o = Org(client)
    ids = seed_bank(o, list(RECORD_POISONS))
    assert o.post("/v1/banks/main/recall", {"query": QUERY}).status == 200  # a warm index
    poison_memories(o, ids, RECORD_POISONS)
    for cold in (False, True):
        if cold:
            drop_caches()
        reads = read_bank(o)
        served(reads)
        _victims_left_out(reads, ids)
    for name, mid in ids.items():
        r = o.get(f"/v1/banks/main/memories/{mid}")
        assert r.status == 409 and r.body["code"] == "damaged" and r.body["details"]["id"] == mid, (name, r.body)
        h = o.get(f"/v1/banks/main/memories/{mid}/history")
        assert h.status == 200 and h.body["damaged"][0]["id"] == mid and h.body["revisions"], name
        assert o.call("PATCH", f"/v1/banks/main/memories/{mid}", {"pinned": True}).body["code"] == "damaged"
    # repairs: a tombstone, a purge, the same text saved again, an import line of that id
    names = list(ids)
    for name in names[:-3]:
        r = o.call("DELETE", f"/v1/banks/main/memories/{ids[name]}")
        assert r.status == 200 and r.body["memory"]["invalid_at"], (name, r.body)
    assert o.post(f"/v1/banks/main/memories/{ids[names[-3]]}/purge").status == 200
    again = o.post("/v1/banks/main/memories", {"text": f"Victim {names[-2]}: Alice also drinks green tea"})
    assert again.status == 201 and again.body["memory"]["id"] == ids[names[-2]], again.body
    line = json.dumps({"id": ids[names[-1]], "text": "Alice drinks oolong on Sundays", "revision": 0})
    assert o.post("/v1/banks/main/import", raw=line.encode(), ctype="application/x-ndjson").body["imported"] == 1
    after = o.get("/v1/banks/main/memories?include_superseded=true&limit=500").body
    assert "damaged" not in after and len(after["memories"]) == 3 + len(ids)
    drop_caches()
    served(read_bank(o))


def test_bank_entities_lone_surrogate_keeps_the_bank_up_and_tombstone_recovers(client):
    """Regression: a lone surrogate stored in a bank memory's ``entities`` made the bank's list,
    export, recall, preview and pre-generate hook fail, and tombstoning did not recover it."""
    o = Org(client)
    ids = seed_bank(o, ["lone_surrogate_entity"])
    poison_memories(o, ids, RECORD_POISONS)
    drop_caches()
    reads = read_bank(o)
    served(reads)
    _victims_left_out(reads, ids)
    assert o.call("DELETE", f"/v1/banks/main/memories/{ids['lone_surrogate_entity']}").status == 200
    assert "damaged" not in o.get("/v1/banks/main/memories?include_superseded=true").body
    assert "x-cairn-damaged" not in o.get("/v1/banks/main/export").headers


def test_integers_beyond_2_63_keep_recall_preview_and_hook_up(client):
    """Regression: integers of 2^63 and beyond (corroboration, times, revision) in a record
    made the index fail, so recall, preview and the hook answered 500 from then on."""
    o = Org(client)
    poisons = {
        "corroboration": lambda r: {"record": js({**r, "corroboration": 2**63})},
        "created_at": lambda r: {"record": js({**r, "created_at": 2**63})},
        "updated_at": lambda r: {"record": js({**r, "updated_at": 2**64})},
        "revision": lambda r: {"record": js({**r, "revision": 2**63}), "revision": {"N": str(2**63)}},
    }
    ids = seed_bank(o, list(poisons))
    poison_memories(o, ids, poisons)
    for _ in range(2):
        drop_caches()
        reads = read_bank(o)
        served(reads)
        _victims_left_out(reads, ids)
    for mid in ids.values():  # a tombstone repairs even a stored revision of 2^63
        assert o.call("DELETE", f"/v1/banks/main/memories/{mid}").status == 200
    assert "damaged" not in o.get("/v1/banks/main/memories?include_superseded=true").body


def test_control_characters_at_rest_are_served(client):
    """Control characters (NUL included) are valid scalar values: a record holding them is no
    damage, it is listed, exported, indexed and recalled like any other."""
    o = Org(client)
    ids = seed_bank(o, [])
    text = "Alice keeps green tea\x00 in a\x07 tin\x1b"
    mid = fingerprint(H_TEA)
    key = {"bank_key": {"S": bank_inc(o.org, "main")}, "sk": {"S": mid}}
    plant("memories", key, {"record": js({**raw_record("memories", key), "text": text})})
    drop_caches()
    reads = read_bank(o)
    assert not ids and "damaged" not in reads["list_all"].body
    assert text in [m["memory"]["text"] for m in reads["recall"].body["memories"]]


BANK_ROW_POISONS = {
    "counter_wrong_type": {"memories": {"S": "many"}},
    "counter_2_63": {"records": {"N": str(2**63)}, "pinned": {"N": "-9223372036854775809"}},
    "huge_number": {"rules_version": {"N": "1e100"}},
    "description_wrong_type": {"description": {"N": "5"}},
    "seq_wrong_type": {"seq": {"S": "seven"}},
    "incarnation_missing": {"incarnation": None},
}


@pytest.mark.parametrize("poison", list(BANK_ROW_POISONS))
def test_bank_row_poisoned_at_rest(client, poison):
    """A hand-edited bank row: counters and description read as defaults; a row whose
    ``seq`` or ``incarnation`` cannot be used answers 409 ``damaged`` on the bank's routes, while
    the hook degrades to the bare section and the org's other banks are untouched."""
    o = Org(client)
    seed_bank(o, [])
    seed_bank(o, [], bank="other")
    plant("banks", {"org_id": {"S": o.org}, "name": {"S": "main"}}, BANK_ROW_POISONS[poison])
    drop_caches()
    reads = read_bank(o)
    assert reads["banks"].status == 200 and {b["name"] for b in reads["banks"].body["banks"]} == {"main", "other"}
    assert reads["hook"].status == 200
    if poison in ("seq_wrong_type", "incarnation_missing"):
        for name in ("recall", "preview", "list_all", "export"):
            assert reads[name].status == 409 and reads[name].body["code"] == "damaged", name
        assert reads["hook"].body["mutations"]["append_messages"] == []
    else:
        served(reads)
    other = o.post("/v1/banks/other/recall", {"query": QUERY})
    assert H_TEA in [m["memory"]["text"] for m in other.body["memories"]]


# --- structured memories ------------------------------------------------------------------------

def seed_structured(o: Org, victims: list[str], scopes: tuple[str, ...] = ("global",)) -> dict[tuple[str, str], str]:
    """Healthy global and user memories and, per name and scope, a victim named ``v_<name>``:
    ``{(name, scope): memory id}`` (ids fixed by the import lines)."""
    import uuid
    rows = [{"name": "deploy_process", "content": "Deploy via the blue pipeline.", "description": "How we deploy",
             "type": "reference", "scope": "global", "scope_id": ""},
            {"name": "tea", "content": H_TEA, "description": "Alice's tea", "scope": "user", "scope_id": o.user}]
    ids = {}
    for n in victims:
        for scope in scopes:
            ids[n, scope] = str(uuid.uuid4())
            rows.append({"memory_id": ids[n, scope], "name": f"v_{n}",
                         "content": "Victim: deploy via the red pipeline.", "description": "deploy victim",
                         "scope": scope, "scope_id": "" if scope == "global" else o.user})
    r = o.post("/v1/api/admin/memories/import", raw=b"\n".join(json.dumps(x).encode() for x in rows),
               ctype="application/x-ndjson")
    assert r.status == 200 and r.body["imported"] == len(rows), r.body
    return ids


def poison_structured(o: Org, ids: dict[tuple[str, str], str], poisons: dict[str, Any]) -> None:
    for (name, scope), mid in ids.items():
        ns = "!scope/global/" if scope == "global" else f"!scope/user/{o.user}"
        key = {"bank_key": {"S": bank_inc(o.org, ns)}, "sk": {"S": mid}}
        plant("memories", key, poisons[name](raw_record("memories", key)))


def read_structured(o: Org) -> dict[str, Resp]:
    session = o.post("/v1/api/sessions", {"kind": "interactive"})
    assert session.status == 201, session.body
    sid = session.body["session_id"]
    tool = f"/v1/api/sessions/{sid}/memory"
    return {
        "list": o.get("/v1/api/memories"), "list_user": o.get("/v1/api/memories?scope=user"),
        "list_global": o.get("/v1/api/memories?scope=global"),
        "search": o.post("/v1/api/memories/search", {"query": "deploy pipeline tea"}),
        "get": o.get("/v1/api/memories/deploy_process"),
        "admin_list": o.get("/v1/api/admin/memories"), "admin_search": o.get("/v1/api/admin/memories/search?q=deploy"),
        "tool_list": o.post(tool, {"action": "list"}),
        "tool_search": o.post(tool, {"action": "search", "query": "deploy"}),
        "context": o.post(f"/v1/api/sessions/{sid}/context",
                          {"messages": [{"role": "user", "content": "how do we deploy?"}]}),
        "audit": o.get("/v1/api/admin/audit"),
    }


def test_structured_records_poisoned_at_rest(client):
    """Every poison value in a global structured memory: lists leave them out and count them in
    ``X-Cairn-Damaged`` (the body stays Turnstone's shape), search and the session context rank
    the rest, a direct read is 409 ``damaged``, and a delete or an upsert of that name replaces
    the record."""
    o = Org(client)
    ids = seed_structured(o, list(RECORD_POISONS))
    drop_caches()
    poison_structured(o, ids, RECORD_POISONS)
    n = str(len(ids))
    reads = read_structured(o)
    for name, r in reads.items():
        assert r.status == 200, (name, r.body)
    for name in ("list", "list_global", "admin_list", "tool_list"):
        assert reads[name].headers["x-cairn-damaged"] == n, name
        body = reads[name].body
        assert set(body) == {"memories", "total"} and "deploy_process" in {m["name"] for m in body["memories"]}
        assert not {m["name"] for m in body["memories"]} - {"deploy_process", "tea"}
    assert "x-cairn-damaged" not in reads["list_user"].headers
    assert "deploy_process" in [m["name"] for m in reads["search"].body["memories"]]
    assert "Deploy via the blue pipeline." in reads["context"].body["system_message"]
    for (name, _scope), mid in ids.items():  # noqa: B007 - the last id is used after the loop
        r = o.get(f"/v1/api/memories/v_{name}")
        assert r.status == 409 and r.body["code"] == "damaged", (name, r.body)
    assert o.get(f"/v1/api/admin/memories/{mid}").status == 409
    names = [name for name, _scope in ids]
    for name in names[::2]:
        assert o.call("DELETE", f"/v1/api/memories/v_{name}").status == 200, name
    for name in names[1::2]:
        r = o.post("/v1/api/memories", {"name": f"v_{name}", "content": "Repaired.", "description": "fixed"})
        assert r.status == 200, (name, r.body)
    after = o.get("/v1/api/admin/memories")
    assert "x-cairn-damaged" not in after.headers and len(after.body["memories"]) == 2 + len(names[1::2])


def test_structured_lone_surrogate_keeps_lists_and_search_up(client):
    """Regression: a lone surrogate stored in a structured memory's content or description made
    the org's admin list, every user's list in global scope and search drop the connection or
    answer 500."""
    o = Org(client)
    poisons = {"content": lambda r: {"record": js({**r, "text": r["text"] + "\ud800"})},
               "description": lambda r: {"record": js({**r, "description": "\udfff" + r["description"]})}}
    ids = seed_structured(o, list(poisons), scopes=("global", "user"))
    drop_caches()
    poison_structured(o, ids, poisons)
    other = Org(client, user="bob", org=o.org, permissions=["memory:read", "memory:write"])
    reads = read_structured(o)
    for name in ("list", "list_global", "list_user", "admin_list", "search", "admin_search"):
        assert reads[name].status == 200, (name, reads[name].body)
    assert reads["list"].headers["x-cairn-damaged"] == reads["admin_list"].headers["x-cairn-damaged"] == "4"
    lst = other.get("/v1/api/memories")
    assert lst.status == 200 and lst.headers["x-cairn-damaged"] == "2"
    assert [m["name"] for m in lst.body["memories"]] == ["deploy_process"]
    assert other.post("/v1/api/memories/search", {"query": "deploy pipeline"}).status == 200


def test_structured_objects_tokens_and_audit_poisoned_at_rest(client):
    """A memory's location item (touch counters, data), a session, an audit event and a token
    row edited by hand: the routes that read them answer without a 5xx (the session is 409
    ``damaged``, the damaged token never authenticates and lists as ``damaged``) and the rest of
    the org works."""
    from chalicelib.auth.tokens import token_id_for
    o = Org(client)
    seed_structured(o, [])
    tea = o.get("/v1/api/memories/tea?scope=user").body["memory_id"]
    session = o.post("/v1/api/sessions", {"kind": "interactive"}).body["session_id"]
    victim = mint(org=o.org, user_id="carol", permissions=["memory:read"])
    audit = ddb().query(TableName=table("audit"), KeyConditionExpression="org_id = :o",
                        ExpressionAttributeValues={":o": {"S": o.org}}, Limit=1)["Items"][0]
    org = {"org_id": {"S": o.org}}
    plant("structured", {**org, "sk": {"S": f"mem#{tea}"}},
          {"data": {"S": "{broken"}, "access_count": {"S": "lots"}, "last_accessed": {"N": str(2**63)}})
    plant("structured", {**org, "sk": {"S": f"session#{session}"}},
          {"data": js({"session_id": session, "kind": "interactive", "user_id": "\ud800"})})
    plant("audit", {**org, "sk": audit["sk"]}, {"details": {"S": "not a map"}, "at": {"S": "noon"}})
    plant("tokens", {"token_id": {"S": token_id_for(victim)}},
          {"permissions": {"S": "all"}, "expires_at": {"N": str(2**63)}, "last_used_at": {"S": "x"}})
    reads = read_structured(o)
    for name, r in reads.items():
        assert r.status == 200, (name, r.body)
    tea_row = next(m for m in reads["list_user"].body["memories"] if m["name"] == "tea")
    assert tea_row["access_count"] == 0 and tea_row["last_accessed"] == ""
    tool = o.post(f"/v1/api/sessions/{session}/memory", {"action": "list"})
    assert tool.status == 409 and tool.body["code"] == "damaged", tool.body
    tokens = o.get("/v1/api/admin/tokens")
    assert tokens.status == 200
    assert [t.get("damaged") for t in tokens.body["tokens"] if t["token_id"] == token_id_for(victim)] == [True]
    assert o.get("/v1/api/memories", token=victim).status == 401


def test_idempotency_and_extraction_rows_poisoned_at_rest(client):
    """A stored Idempotency-Key response that cannot be read is refused with a 409 naming the
    header (never replayed, never a 5xx); a hand-edited extraction cursor is overwritten by the
    next finished turn."""
    o = Org(client)
    seed_bank(o, [])

    def save_with_key():
        return o.client.http.post("/v1/banks/main/memories", body=json.dumps({"text": "Dan likes mate"}),
                                  headers={"Authorization": f"Bearer {o.token}", "Content-Type": "application/json",
                                           "Idempotency-Key": "k-1"})

    assert save_with_key().status_code == 201
    item = ddb().scan(TableName=table("idempotency"))["Items"][0]
    plant("idempotency", {"key": item["key"]}, {"body": {"S": "{torn"}})
    r = save_with_key()
    assert r.status_code == 409 and json.loads(r.body)["details"]["field"] == "Idempotency-Key"
    turn = {"session_id": "s1", "turn_id": "t1", "metadata": {"memory_bank": "main"},
            "messages": [{"role": "user", "content": "Remember that I prefer window seats."},
                         {"role": "assistant", "content": "Noted."}]}
    assert o.post("/v1/hooks/turn-completed", turn).status == 202
    key = {"session_key": {"S": f"{o.org}#s1"}, "sk": {"S": "cursor"}}
    plant("extraction", key, {"position": {"S": "two"}, "turns": {"S": "t1"}, "updated_at": {"S": "later"}})
    again = o.post("/v1/hooks/turn-completed", {**turn, "turn_id": "t2", "messages": [
        *turn["messages"], {"role": "user", "content": "Remember that my dog is called Rex."}]})
    assert again.status == 202 and "outcome" in again.body, again.body  # the job ran inline
    cursor = ddb().get_item(TableName=table("extraction"), Key=key, ConsistentRead=True)["Item"]
    assert set(cursor["position"]) == {"N"} and set(cursor["updated_at"]) == {"N"}  # rewritten whole


# --- team memory --------------------------------------------------------------------------------

MEM = "/api/v1/context/memory"
ENTRY_POISONS = {  # one draft entry each: attributes of its row
    "doc_invalid_json": {"doc": {"S": "{nope"}},
    "doc_missing_title": {"doc": js({"classification": "internal"})},
    "time_2_63": {"created_at": {"N": str(2**63)}},
    "status_unknown": {"status": {"S": "lost"}},
    "counter_wrong_type": {"log_seq": {"S": "1"}},
}


class Team:
    """A space where alice writes and bob accepts, in org ``o``."""

    def __init__(self, o: Org) -> None:
        self.o = o
        self.alice = mint(org=o.org, user_id="alice", permissions=[])
        self.bob = mint(org=o.org, user_id="bob", permissions=[])
        self.space = o.post("/api/v1/context/spaces", {"name": "Platform"}).body["id"]
        for u in ("alice", "bob"):
            r = o.call("PUT", f"/api/v1/context/spaces/{self.space}/members/{u}",
                       {"permissions": ["context:space:read", "context:space:write"]})
            assert r.status == 200, r.body

    def entry(self, title: str, text: str | None = None, accept: bool = False) -> str:
        from tests.api.team_support import Editor, b64
        o = self.o
        eid = o.post(f"{MEM}/entries", {"spaceId": self.space, "kind": "decision", "title": title},
                     token=self.alice).body["id"]
        if text is not None:
            ed = Editor()
            ed.load(o.get(f"{MEM}/entries/{eid}", token=self.alice).body["snapshot"])
            r = o.post(f"{MEM}/entries/{eid}/updates", {"updateId": f"update-{eid}", "update": b64(ed.insert(0, text))},
                       token=self.alice)
            assert r.status == 200, r.body
        if accept:
            sha = o.get(f"{MEM}/entries/{eid}", token=self.bob).body["documentSha256"]
            assert o.post(f"{MEM}/entries/{eid}/accept", {"documentSha256": sha}, token=self.bob).status == 200
        return eid

    def reads(self, eid: str, token: str) -> None:
        """The read routes of one entry and of the space, as ``token`` and as the admin."""
        o = self.o
        for path in (f"{MEM}/entries/{eid}/history", f"{MEM}/entries/{eid}/updates?sinceSeq=0",
                     f"{MEM}/entries/{eid}/updates?stateVector=AA"):
            o.get(path, token=token)
        for path in (f"{MEM}/attributions?spaceId={self.space}", f"/api/v1/context/spaces/{self.space}",
                     "/api/v1/context/deny-rules"):
            o.get(path)

    def retrieves(self, eid: str, token: str) -> None:
        got = self.o.post(f"{MEM}/retrieve", {"spaceIds": [self.space], "query": "where do orders live"}, token=token)
        assert got.status == 200 and eid in [r["entryId"] for r in got.body["results"]], got.body


def _entry_key(o: Org, eid: str) -> dict[str, Any]:
    return {"org_id": {"S": o.org}, "entry_id": {"S": eid}}


def test_team_entries_poisoned_at_rest(client):
    """Team entry rows, their edit log and their S3 ``state.bin``, retrieval projections and
    attribution rows edited by hand: a damaged entry reads as 409 ``damaged`` (the list leaves it
    out and counts it in ``X-Cairn-Damaged``), archiving it works or is a 4xx, the good entry and
    retrieval still work, nothing is a 5xx."""
    o = Org(client)
    t = Team(o)
    good = t.entry("Orders", "Orders live in Postgres 16.", accept=True)
    rows = {name: t.entry(f"victim {name}") for name in ENTRY_POISONS}
    state = t.entry("state victim", "Invoices live in Postgres.")
    payload = t.entry("payload victim", "Refunds live in Postgres.")
    projected = t.entry("projection victim", "Orders also live in Redis.", accept=True)
    drop_caches()
    for name, attrs in ENTRY_POISONS.items():
        plant("team_entries", _entry_key(o, rows[name]), attrs)
    s3().put_object(Bucket=bucket(), Key=f"{o.org}/entries/{state}/state.bin", Body=b"\xff" * 40)
    plant("team_entries", _entry_key(o, state), {"compacted_seq": {"N": "1"}})
    plant("team_updates", {"entry_key": {"S": f"{o.org}#{payload}"}, "sk": {"S": "seq#000000000001"}},
          {"payload": {"B": b"garbage"}, "at": {"S": "noon"}})
    pkey = {"bank_key": {"S": bank_inc(o.org, f"!space/{t.space}")}, "sk": {"S": projected}}
    plant("memories", pkey, {"record": js({**raw_record("memories", pkey), "text": "Orders \ud800"})})
    ddb().put_item(TableName=table("team_attributions"), Item={
        "space_key": {"S": f"{o.org}#{t.space}"}, "sk": {"S": "9999999999999#att_x"},
        "attribution_id": {"S": "att_x"}, "actor": {"S": "x"}, "entries": {"S": "{"}, "at": {"N": str(2**63)}})

    lst = o.get(f"{MEM}/entries?spaceId={t.space}", token=t.alice)
    assert lst.status == 200 and lst.headers["x-cairn-damaged"] == str(len(ENTRY_POISONS))
    assert {e["id"] for e in lst.body["entries"]} == {good, state, payload, projected}
    assert o.get(f"{MEM}/entries/{good}", token=t.alice).body["text"] == "Orders live in Postgres 16."
    for eid in [*rows.values(), state, payload]:
        r = o.get(f"{MEM}/entries/{eid}", token=t.alice)
        assert r.status == 409 and r.body["code"] == "damaged", r.body
    for eid in (rows["doc_invalid_json"], state, payload):
        t.reads(eid, t.alice)
    t.retrieves(good, t.alice)
    for eid in [*rows.values(), state, payload, projected]:
        assert o.post(f"{MEM}/entries/{eid}/archive", token=t.bob).status in (200, 409)
    assert o.get(f"{MEM}/entries/{projected}", token=t.alice).body["status"] == "archived"
    t.retrieves(good, t.alice)


def test_team_access_rows_poisoned_at_rest(client):
    """A hand-edited membership grants nothing (the member reads 404 like any non-member); a
    deny-rule row that cannot be read refuses every team read with 409 ``damaged`` rather than
    ignore the rules; neither is a 5xx."""
    o = Org(client)
    t = Team(o)
    good = t.entry("Orders", "Orders live in Postgres 16.", accept=True)
    plant("team_spaces", {"org_id": {"S": o.org}, "sk": {"S": f"member#{t.space}#bob"}}, {"data": {"S": "[oops"}})
    assert o.get(f"{MEM}/entries/{good}", token=t.bob).status == 404
    assert o.get(f"{MEM}/entries/{good}", token=t.alice).status == 200
    t.retrieves(good, t.alice)
    o.call("PUT", "/api/v1/context/deny-rules", {"rules": [{"memberId": "carol"}]})
    plant("team_spaces", {"org_id": {"S": o.org}, "sk": {"S": "deny"}}, {"data": js({"rules": ["carol"]})})
    r = o.get(f"{MEM}/entries/{good}", token=t.alice)
    assert r.status == 409 and r.body["code"] == "damaged"
    assert o.get("/api/v1/context/deny-rules").status == 409
    t.reads(good, t.alice)


# --- S3 objects ---------------------------------------------------------------------------------

def _snapshot(o: Org) -> str:
    from chalicelib.search.recall import rebuild
    return rebuild(o.org, "main").snapshot


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return zstandard.ZstdCompressor().compress(buf.getvalue())


def _rewrite_snapshot(o: Org, change) -> None:
    key = _snapshot(o)
    data = s3().get_object(Bucket=bucket(), Key=key)["Body"].read()
    s3().put_object(Bucket=bucket(), Key=key, Body=change(o, data))


S3_POISONS = {
    "rule_invalid_utf8": lambda o: s3().put_object(Bucket=bucket(), Key=f"{o.org}/banks/main/rules/notes.md",
                                                   Body=b"caf\xe9 \xed\xa0\x80 notes \xff"),
    "snapshot_garbage": lambda o: _rewrite_snapshot(o, lambda o, d: b"\x00garbage" * 10),
    "snapshot_truncated_zstd": lambda o: _rewrite_snapshot(o, lambda o, d: d[: len(d) // 2]),
    "snapshot_zstd_not_tar": lambda o: _rewrite_snapshot(o, lambda o, d: zstandard.compress(b"not a tar")),
    "snapshot_gzip_under_zstd_name": lambda o: _rewrite_snapshot(o, lambda o, d: gzip.compress(d)),
    # a frame that does not state its size, and one whose size is implausible (a bomb): refused
    "snapshot_zstd_size_unstated": lambda o: _rewrite_snapshot(o, lambda o, d: zstandard.ZstdCompressor(
        write_content_size=False).compress(zstandard.decompress(d))),
    "snapshot_zstd_bomb": lambda o: _rewrite_snapshot(o, lambda o, d: zstandard.compress(
        zstandard.decompress(d) + bytes(200 * len(d)))),
    "snapshot_without_index": lambda o: _rewrite_snapshot(o, lambda o, d: _tar({"cairn.json": json.dumps(
        {"org_id": o.org, "bank": "main", "inc": bank_inc(o.org, "main"), "seq": 1}).encode()})),
    "snapshot_meta_invalid_utf8": lambda o: _rewrite_snapshot(o, lambda o, d: _tar({"cairn.json": b"\xff\xfe{"})),
    "snapshot_segments_truncated": lambda o: _rewrite_snapshot(o, lambda o, d: _tar(
        {m.name: (data if m.name.endswith((".json", ".toc")) else data[: len(data) // 3])
         for m, data in _members(d)})),
    "import_upload_invalid_utf8": lambda o: s3().put_object(Bucket=bucket(), Key=f"{o.org}/imports/main/up.jsonl",
                                                            Body=b'{"text": "caf\xe9 au lait"}\n\x1f\x8b\x08'),
}


def _members(data: bytes) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(zstandard.decompress(data)), mode="r:") as tar:
        return [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]


@pytest.mark.parametrize("poison", list(S3_POISONS))
def test_s3_objects_poisoned_at_rest(client, poison):
    """A rule file with invalid UTF-8 is served with U+FFFD and the other rules still inject; a
    corrupt index snapshot (garbage, truncated zstd, another codec, a frame of no or an implausible
    size, a foreign or incomplete tarball, truncated segments) is skipped and the index rebuilt
    from DynamoDB; an uploaded import file with invalid UTF-8 reports bad lines. Recall, preview
    and the hook serve the bank throughout."""
    from chalicelib.search import index
    o = Org(client)
    seed_bank(o, [])
    S3_POISONS[poison](o)
    drop_caches()
    rebuilds = index.active_cache().counters["rebuilds"]
    reads = {"recall": o.post("/v1/banks/main/recall", {"query": QUERY}),
             "recall_all": o.post("/v1/banks/main/recall", {"query": QUERY, "include_superseded": True}),
             "recall_as_of": o.post("/v1/banks/main/recall", {"query": QUERY, "as_of": 4102444800000}),
             "preview": o.post("/v1/banks/main/preview", {"query": QUERY}),
             "hook": o.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": QUERY}],
                                                      "metadata": {"memory_bank": "main"}}),
             "rules": o.get("/v1/banks/main/rules")}
    served(reads)
    if poison.startswith("snapshot"):
        assert index.active_cache().counters["rebuilds"] == rebuilds + 1  # skipped, then rebuilt
    if poison == "rule_invalid_utf8":
        notes = {r["name"]: r["content"] for r in reads["rules"].body["rules"]}["notes"]
        assert notes.startswith("caf\ufffd") and "notes" in notes
        assert "notes \ufffd" in reads["hook"].body["mutations"]["system_prompt_append"]
    if poison == "import_upload_invalid_utf8":
        r = o.post("/v1/banks/main/import", {"s3_key": "imports/main/up.jsonl"})
        assert r.status == 200 and r.body["imported"] == 0 and len(r.body["errors"]) == 2, r.body


def test_unparsable_memory_toml_takes_no_read_route_down(client):
    """An unparsable ``config/memory.toml`` in the bucket (invalid TOML, invalid UTF-8): recall,
    preview, structured search and the hook answer without a 5xx, the hook with the rules."""
    from chalicelib.tuning import get_tuning
    o = Org(client)
    seed_bank(o, [])
    s3().put_object(Bucket=bucket(), Key="config/memory.toml", Body=b"[memory\nfetch_limit = \xff")
    get_tuning.cache_clear()
    for path, body in (("/v1/banks/main/recall", {"query": QUERY}), ("/v1/banks/main/preview", {"query": QUERY}),
                       ("/v1/api/memories/search", {"query": "tea"})):
        o.post(path, body)
    hook = o.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": QUERY}],
                                             "metadata": {"memory_bank": "main"}})
    assert "Answer briefly." in hook.body["mutations"]["system_prompt_append"]
