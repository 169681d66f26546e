"""Export and import of ``memories.jsonl``."""

import json

import boto3

from chalicelib.core.store import split_seq
from chalicelib.fingerprint import fingerprint

ND = {"Content-Type": "application/x-ndjson"}


def _lines(body):
    text = body.decode() if isinstance(body, bytes) else json.dumps(body)
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def _import(api, bank, lines, **kw):
    raw = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    return api.post(f"/v1/banks/{bank}/import", raw=raw, headers=ND, **kw)


def _seed(api):
    m = "/v1/banks/src/memories"
    _, a = api.post(m, {"text": "Exported live memory", "tags": ["x"]})
    _, b = api.post(m, {"text": "Exported then deleted"})
    api.patch(f"{m}/{a['memory']['id']}", {"pinned": True})
    api.delete(f"{m}/{b['memory']['id']}")
    return a["memory"]["id"], b["memory"]["id"]


def test_export_inline_current_and_history(api):
    a, b = _seed(api)
    s, body = api.get("/v1/banks/src/export")
    assert s == 200
    recs = {r["id"]: r for r in _lines(body)}
    assert set(recs) == {a, b}
    assert recs[a]["pinned"] is True and recs[a]["revision"] == 1 and "invalid_at" not in recs[a]
    assert recs[b]["invalid_at"]
    assert recs[a] == api.get(f"/v1/banks/src/memories/{a}")[1]["memory"]
    s, body = api.get("/v1/banks/src/export?history=true")
    revs = _lines(body)
    assert [(r["id"], r["revision"], r["op"]) for r in revs] == [
        (a, 0, "create"), (b, 0, "create"), (a, 1, "update"), (b, 1, "delete")]  # in commit-time order
    assert len({r["seq"] for r in revs}) == 4


def test_export_over_inline_limit_is_a_link(api, monkeypatch, aws):
    _seed(api)
    s, inline = api.get("/v1/banks/src/export")
    monkeypatch.setenv("CAIRN_EXPORT_INLINE_BYTES", str(len(inline) - 1))
    s, link = api.get("/v1/banks/src/export")
    assert s == 200 and set(link) == {"url", "expires_at"} and link["url"].startswith("https://")
    s3 = boto3.client("s3", region_name="us-east-1")
    objs = s3.list_objects_v2(Bucket=aws["CAIRN_BUCKET"], Prefix="default/exports/src/")["Contents"]
    assert len(objs) == 1
    assert s3.get_object(Bucket=aws["CAIRN_BUCKET"], Key=objs[0]["Key"])["Body"].read() == inline
    monkeypatch.setenv("CAIRN_EXPORT_INLINE_BYTES", str(len(inline)))
    s, again = api.get("/v1/banks/src/export")
    assert again == inline


def test_round_trip_into_a_new_bank(api):
    _seed(api)
    s, body = api.get("/v1/banks/src/export")
    recs = _lines(body)
    s, r = _import(api, "dst", recs)
    assert s == 200 and r == {"imported": 2, "skipped": 0, "errors": []}
    s, body2 = api.get("/v1/banks/dst/export")
    assert sorted(_lines(body2), key=lambda x: x["id"]) == sorted(recs, key=lambda x: x["id"])
    assert api.get("/v1/banks/dst")[1]["bank"]["memories"] == 1
    assert api.get("/v1/banks/dst")[1]["bank"]["pinned"] == 1
    # the fingerprint pointers came along: a save reinforces the imported memory
    s, b = api.post("/v1/banks/dst/memories", {"text": "exported live memory"})
    assert s == 200 and b["memory"]["corroboration"] == 1
    # re-importing the same file changes nothing: every line is skipped
    s, r = _import(api, "dst", recs)
    assert r == {"imported": 0, "skipped": 2, "errors": []}


def test_import_rules(api):
    t0 = 1_600_000_000_000
    lines = [
        {"text": "No id given here", "created_at": t0, "updated_at": t0 + 5},            # 1
        "{not json",                                                                      # 2
        {"id": "fp00000000000000aa", "text": "rev one", "revision": 1, "updated_at": t0}, # 3
        {"id": "fp00000000000000aa", "text": "rev three", "revision": 3, "updated_at": t0},  # 4 wins
        {"id": "fp00000000000000aa", "text": "rev two", "revision": 2, "updated_at": t0},  # 5
        {"id": "fp00000000000000bb", "text": "tie first", "revision": 0, "updated_at": t0},  # 6
        {"id": "fp00000000000000bb", "text": "tie later", "revision": 0, "updated_at": t0},  # 7 wins
        {"text": "x"},                                                                    # 8 too short
        "",                                                                               # 9 blank
        {"text": "too many tags", "tags": [f"t{i}" for i in range(9)]},                   # 10
        {"id": "nope", "text": "bad id"},                                                 # 11
        ["a list"],                                                                       # 12
        {"text": "bad confidence", "confidence": "sure"},                                 # 13
    ]
    s, r = _import(api, "imp", lines)
    assert s == 200, r
    assert r["imported"] == 3 and r["skipped"] == 3
    assert [e["line"] for e in r["errors"]] == [2, 8, 10, 11, 12, 13]
    assert all(isinstance(e["error"], str) and e["error"] for e in r["errors"])
    s, body = api.get("/v1/banks/imp/export")
    recs = {x["id"]: x for x in _lines(body)}
    assert set(recs) == {fingerprint("No id given here"), "fp00000000000000aa", "fp00000000000000bb"}
    first = recs[fingerprint("No id given here")]
    assert (first["created_at"], first["updated_at"]) == (t0, t0 + 5)
    assert recs["fp00000000000000aa"]["text"] == "rev three" and recs["fp00000000000000aa"]["revision"] == 3
    assert recs["fp00000000000000bb"]["text"] == "tie later"
    # nothing of a bad line was applied
    assert "too many tags" not in json.dumps(recs) and "bad confidence" not in json.dumps(recs)
    # a line older than the stored record is skipped; a newer one replaces it, keeping its times
    s, r = _import(api, "imp", [
        {"id": "fp00000000000000aa", "text": "rev two again", "revision": 2, "updated_at": t0 + 99},
        {"id": "fp00000000000000bb", "text": "tie newer", "revision": 1, "created_at": t0 - 7, "updated_at": t0 + 1},
    ])
    assert r == {"imported": 1, "skipped": 1, "errors": []}
    s, m = api.get("/v1/banks/imp/memories/fp00000000000000bb")
    assert (m["memory"]["text"], m["memory"]["created_at"], m["memory"]["updated_at"]) == ("tie newer", t0 - 7, t0 + 1)
    s, h = api.get("/v1/banks/imp/memories/fp00000000000000bb/history")
    assert [x["text"] for x in h["revisions"]] == ["tie later", "tie newer"]
    assert api.get("/v1/banks/imp")[1]["bank"]["memories"] == 3


def test_reimporting_bare_texts_changes_no_stored_memory(api):
    """A line stating no time is not newer than the stored memory of its text: a second import of
    the same bare lines keeps the saved entities, tags and times (it replaced them before)."""
    _, saved = api.post("/v1/banks/bare/memories", {"text": "Original fact saved by the API",
                                                    "entities": ["x"], "tags": ["keep"]})
    before = saved["memory"]
    s, r = _import(api, "bare", [{"text": "Original fact saved by the API"}, {"text": "A second bare fact"}])
    assert s == 200 and r == {"imported": 1, "skipped": 1, "errors": []}, r
    after = api.get(f"/v1/banks/bare/memories/{before['id']}")[1]["memory"]
    assert after == before
    # a higher revision still says it is newer, with or without times
    s, r = _import(api, "bare", [{"text": "Original fact saved by the API", "revision": 1, "tags": ["new"]}])
    assert r == {"imported": 1, "skipped": 0, "errors": []}
    assert api.get(f"/v1/banks/bare/memories/{before['id']}")[1]["memory"]["tags"] == ["new"]


def test_an_import_line_with_a_field_no_record_has_is_refused(api):
    """``supersedes`` or ``revive`` on a line would do nothing: the line is an error, nothing of it
    is written, and the other lines are applied."""
    _, kept = api.post("/v1/banks/odd/memories", {"text": "The decision we kept"})
    s, r = _import(api, "odd", [
        {"text": "A replacement through import", "supersedes": [kept["memory"]["id"]]},
        {"text": "Bring an old text back", "revive": True},
        {"text": "An exported record with its fields", "op": "save", "seq": 3, "bogus": 1},
        {"text": "A plain good line"},
    ])
    assert s == 200 and r["imported"] == 1, r
    assert [e["line"] for e in r["errors"]] == [1, 2, 3]
    assert "supersedes" in r["errors"][0]["error"] and "revive" in r["errors"][1]["error"]
    assert "bogus" in r["errors"][2]["error"] and "op" not in r["errors"][2]["error"].split(":")[0]
    texts = {m["text"] for m in api.get("/v1/banks/odd/memories")[1]["memories"]}
    assert texts == {"The decision we kept", "A plain good line"}


def test_import_duplicate_text_reported(api):
    _s, r = _import(api, "dup", [{"id": "fp00000000000000aa", "text": "same text"},
                                {"id": "fp00000000000000bb", "text": "SAME  text"}])
    assert r["imported"] == 1 and r["skipped"] == 0 and [e["line"] for e in r["errors"]] == [2]
    assert "duplicate_text" in r["errors"][0]["error"]


def test_import_in_batches_takes_consecutive_seqs(api):
    from chalicelib.banks.transfer import BATCH
    n = BATCH * 2 + 3
    _s, r = _import(api, "big", [{"text": f"bulk memory {i}"} for i in range(n)])
    assert r == {"imported": n, "skipped": 0, "errors": []}
    from chalicelib.core.store import get_bank_head, iter_revisions
    head = get_bank_head("default", "big")
    assert head.clock.total == n and head.memories == n
    seqs = [split_seq(s) for s, _, _ in iter_revisions(head.incarnation)]
    # each lane's positions run 1.. without a gap, lane by lane
    assert seqs == [(lane, i) for lane, p in enumerate(head.clock.positions) for i in range(1, p + 1)]


def test_import_upload(api, aws):
    s, up = api.post("/v1/banks/upl/import-uploads")
    assert s == 200 and set(up) >= {"url", "s3_key"} and up["s3_key"].startswith("imports/upl/")
    s3 = boto3.client("s3", region_name="us-east-1")
    data = "\n".join(json.dumps({"text": f"uploaded memory {i}"}) for i in range(5)) + "\n{oops\n"
    s3.put_object(Bucket=aws["CAIRN_BUCKET"], Key="default/" + up["s3_key"], Body=data.encode())
    s, r = api.post("/v1/banks/upl/import", {"s3_key": up["s3_key"]})
    assert s == 200 and r["imported"] == 5 and r["skipped"] == 0 and [e["line"] for e in r["errors"]] == [6]
    assert api.get("/v1/banks/upl")[1]["bank"]["memories"] == 5
    s, e = api.post("/v1/banks/upl/import", {"s3_key": up["s3_key"]})
    assert (s, e["code"]) == (400, "validation_error")  # consumed
    s, e = api.post("/v1/banks/upl/import", {"s3_key": "imports/upl/../../acme/x.jsonl"})
    assert (s, e["code"]) == (400, "validation_error")


def test_import_of_export_with_purged_tombstone(api):
    m = "/v1/banks/src/memories"
    _, a = api.post(m, {"text": "to be purged soon"})
    api.post(m, {"text": "kept memory"})
    api.post(f"{m}/{a['memory']['id']}/purge")
    _s, body = api.get("/v1/banks/src/export")
    _s, r = _import(api, "dst", _lines(body))
    assert r["imported"] == 1 and r["errors"] == [] and r["skipped"] == 1


def test_inline_import_cap_comes_from_settings(api, monkeypatch):
    """``Settings.import_inline_bytes`` bounds an inline import: one byte over is 413
    ``payload_too_large`` and writes nothing; at the bound it is imported."""
    from tests.api.state import assert_unchanged, dump
    line = json.dumps({"text": "capped import line"}) + "\n"
    monkeypatch.setenv("CAIRN_IMPORT_INLINE_BYTES", str(len(line) - 1))
    snap = dump()
    s, b = api.post("/v1/banks/cap/import", raw=line, headers=ND)
    assert (s, b["code"]) == (413, "payload_too_large")
    assert f"{len(line) - 1} bytes" in b["error"] and "import-uploads" in b["error"]
    assert_unchanged(snap)
    monkeypatch.setenv("CAIRN_IMPORT_INLINE_BYTES", str(len(line)))
    s, b = api.post("/v1/banks/cap/import", raw=line, headers=ND)
    assert s == 200 and b["imported"] == 1, b
