"""Memory semantics through the HTTP API: save, reinforce, revive,
update, delete, supersede, pin, history, tags, list; and the bank's live counts through it all."""

import pytest

from chalicelib.fingerprint import fingerprint

B = "/v1/banks/sem"
M = B + "/memories"


def save(api, text, **kw):
    s, b = api.post(M, {"text": text, **kw})
    assert s in (200, 201), b
    return s, b


def counts(api, bank="sem"):
    s, b = api.get(f"/v1/banks/{bank}")
    assert s == 200, b
    return {k: b["bank"][k] for k in ("memories", "pinned", "rules")}


def test_save_new(api):
    s, b = api.post(M, {"text": "  The deploy  runs on Fridays ", "entities": [" Deploy ", "deploy", ""],
                        "tags": ["Ops", "ops "], "session_id": "s1"})
    assert s == 201 and b["created"] is True
    m = b["memory"]
    assert m["id"] == fingerprint("the deploy runs on fridays")
    assert m["text"] == "The deploy  runs on Fridays"  # trimmed, inner spacing kept
    assert (m["confidence"], m["revision"], m["corroboration"], m["pinned"]) == ("stated", 0, 0, False)
    assert m["entities"] == ["deploy"] and m["tags"] == ["ops"]
    assert m["source"] == {"session_id": "s1"}
    assert m["created_at"] == m["updated_at"] and "invalid_at" not in m
    assert counts(api) == {"memories": 1, "pinned": 0, "rules": 0}


def test_reinforce(api):
    tags = ["a", "b", "c", "d", "e", "f"]
    _, first = save(api, "Alice owns billing", entities=["alice"], tags=tags)
    s, b = api.post(M, {"text": "ALICE  owns billing", "entities": ["bob"], "pinned": True,
                        "tags": ["c", "x", "y", "z", "w"]})
    assert s == 200 and b["created"] is False
    m = b["memory"]
    assert m["id"] == first["memory"]["id"]
    assert m["text"] == "Alice owns billing" and m["entities"] == ["alice"]
    assert (m["corroboration"], m["revision"], m["pinned"], m["confidence"]) == (1, 1, True, "stated")
    assert m["tags"] == [*tags, "x", "y"]
    assert b["details"] == {"tags_dropped": ["z", "w"]}
    assert m["created_at"] == first["memory"]["created_at"] and m["updated_at"] >= m["created_at"]
    # pinned stays true when a later save does not ask for it
    s, b = api.post(M, {"text": "alice owns billing", "pinned": False})
    assert s == 200 and b["memory"]["pinned"] is True and b["memory"]["corroboration"] == 2
    assert "details" not in b
    assert counts(api) == {"memories": 1, "pinned": 1, "rules": 0}


def test_reinforce_makes_confidence_stated(api):
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    service.save_memory("default", "sem", SaveRequest(text="inferred fact here"), actor="t", confidence="inferred")
    s, b = api.get(f"{M}/{fingerprint('inferred fact here')}")
    assert b["memory"]["confidence"] == "inferred"
    s, b = api.post(M, {"text": "inferred fact here"})
    assert s == 200 and b["memory"]["confidence"] == "stated"


@pytest.mark.parametrize("retire", ["delete", "supersede"])
def test_saving_a_retired_text_is_refused_unless_revived(api, retire):
    _, a = save(api, "old fact to retire", tags=["t1"])
    mid = a["memory"]["id"]
    winner = None
    if retire == "delete":
        assert api.delete(f"{M}/{mid}")[0] == 200
    else:
        _, w = save(api, "the winner fact")
        winner = w["memory"]["id"]
        assert api.post(f"{M}/{mid}/supersede", {"superseded_by": winner})[0] == 200
    retired = api.get(f"{M}/{mid}")[1]["memory"]
    before = counts(api)
    s, b = api.post(M, {"text": "Old fact to retire", "tags": ["t2"]})
    assert (s, b["code"]) == (409, "memory_retired"), b
    assert b["details"] == {"memory_id": mid, "superseded_by": winner, "invalid_at": retired["invalid_at"]}
    assert api.get(f"{M}/{mid}")[1]["memory"] == retired and counts(api) == before  # nothing written
    s, b = api.post(M, {"text": "Old fact to retire", "tags": ["t2"], "revive": True})
    assert s == 201 and b["created"] is True
    m = b["memory"]
    assert m["id"] == mid and "invalid_at" not in m and "superseded_by" not in m
    assert m["corroboration"] == 1 and m["revision"] == 2 and m["tags"] == ["t1", "t2"]
    assert counts(api)["memories"] == before["memories"] + 1
    ops = [r["op"] for r in api.get(f"{M}/{mid}/history")[1]["revisions"]]
    assert ops == ["create", retire, "revive"]


def test_update_keeps_id_and_moves_fingerprint(api):
    _, a = save(api, "Team standup is at 9", entities=["standup"], tags=["meetings"], pinned=True)
    mid = a["memory"]["id"]
    s, b = api.patch(f"{M}/{mid}", {"text": "Team standup is at 10"})
    assert s == 200, b
    m = b["memory"]
    assert m["id"] == mid and m["text"] == "Team standup is at 10" and m["revision"] == 1
    # fields not asked for are kept
    assert m["entities"] == ["standup"] and m["tags"] == ["meetings"] and m["pinned"] is True
    assert m["created_at"] == a["memory"]["created_at"] and m["source"] == a["memory"]["source"]
    # a save of the new text reinforces the same memory
    s, b = api.post(M, {"text": "team standup is at 10"})
    assert s == 200 and b["memory"]["id"] == mid and b["memory"]["corroboration"] == 1
    # a save of the old text is a new memory (with an id of its own)
    s, b = api.post(M, {"text": "Team standup is at 9"})
    assert s == 201 and b["memory"]["id"] != mid and b["memory"]["revision"] == 0
    other = b["memory"]["id"]
    # ...and saving it again reinforces that new memory, not the moved one
    s, b = api.post(M, {"text": "team standup is at 9"})
    assert s == 200 and b["memory"]["id"] == other
    revs = api.get(f"{M}/{mid}/history")[1]["revisions"]
    assert [r["text"] for r in revs] == ["Team standup is at 9", "Team standup is at 10", "Team standup is at 10"]
    assert counts(api) == {"memories": 2, "pinned": 1, "rules": 0}


def test_update_fields_one_at_a_time(api):
    _, a = save(api, "fields stay put", entities=["e1"], tags=["t1"])
    mid = a["memory"]["id"]
    _, b = api.patch(f"{M}/{mid}", {"tags": ["T2", "t3"]})
    assert b["memory"]["tags"] == ["t2", "t3"] and b["memory"]["entities"] == ["e1"]
    _, b = api.patch(f"{M}/{mid}", {"entities": []})
    assert b["memory"]["entities"] == [] and b["memory"]["tags"] == ["t2", "t3"]
    _, b = api.patch(f"{M}/{mid}", {"pinned": True})
    assert b["memory"]["pinned"] is True and b["memory"]["text"] == "fields stay put"
    assert b["memory"]["revision"] == 3
    assert counts(api)["pinned"] == 1
    s, b = api.patch(f"{M}/{mid}", {})
    assert (s, b["code"]) == (400, "validation_error")


def test_update_duplicate_text(api):
    _, a = save(api, "first distinct memory")
    _, b = save(api, "second distinct memory")
    s, body = api.patch(f"{M}/{b['memory']['id']}", {"text": "FIRST distinct  memory"})
    assert (s, body["code"]) == (409, "duplicate_text")
    assert body["details"]["memory_id"] == a["memory"]["id"]
    _, cur = api.get(f"{M}/{b['memory']['id']}")
    assert cur["memory"]["text"] == "second distinct memory" and cur["memory"]["revision"] == 0
    # the text of a retired memory may be taken over
    api.delete(f"{M}/{a['memory']['id']}")
    s, body = api.patch(f"{M}/{b['memory']['id']}", {"text": "first distinct memory"})
    assert s == 200
    s, body = api.post(M, {"text": "first distinct memory"})
    assert s == 200 and body["memory"]["id"] == b["memory"]["id"]


def test_delete_and_idempotent_on_retired(api):
    _, a = save(api, "delete me please", pinned=True)
    mid = a["memory"]["id"]
    assert counts(api) == {"memories": 1, "pinned": 1, "rules": 0}
    s, b = api.delete(f"{M}/{mid}")
    assert s == 200 and b["memory"]["invalid_at"] and b["memory"]["revision"] == 1
    assert counts(api) == {"memories": 0, "pinned": 0, "rules": 0}
    s, again = api.delete(f"{M}/{mid}")
    assert s == 200 and again == b
    assert len(api.get(f"{M}/{mid}/history")[1]["revisions"]) == 2
    assert api.get(f"{M}/{mid}")[1]["memory"] == b["memory"]  # tombstones stay readable
    s, e = api.delete(f"{M}/fp0000000000000000")
    assert (s, e["code"]) == (404, "memory_not_found")


def test_supersede_rules(api):
    _, a = save(api, "target memory here")
    _, w = save(api, "winner memory here")
    _, p = save(api, "pinned memory here", pinned=True)
    _, r = save(api, "retired memory here")
    t, win, pin, ret = (x["memory"]["id"] for x in (a, w, p, r))
    api.delete(f"{M}/{ret}")
    cases = [
        (t, t, 400, "validation_error"),
        (t, "fp0000000000000000", 404, "memory_not_found"),
        (t, "not-an-id", 404, "memory_not_found"),
        (t, ret, 409, "memory_retired"),
        (pin, win, 409, "conflict"),
        (ret, win, 409, "memory_retired"),
    ]
    for target, winner, status, code in cases:
        s, b = api.post(f"{M}/{target}/supersede", {"superseded_by": winner})
        assert (s, b["code"]) == (status, code), (target, winner, b)
    before = counts(api)
    s, b = api.post(f"{M}/{t}/supersede", {"superseded_by": win})
    assert s == 200 and b["memory"]["superseded_by"] == win and b["memory"]["invalid_at"]
    assert counts(api)["memories"] == before["memories"] - 1


def test_retired_is_read_only(api):
    _, a = save(api, "soon retired memory")
    mid = a["memory"]["id"]
    api.delete(f"{M}/{mid}")
    for method, path, body in (("post", f"{M}/{mid}/pin", {"pinned": True}),
                               ("patch", f"{M}/{mid}", {"tags": ["x"]}),
                               ("post", f"{M}/{mid}/supersede", {"superseded_by": mid[:-1] + "0"})):
        s, b = getattr(api, method)(path, body)
        assert (s, b["code"]) == (409, "memory_retired"), (path, b)


def test_pin_counts(api):
    _, a = save(api, "pin me now")
    mid = a["memory"]["id"]
    s, b = api.post(f"{M}/{mid}/pin", {"pinned": True})
    assert s == 200 and b["memory"]["pinned"] is True and b["memory"]["revision"] == 1
    assert counts(api)["pinned"] == 1
    api.post(f"{M}/{mid}/pin", {"pinned": False})
    assert counts(api)["pinned"] == 0


def test_history_oldest_first(api):
    _, a = save(api, "history memory text")
    mid = a["memory"]["id"]
    save(api, "history memory text")
    api.patch(f"{M}/{mid}", {"text": "history memory text v2"})
    api.post(f"{M}/{mid}/pin", {"pinned": True})
    api.post(f"{M}/{mid}/pin", {"pinned": False})
    api.delete(f"{M}/{mid}")
    s, b = api.get(f"{M}/{mid}/history")
    revs = b["revisions"]
    assert [r["revision"] for r in revs] == [0, 1, 2, 3, 4, 5]
    assert [r["op"] for r in revs] == ["create", "reinforce", "update", "pin", "pin", "delete"]
    assert [r["seq"] for r in revs] == sorted(r["seq"] for r in revs)
    s, e = api.get(f"{M}/fp0123456789abcdef/history")
    assert (s, e["code"]) == (404, "memory_not_found")


def test_tags_most_used_first(api):
    save(api, "tag one memory", tags=["rare", "common"])
    save(api, "tag two memory", tags=["common", "mid"])
    save(api, "tag three memory", tags=["common", "mid"])
    _, d = save(api, "tag four memory", tags=["common", "gone"])
    api.delete(f"{M}/{d['memory']['id']}")
    _s, b = api.get(B + "/tags")
    assert b["tags"] == [{"tag": "common", "count": 3}, {"tag": "mid", "count": 2}, {"tag": "rare", "count": 1}]


def test_list_order_paging_filters(api, monkeypatch):
    from chalicelib import clock
    from chalicelib.banks import service
    from chalicelib.core.store import keys, lanes, queries, txn
    t = {"now": 1_700_000_000_000}
    def fake():
        return t["now"]

    for mod in (clock, service, keys, lanes, queries, txn):
        if hasattr(mod, "now_ms"):
            monkeypatch.setattr(mod, "now_ms", fake)
    ids = []
    for i in range(7):
        t["now"] += 0 if i in (3, 4) else 1000  # items 2, 3 and 4 share one updated_at
        _, b = save(api, f"listed memory number {i}", tags=["even" if i % 2 == 0 else "odd"])
        ids.append((b["memory"]["updated_at"], b["memory"]["id"]))
    t["now"] += 1000
    api.delete(f"{M}/{ids[6][1]}")
    live = sorted(ids[:6], key=lambda x: (-x[0], x[1]))
    s, b = api.get(M)
    assert b["total"] == 6 and b["next_cursor"] is None
    assert [m["id"] for m in b["memories"]] == [i for _, i in live]
    got, cursor = [], None
    while True:
        s, b = api.get(M + "?limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert s == 200 and len(b["memories"]) <= 2 and b["total"] == 6
        got += [m["id"] for m in b["memories"]]
        cursor = b["next_cursor"]
        if not cursor:
            break
    assert got == [i for _, i in live]
    s, b = api.get(M + "?include_superseded=true")
    assert b["total"] == 7 and b["memories"][0]["id"] == ids[6][1]
    s, b = api.get(M + "?tag=EVEN&limit=1")
    assert b["total"] == 3 and len(b["memories"]) == 1 and b["next_cursor"]
    s, b2 = api.get(M + f"?tag=even&limit=5&cursor={b['next_cursor']}")
    assert [m["id"] for m in b["memories"] + b2["memories"]] == [i for _, i in live if int(
        api.get(f"{M}/{i}")[1]["memory"]["text"].rsplit(" ", 1)[1]) % 2 == 0]
    s, b = api.get(M + "?tag=even&include_superseded=true")
    assert b["total"] == 4


@pytest.mark.parametrize("q,ok", [("limit=1", True), ("limit=500", True), ("limit=0", False),
                                  ("limit=501", False), ("limit=x", False), ("cursor=%25%25", False),
                                  ("include_superseded=maybe", False)])
def test_list_bounds(api, q, ok):
    save(api, "bounded list memory")
    s, b = api.get(f"{M}?{q}")
    if ok:
        assert s == 200 and len(b["memories"]) == 1
    else:
        assert (s, b["code"]) == (400, "validation_error") and b["details"]["field"]


def test_counts_through_everything(api):
    _, a = save(api, "count one", pinned=True)
    _, b = save(api, "count two")
    _, c = save(api, "count three", pinned=True)
    api.put(B + "/rules/style", {"content": "# be brief"})
    assert counts(api) == {"memories": 3, "pinned": 2, "rules": 1}
    api.post(f"{M}/{a['memory']['id']}/pin", {"pinned": False})
    api.post(f"{M}/{b['memory']['id']}/supersede", {"superseded_by": c["memory"]["id"]})
    assert counts(api) == {"memories": 2, "pinned": 1, "rules": 1}
    api.delete(f"{M}/{c['memory']['id']}")
    assert counts(api) == {"memories": 1, "pinned": 0, "rules": 1}
    save(api, "count three", revive=True)  # revived, pinned flag kept
    assert counts(api) == {"memories": 2, "pinned": 1, "rules": 1}
    api.post(f"{M}/{c['memory']['id']}/purge")
    assert counts(api) == {"memories": 1, "pinned": 0, "rules": 1}
    api.put(B + "/rules/style", {"content": "  \n"})
    assert counts(api) == {"memories": 1, "pinned": 0, "rules": 0}
    _s, listing = api.get("/v1/banks")
    assert listing["banks"] == [{"name": "sem", "description": "", "memories": 1, "pinned": 0, "rules": 0,
                                 "settings": {"on_conflict": "flag", "match_threshold": None, "ambient_floor": None,
                                              "feed": None},
                                 "defaults": {"match_threshold": 0.35, "ambient_floor": True}}]


def test_purge_and_import_after_pointer_takeover(api):
    """A retired memory whose text another memory took over (PATCH to the same text) can still
    be purged and re-imported: its fingerprint pointer belongs to the other memory now."""
    _, a = save(api, "shared sentence text")
    _, b = save(api, "some other sentence")
    aid, bid = a["memory"]["id"], b["memory"]["id"]
    api.delete(f"{M}/{aid}")
    assert api.patch(f"{M}/{bid}", {"text": "shared sentence text"})[0] == 200
    _, old = api.get(f"{M}/{aid}")
    # re-importing A with its text changed must not remove B's pointer
    line = dict(old["memory"], text="a brand new sentence", revision=old["memory"]["revision"] + 1)
    s, r = api.post(B + "/import", raw=__import__("json").dumps(line), headers={"Content-Type": "application/x-ndjson"})
    assert s == 200, r
    assert (r["imported"], r["errors"]) == (1, []), r
    s, p = api.post(f"{M}/{aid}/purge")
    assert s == 200, p
    s, again = api.post(M, {"text": "shared sentence text"})
    assert s == 200 and again["memory"]["id"] == bid and again["memory"]["corroboration"] == 1
