"""Purge forgets: after a purge the old id answers 404, no stored key or value holds the id or the
text (every item of every table, every S3 object inflated, every file of the recall index caches
of two containers), saving the text again behaves exactly like new text, the audit event keeps who
and when with a keyed digest, and an auditor who can read the trail cannot guess the text back.
A retried save answers what is true now (404 after a purge or once its bank is trashed)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zlib
from pathlib import Path

import boto3
import pytest
import zstandard
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from chalicelib.fingerprint import fingerprint
from infra.local import motolock
from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump

SECRET = "The vault code is zebra-4471-quokka."
NEEDLES = ("zebra-4471", "quokka")  # never hex: no id or digest holds one by chance
M = "/v1/banks/vault/memories"


def _inflated(data: bytes) -> list[bytes]:
    """``data`` and whatever it holds compressed: a zstd frame, gzip, a tar, zlib streams
    (Whoosh's record column keeps records in zlib blocks)."""
    out = [data]
    for opener in (lambda d: zstandard.ZstdDecompressor().decompress(d, max_output_size=1 << 26), gzip.decompress):
        try:
            out += _inflated(opener(data))
        except Exception:  # noqa: BLE001 - not that codec
            continue
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for m in tar.getmembers():
                f = tar.extractfile(m)
                if f is not None:
                    out += _inflated(f.read())
    except Exception:  # noqa: BLE001 - not a tar
        pass
    for i in range(len(data) - 1):
        if data[i] == 0x78 and data[i + 1] in (0x01, 0x5E, 0x9C, 0xDA):
            try:
                out.append(zlib.decompressobj().decompress(data[i:]))
            except zlib.error:
                continue
    return out


def everything(bucket: str, roots: list[Path]) -> dict[str, bytes]:
    """Every item of every table (usage included), every object of the bucket and every file
    under ``roots``, by where it is: ``{place: bytes}``, compressed content inflated beside."""
    out: dict[str, bytes] = {}
    with motolock.lock():
        for name, table in dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables.items():
            for n, it in enumerate(table.all_items()):
                out[f"{name}#{n}"] = json.dumps({k: v.to_regular_json() for k, v in it.attrs.items()},
                                                ensure_ascii=False, default=lambda b: b.hex()).encode()
    s3 = boto3.client("s3", region_name="us-east-1")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            out[f"s3:{o['Key']}"] = o["Key"].encode() + b"\n" + b"\n".join(_inflated(body))
    for root in roots:
        for p in root.rglob("*"):
            if p.is_file():
                out[f"file:{p}"] = str(p).encode() + b"\n" + b"\n".join(_inflated(p.read_bytes()))
    return out


def holding(data: dict[str, bytes], needle: str | bytes) -> list[str]:
    n = needle.encode() if isinstance(needle, str) else needle
    return sorted(k for k, v in data.items() if n in v)


def _vector_forms() -> tuple[bytes, str]:
    """A run of the secret's stored vector codes as the index keeps them (raw bytes) and as the
    table dump shows a binary attribute (hex): the vector is the text's too."""
    from chalicelib import semantic
    from chalicelib.core import vectors
    [vec] = semantic.embed_documents([SECRET])
    codes = vectors.decode(vectors.encode(vec, SECRET)).codes[:32]
    return codes, codes.hex()


@pytest.fixture
def two_containers(tmp_path):
    """Two recall index caches with their own roots: two Lambda containers sharing only DynamoDB
    and S3."""
    from chalicelib.search.index import IndexCache
    return IndexCache(root=str(tmp_path / "a")), IndexCache(root=str(tmp_path / "b"))


def _recall(api, cache, query="vault code quokka"):
    from chalicelib.search.index import using
    with using(cache):
        s, r = api.post("/v1/banks/vault/recall", {"query": query, "include_superseded": True})
    assert s == 200, r
    return [x["memory"]["id"] for x in r["memories"]]


def _seed(api, aws, monkeypatch, two_containers):
    """The secret memory in every place a memory's id or text goes: extracted from a turn
    (provenance, cursor, a job's progress), reinforced with an Idempotency-Key, pinned and
    unpinned, superseding another memory, in both containers' indexes, an index snapshot and a
    large export."""
    from chalicelib.extraction import store as xstore
    from chalicelib.search import recall
    from chalicelib.search.index import using
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    s, b = api.post("/v1/hooks/turn-completed", {
        "session_id": "s-vault", "turn_id": "t1", "metadata": {"memory_bank": "vault"},
        "messages": [{"role": "user", "content": "Remember that the vault code is zebra-4471-quokka."}]})
    assert s == 202 and b["outcome"]["saved"] == 1, b
    mid = fingerprint(SECRET)
    p = xstore.get_progress("default", "s-vault", "t2")
    xstore.mark_applied(p, mid)  # a job cut short keeps its progress row
    s, b = api.post(M, {"text": SECRET, "entities": ["zebra-entity"], "tags": ["quokka-tag"]},
                    headers={"Idempotency-Key": "save-secret-1"})
    assert s == 200 and b["memory"]["id"] == mid, b
    assert api.post(f"{M}/{mid}/pin", {"pinned": True})[0] == 200
    assert api.post(f"{M}/{mid}/pin", {"pinned": False})[0] == 200
    s, old = api.post(M, {"text": "The vault code used to be written on a card"})
    assert api.post(f"{M}/{old['memory']['id']}/supersede", {"superseded_by": mid})[0] == 200
    api.post(M, {"text": "An unrelated memory about zebras"})
    for cache in two_containers:
        assert mid in _recall(api, cache)
    with using(two_containers[0]):
        recall.rebuild("default", "vault")  # and its snapshot
    monkeypatch.setenv("CAIRN_EXPORT_INLINE_BYTES", "10")
    assert set(api.get("/v1/banks/vault/export?history=true")[1]) == {"url", "expires_at"}
    monkeypatch.delenv("CAIRN_EXPORT_INLINE_BYTES")
    seen = everything(aws["CAIRN_BUCKET"], [Path(c.root) for c in two_containers])
    for needle in (*NEEDLES, mid, *_vector_forms()):
        assert holding(seen, needle), f"the seed never stored {needle!r}"
    assert any(k.startswith("s3:default/indexes/") for k in holding(seen, mid))
    return mid, old["memory"]["id"]


def test_purge_leaves_neither_id_nor_text_anywhere(api, aws, monkeypatch, two_containers):
    from chalicelib.search.index import using
    mid, old = _seed(api, aws, monkeypatch, two_containers)
    plain = mint(user_id="bob", permissions=["memory:read", "memory:write"])
    s, e = api.post(f"{M}/{mid}/purge", token=plain)
    assert (s, e["code"]) == (403, "forbidden")

    with using(two_containers[0]):
        s, p = api.post(f"{M}/{mid}/purge")
    assert s == 200, p
    tomb = p["memory"]
    assert tomb["text"] == "" and tomb["entities"] == [] and tomb["tags"] == [] and tomb["purged_at"]
    assert tomb["id"] != mid
    # the other container reads the bank again: it rebuilds, and serves nothing of the memory
    assert mid not in _recall(api, two_containers[1]) and mid not in _recall(api, two_containers[0])
    data = everything(aws["CAIRN_BUCKET"], [Path(c.root) for c in two_containers])
    for needle in (*NEEDLES, mid, *_vector_forms()):
        assert holding(data, needle) == [], needle

    # the old id answers 404 everywhere; a purge of it again too
    for method, path in (("GET", f"{M}/{mid}"), ("GET", f"{M}/{mid}/history"), ("POST", f"{M}/{mid}/purge"),
                         ("DELETE", f"{M}/{mid}"), ("POST", f"{M}/{mid}/pin")):
        s, e = api.call(method, path, {"pinned": True} if path.endswith("/pin") else None)
        assert (s, e["code"]) == (404, "memory_not_found"), (method, path, e)
    # the tombstone and the memory it superseded name the tombstone's id, not the old one
    assert api.get(f"{M}/{tomb['id']}")[1]["memory"] == tomb
    assert api.get(f"{M}/{old}")[1]["memory"]["superseded_by"] == tomb["id"]
    history = api.get(f"{M}/{old}/history")[1]["revisions"]
    assert [r.get("superseded_by") for r in history] == [None, tomb["id"]]
    # the audit event keeps who and when, under the keyed digest
    s, ev = api.get("/v1/audit?action=memory.purge")
    [event] = ev["events"]
    assert event["actor"] == "person:admin" and event["target"] == f"vault/{tomb['id']}" and event["at"]

    # the text saved again behaves exactly like new text
    s, again = api.post(M, {"text": SECRET})
    assert s == 201 and again["created"] is True, again
    assert again["memory"]["id"] == mid and again["memory"]["revision"] == 0
    assert again["memory"]["corroboration"] == 0 and again["memory"]["pinned"] is False
    assert [r["op"] for r in api.get(f"{M}/{mid}/history")[1]["revisions"]] == ["create"]
    assert mid in _recall(api, two_containers[1])
    # and purged again, it gets a tombstone of its own
    s, p2 = api.post(f"{M}/{mid}/purge")
    assert s == 200 and p2["memory"]["id"] not in (mid, tomb["id"])
    assert api.get("/v1/banks/vault")[1]["bank"]["memories"] == 1  # the unrelated memory


def test_an_auditor_cannot_guess_a_purged_pin(api):
    """The reported attack: an auditor (``admin.memories`` without ``memory:read``) reads the
    trail and tries every 4-digit PIN against what it shows."""
    auditor = mint(user_id="audrey", permissions=["admin.memories"])
    s, b = api.post("/v1/banks/cards/memories", {"text": "My bank card PIN is 4821"})
    assert s == 201
    assert api.post(f"/v1/banks/cards/memories/{b['memory']['id']}/purge")[0] == 200
    s, trail = api.get("/v1/audit?limit=500", token=auditor)
    assert s == 200
    shown = json.dumps(trail)
    found = [pin for pin in range(10000) if fingerprint(f"My bank card PIN is {pin:04d}") in shown]
    assert found == []


def test_a_purge_cut_short_is_finished_by_the_next(api, aws, monkeypatch, two_containers):
    """The purge's transaction committed, then the run stopped before its clean-up: purging the
    old id again finishes it (and answers 404)."""
    from chalicelib.banks import service
    mid, _old = _seed(api, aws, monkeypatch, two_containers)
    with monkeypatch.context() as cut:
        cut.setattr(service, "_after_purge", lambda *a, **k: None)
        assert api.post(f"{M}/{mid}/purge")[0] == 200
    assert holding(everything(aws["CAIRN_BUCKET"], []), mid)  # its revisions, events, provenance
    s, e = api.post(f"{M}/{mid}/purge")
    assert (s, e["code"]) == (404, "memory_not_found")
    data = everything(aws["CAIRN_BUCKET"], [])
    for needle in (*NEEDLES, mid):
        assert holding(data, needle) == [], needle


def test_a_replay_answers_what_is_true_now(api):
    s, first = api.post(M, {"text": "The office opens at nine"}, headers={"Idempotency-Key": "k-purge"})
    assert s == 201 and first["created"] is True
    s, again = api.post(M, {"text": "The office opens at nine"}, headers={"Idempotency-Key": "k-purge"})
    assert (s, again) == (201, first)  # still true: the first answer
    assert api.post(f"{M}/{first['memory']['id']}/purge")[0] == 200
    before = dump()
    s, e = api.post(M, {"text": "The office opens at nine"}, headers={"Idempotency-Key": "k-purge"})
    assert (s, e["code"]) == (404, "memory_not_found"), e
    assert_unchanged(before)

    s, first = api.post("/v1/banks/temp/memories", {"text": "Temporary note"}, headers={"Idempotency-Key": "k-trash"})
    assert s == 201
    assert api.delete("/v1/banks/temp")[0] == 200
    before = dump()
    s, e = api.post("/v1/banks/temp/memories", {"text": "Temporary note"}, headers={"Idempotency-Key": "k-trash"})
    assert (s, e["code"]) == (404, "bank_not_found"), e
    assert_unchanged(before)
    # a new bank of that name is another bank: the retry still does not answer created
    assert api.post("/v1/banks", {"name": "temp"})[0] == 201
    s, e = api.post("/v1/banks/temp/memories", {"text": "Temporary note"}, headers={"Idempotency-Key": "k-trash"})
    assert (s, e["code"]) == (404, "bank_not_found"), e
