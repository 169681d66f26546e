"""Quotas and per-org limits: memories per bank and banks per org answer 429 ``quota_exceeded``
(``details: {limit, max, used}``, no Retry-After, nothing written) exactly at the limit; what
shrinks an org (deletes, purges, forgets, trash, exports) is never refused, even over a limit; an
org admin may lower its limits but never raise them; the operator's CLI raises them."""

from __future__ import annotations

import io
import json

import pytest

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump


@pytest.fixture
def inline(monkeypatch, aws):
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")


def _save(api, bank, text, **kw):
    return api.post(f"/v1/banks/{bank}/memories", {"text": text, **kw})


def _refused(status, body, limit, top, used):
    assert status == 429, body
    assert body["code"] == "quota_exceeded"
    assert body["details"] == {"limit": limit, "max": top, "used": used}


def _cli(*argv):
    from chalicelib import cli
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["--stage", "dev", *argv], out=out, err=err)
    assert status == 0, err.getvalue()
    return json.loads(out.getvalue())


@pytest.mark.parametrize("lanes", ["1", "16"])
def test_memories_per_bank_is_exact_at_the_limit(api, monkeypatch, lanes):
    """A bank of 1 or 16 lanes takes exactly its quota of live memories; the next new memory is
    429 with nothing written and no Retry-After; a reinforcement still passes; a delete makes room."""
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", "5")
    monkeypatch.setenv("CAIRN_WRITE_LANES", lanes)
    ids = []
    for i in range(5):
        status, body = _save(api, "notes", f"Fact number {i} about the deploy pipeline")
        assert status == 201, body
        ids.append(body["memory"]["id"])
    before = dump()
    resp = api.client.http.post("/v1/banks/notes/memories", headers={
        "Authorization": f"Bearer {api.token}", "Content-Type": "application/json"},
        body=json.dumps({"text": "One fact too many"}))
    _refused(resp.status_code, json.loads(resp.body), "memories_per_bank", 5, 5)
    assert "Retry-After" not in resp.headers
    assert_unchanged(before)
    status, body = _save(api, "notes", "Fact number 0 about the deploy pipeline")  # a reinforcement adds nothing
    assert status == 200, body
    # an import over the limit is refused too, before its batch commits
    status, body = api.call("POST", "/v1/banks/notes/import", raw=json.dumps({"text": "Imported extra fact"}),
                            headers={"Content-Type": "application/x-ndjson"})
    assert status == 429 and body["details"]["limit"] == "memories_per_bank", body
    assert api.delete(f"/v1/banks/notes/memories/{ids[0]}")[0] == 200
    assert _save(api, "notes", "Now there is room again")[0] == 201
    _refused(*_save(api, "notes", "But only for one"), "memories_per_bank", 5, 5)
    assert api.get("/v1/banks/notes")[1]["bank"]["memories"] == 5


def test_an_import_past_the_quota_reports_the_lines_left_over(api, monkeypatch):
    """Batches commit one by one: the first batch past the quota and every line after it are
    reported as ``quota_exceeded`` errors; what was imported stays, exactly up to the batch."""
    from chalicelib.banks.transfer import BATCH
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", str(BATCH + 5))
    monkeypatch.setenv("CAIRN_WRITE_LANES", "1")  # batches of BATCH lines
    lines = "\n".join(json.dumps({"text": f"Imported fact number {i}"}) for i in range(BATCH + 10))
    status, body = api.call("POST", "/v1/banks/imp/import", raw=lines, headers={"Content-Type": "application/x-ndjson"})
    assert status == 200 and body["imported"] == BATCH, body
    assert len(body["errors"]) == 10 and all(
        e["error"].startswith("quota_exceeded: ") and e["code"] == "quota_exceeded" for e in body["errors"])
    assert api.get("/v1/banks/imp")[1]["bank"]["memories"] == BATCH


def test_a_batch_refused_below_the_limit_says_how_many_it_would_add(api, monkeypatch):
    """An import whose first batch alone passes the quota is 429 with nothing written, and its
    message names the lines it would add (the bank itself is still under its limit)."""
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", "3")
    monkeypatch.setenv("CAIRN_WRITE_LANES", "1")
    lines = "\n".join(json.dumps({"text": f"Imported fact number {i}"}) for i in range(5))
    before = dump()
    status, body = api.call("POST", "/v1/banks/imp/import", raw=lines, headers={"Content-Type": "application/x-ndjson"})
    _refused(status, body, "memories_per_bank", 3, 0)
    assert "holds 0 live memories; 5 more would pass its quota of 3" in body["error"], body
    assert_unchanged(before)


def test_shrinking_is_never_refused_over_the_limit(api, inline):
    """An org pushed over its quota by the operator lowering it: saves are refused, but deletes,
    purges, forget-session, exports and trash all succeed."""
    for i in range(4):
        assert _save(api, "work", f"Saved fact {i} for the shrink test")[0] == 201
    status, body = api.post("/v1/hooks/turn-completed", {
        "session_id": "s1", "turn_id": "t1", "metadata": {"memory_bank": "work"},
        "messages": [{"role": "user", "content": "Remember that the release train leaves on Tuesdays."}]})
    assert status == 202 and body["outcome"]["saved"] == 1, body
    _cli("limits", "set", "--org", "default", "--memories-per-bank", "2", "--banks-per-org", "1")
    _refused(*_save(api, "work", "Over the limit now"), "memories_per_bank", 2, 5)
    mems = api.get("/v1/banks/work/memories")[1]["memories"]
    learned = [m for m in mems if m["source"].get("session_id") == "s1"]
    kept = [m for m in mems if m not in learned]
    assert api.delete(f"/v1/banks/work/memories/{kept[0]['id']}")[0] == 200
    assert api.post(f"/v1/banks/work/memories/{kept[1]['id']}/purge", {})[0] == 200
    status, body = api.post("/v1/banks/work/forget-session", {"session_id": "s1"})
    assert status == 200 and body["retired"] == 1, body
    assert api.get("/v1/banks/work/export")[0] == 200
    assert api.post("/v1/hooks/session-deleted", {"session_id": "s1"})[0] == 200
    assert api.delete("/v1/banks/work")[0] == 200


def test_banks_per_org_with_trash_and_restore(api, monkeypatch):
    """Three banks fit, a fourth is refused (by creation and by a first save); a trash gives one
    back, and a restore over the limit is refused until another bank goes."""
    monkeypatch.setenv("CAIRN_QUOTA_BANKS_PER_ORG", "3")
    for name in ("a1", "a2", "a3"):
        assert api.post("/v1/banks", {"name": name})[0] == 201
    before = dump()
    _refused(*api.post("/v1/banks", {"name": "a4"}), "banks_per_org", 3, 3)
    _refused(*_save(api, "a4", "A first save creates the bank"), "banks_per_org", 3, 3)
    _refused(*api.put("/v1/banks/a4/rules/style", {"content": "Be brief."}), "banks_per_org", 3, 3)
    assert_unchanged(before)
    assert api.post("/v1/banks", {"name": "a3"})[0] == 200  # an existing bank: nothing created
    status, body = api.delete("/v1/banks/a1")
    assert status == 200
    trashed = body["trashed_to"]
    assert _save(api, "a4", "Now a4 fits")[0] == 201
    _refused(*api.post("/v1/banks/a1/restore", {"trashed_to": trashed}), "banks_per_org", 3, 3)
    assert api.delete("/v1/banks/a2")[0] == 200
    assert api.post("/v1/banks/a1/restore", {"trashed_to": trashed})[0] == 200
    _refused(*api.post("/v1/banks", {"name": "a5"}), "banks_per_org", 3, 3)
    # structured-memory namespaces are not banks of the org's count
    assert api.post("/v1/api/memories", {"name": "n", "description": "d", "content": "c"})[0] == 201


def test_bank_count_is_backfilled_once_from_the_live_banks(api, monkeypatch):
    """Banks made before the count existed: the first creation counts the live banks."""
    from chalicelib.storage.tables import UsageModel, bind
    for name in ("b1", "b2"):
        assert api.post("/v1/banks", {"name": name})[0] == 201
    bind()
    UsageModel("q#default", "banks").delete()  # as before quotas existed
    monkeypatch.setenv("CAIRN_QUOTA_BANKS_PER_ORG", "3")
    assert api.post("/v1/banks", {"name": "b3"})[0] == 201
    _refused(*api.post("/v1/banks", {"name": "b4"}), "banks_per_org", 3, 3)


def test_org_admin_lowers_but_cannot_raise_and_the_operator_raises(api, monkeypatch):
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", "4")
    member = mint(user_id="bob", permissions=["memory:read", "memory:write"])
    before = dump()
    status, body = api.put("/v1/usage/limits", {"memories_per_bank": 5})
    assert status == 400 and body["code"] == "validation_error", body
    assert body["details"] == {"field": "memories_per_bank", "max": 4}
    for bad in ({"as_of_cost": 1}, {"memories_per_bank": 0}, {"memories_per_bank": "3"}, {"nope": 1}):
        status, body = api.put("/v1/usage/limits", bad)
        assert status == 400 and body["code"] == "validation_error", (bad, body)
    assert api.put("/v1/usage/limits", {"memories_per_bank": 1}, token=member)[0] == 403
    assert_unchanged(before)

    status, body = api.put("/v1/usage/limits", {"memories_per_bank": 2})
    assert status == 200, body
    assert body["effective"]["memories_per_bank"] == 2 and body["operator"]["memories_per_bank"] == 4
    assert body["org"]["memories_per_bank"] == 2
    assert _save(api, "m", "first fact of the lowered bank")[0] == 201
    assert _save(api, "m", "second fact of the lowered bank")[0] == 201
    _refused(*_save(api, "m", "third fact"), "memories_per_bank", 2, 2)

    # the operator raises the ceiling; the org's own lower value stays until the org drops it
    shown = _cli("limits", "set", "--org", "default", "--memories-per-bank", "10")
    assert shown["operator"] == {"memories_per_bank": 10} and shown["effective"]["memories_per_bank"] == 2
    status, body = api.put("/v1/usage/limits", {"memories_per_bank": 8})  # now within the ceiling
    assert status == 200 and body["effective"]["memories_per_bank"] == 8
    status, body = api.put("/v1/usage/limits", {"memories_per_bank": None})
    assert status == 200 and body["effective"]["memories_per_bank"] == 10 and body["org"]["memories_per_bank"] is None
    for i in range(3, 11):
        assert _save(api, "m", f"fact {i} under the raised limit")[0] == 201
    _refused(*_save(api, "m", "one past the raised limit"), "memories_per_bank", 10, 10)
    assert api.get("/v1/usage/limits")[1]["effective"]["memories_per_bank"] == 10
    assert _cli("limits", "set", "--org", "default", "--memories-per-bank", "default")["operator"] == {}
    status, events = api.get("/v1/audit?action=usage.limits")
    assert status == 200 and len(events["events"]) == 5


def test_cli_limits_refuses_bad_values(aws):
    from chalicelib import cli
    for argv in (["limits", "set", "--org", "o"], ["limits", "set", "--org", "o", "--burst", "x"],
                 ["limits", "set", "--org", "o", "--burst", "0"]):
        err = io.StringIO()
        assert cli.main(["--stage", "dev", *argv], out=io.StringIO(), err=err) == 2, argv
        assert err.getvalue().startswith("error: ")


def _race(fns):
    """Run ``fns`` at once (threads behind a barrier): their results or the exceptions they raised."""
    import threading
    barrier = threading.Barrier(len(fns))
    out: list = [None] * len(fns)

    def wrap(i, fn):
        barrier.wait()
        try:
            out[i] = fn()
        except Exception as exc:  # noqa: BLE001 - compared below
            out[i] = exc

    threads = [threading.Thread(target=wrap, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_concurrent_creators_never_pass_the_bank_quota(api, monkeypatch):
    """Five banks created at once under a limit of 2: exactly 2 exist (the count's condition makes
    racing creators retry from a fresh read), the others are refused."""
    from chalicelib.banks import service
    from chalicelib.errors import QuotaExceeded
    monkeypatch.setenv("CAIRN_QUOTA_BANKS_PER_ORG", "2")
    out = _race([lambda i=i: service.ensure_bank("default", f"c{i}", actor="t") for i in range(5)])
    assert sum(isinstance(r, QuotaExceeded) for r in out) == 3, out
    assert len(api.get("/v1/banks")[1]["banks"]) == 2


def test_concurrent_saves_pass_the_memory_quota_by_at_most_lanes_minus_one(api, monkeypatch):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    from chalicelib.errors import QuotaExceeded
    monkeypatch.setenv("CAIRN_QUOTA_MEMORIES_PER_BANK", "5")
    monkeypatch.setenv("CAIRN_WRITE_LANES", "4")
    out = _race([lambda i=i: service.save_memory("default", "race", SaveRequest(text=f"Racing fact {i}"), actor="t")
                 for i in range(20)])
    refused = [r for r in out if isinstance(r, QuotaExceeded)]
    saved = len(out) - len(refused)
    assert not [r for r in out if isinstance(r, Exception) and not isinstance(r, QuotaExceeded)], out
    assert 5 <= saved <= 5 + 4 - 1
    assert api.get("/v1/banks/race")[1]["bank"]["memories"] == saved
