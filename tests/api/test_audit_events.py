"""``GET /v1/audit``: every event the service writes is readable, filtered on keys (action, actor,
target, time), paged past 1,000 events, never with memory text; bad input is a 400 that writes
nothing, and another org's events never show."""

from __future__ import annotations

import pytest

from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump
from tests.api.team_support import MEM, SPACES, World

SECRET = "zzsecretmemorytext"  # planted in every text a change carries; never in an event


def _all(api, query: str = "", token=None) -> list[dict]:
    """Every event of a listing, following its cursors (pages of 500)."""
    out, cursor = [], ""
    while True:
        sep = "&" if query else ""
        s, page = api.get(f"/v1/audit?limit=500{sep}{query}" + (f"&cursor={cursor}" if cursor else ""), token=token)
        assert s == 200, page
        out += page["events"]
        if page["next_cursor"] is None:
            return out
        cursor = page["next_cursor"]


def _backfill_event(api) -> None:
    """A memory saved while the model is missing, then a vector backfill run (``bank.backfill``)."""
    from chalicelib import semantic
    from chalicelib.banks import backfill
    saved = semantic._model, semantic._failed
    semantic._model, semantic._failed = None, "FileNotFoundError: no model in this test"
    try:
        assert api.post("/v1/banks/main/memories", {"text": f"saved without the model {SECRET}"})[0] == 201
    finally:
        semantic._model, semantic._failed = saved
    assert backfill.backfill_bank("default", "main").status == "ran"


def _bank_events(api) -> None:
    assert api.post("/v1/banks", {"name": "main"})[0] in (200, 201)
    s, b = api.post("/v1/banks/main/memories", {"text": f"the user drinks tea {SECRET}"})
    assert s == 201, b
    s, other = api.post("/v1/banks/main/memories", {"text": f"the user drank coffee {SECRET}"})
    mid, oid = b["memory"]["id"], other["memory"]["id"]
    assert api.patch(f"/v1/banks/main/memories/{mid}", {"tags": ["drinks"]})[0] == 200
    assert api.post(f"/v1/banks/main/memories/{mid}/pin", {"pinned": True})[0] == 200
    assert api.post(f"/v1/banks/main/memories/{mid}/pin", {"pinned": False})[0] == 200
    assert api.post(f"/v1/banks/main/memories/{oid}/supersede", {"superseded_by": mid})[0] == 200
    assert api.delete(f"/v1/banks/main/memories/{oid}")[0] == 200
    assert api.post("/v1/banks/main/import", raw=f'{{"text": "imported {SECRET}"}}\n',
                    headers={"Content-Type": "application/x-ndjson"})[0] == 200
    _backfill_event(api)
    assert api.post(f"/v1/banks/main/memories/{mid}/purge")[0] == 200
    s, b = api.post("/v1/hooks/turn-completed", {
        "session_id": "s1", "turn_id": "t1", "metadata": {"memory_bank": "main"},
        "messages": [{"role": "user", "content": "Remember that the team meets on Mondays."}]})
    assert s == 202 and b["outcome"]["saved"] == 1, b
    assert api.post("/v1/hooks/session-deleted", {"session_id": "s1"})[1]["dropped"] is True
    assert api.post("/v1/reload")[0] == 200
    from chalicelib.events.reload import handle_object_event
    from chalicelib.settings import get_settings
    from chalicelib.storage import blobs
    blobs.put_text("default/banks/main/rules/hand.md", "edited by hand")
    assert handle_object_event("Object Created", {"bucket": {"name": get_settings().bucket},
                                                  "object": {"key": "default/banks/main/rules/hand.md"}})[
        "action"] == "rules_reloaded"
    assert api.put("/v1/banks/main/rules/style", {"content": f"be brief {SECRET}"})[0] == 200
    assert api.delete("/v1/banks/main/rules/style")[0] == 200
    assert api.patch("/v1/banks/main", {"description": f"notes {SECRET}"})[0] == 200
    assert api.post("/v1/banks/main/forget-session", {"session_id": "s1", "purge": True})[0] == 200
    s, b = api.delete("/v1/banks/main")
    assert s == 200, b
    assert api.post("/v1/banks/main/restore", {"trashed_to": b["trashed_to"]})[0] == 200
    s, b = api.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": SECRET}],
                                                "metadata": {"memory_bank": "no such bank!"}})
    assert s == 200, b


def _structured_and_token_events(api) -> None:
    assert api.post("/v1/api/workstreams", {"workstream_id": "ws-1", "title": "Migration"})[0] == 201
    assert api.post("/v1/api/projects", {"project_id": "p-1", "name": "Apollo"})[0] == 201
    assert api.patch("/v1/api/projects/p-1", {"active": False})[0] == 200
    assert api.put("/v1/api/projects/p-1/members/gus", {"access": "read"})[0] in (200, 201)
    assert api.delete("/v1/api/projects/p-1/members/gus")[0] in (200, 204)
    s, sess = api.post("/v1/api/sessions", {"workstream_id": "ws-1"})
    assert s == 201, sess
    assert api.delete(f"/v1/api/sessions/{sess['session_id']}")[0] in (200, 204)
    body = {"name": "deploy", "description": "d", "content": f"deploy via CI {SECRET}"}
    assert api.post("/v1/api/memories", body)[0] == 201
    assert api.post("/v1/api/memories", {**body, "content": f"deploy via CD {SECRET}"})[0] in (200, 201)
    assert api.delete("/v1/api/memories/deploy")[0] == 200
    s, b = api.post("/v1/api/admin/tokens", {"kind": "api_key", "permissions": ["memory:read"], "label": "ci"})
    assert s == 201, b
    assert api.delete(f"/v1/api/admin/tokens/{b['token_id']}")[0] == 200
    assert api.put("/v1/usage/limits", {"banks_per_org": 500})[0] == 200


def _team_events(api) -> None:
    w = World(api)
    assert api.patch(f"{SPACES}/{w.space}", {"classification": "internal"})[0] == 200
    assert api.delete(f"{SPACES}/{w.space}/members/carol")[0] in (200, 204)
    assert api.put("/api/v1/context/deny-rules", {"rules": []})[0] == 200
    e = w.create()
    assert w.call("alice", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "Use Postgres 16"})[0] == 200
    w.write_text("alice", e["id"], f"Orders live in Postgres {SECRET}")
    assert w.accept("bob", e["id"])[0] == 200
    e2 = w.create(supersedes=e["id"])
    w.write_text("alice", e2["id"], f"Orders moved {SECRET}")
    assert w.accept("bob", e2["id"])[0] == 200
    e3 = w.create()
    assert w.call("alice", "POST", f"{MEM}/entries/{e3['id']}/archive", {})[0] == 200


def test_every_event_kind_is_readable_and_holds_no_memory_text(api, monkeypatch):
    from chalicelib import audit
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")  # the turn's extraction runs inline
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    _bank_events(api)
    _structured_and_token_events(api)
    _team_events(api)
    events = _all(api)
    assert {e["action"] for e in events} == set(audit.ACTIONS)  # every action the service writes
    assert SECRET not in str(events)
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    # the memory-only admin route still answers exactly what it did: memory save, update, delete
    s, page = api.get("/v1/api/admin/audit?limit=500")
    assert s == 200 and {e["action"] for e in page["events"]} == {"memory.save", "memory.update", "memory.delete"}
    for action in audit.ACTIONS:  # each action's own listing, on its index
        assert {e["action"] for e in _all(api, f"action={action}")} == {action}


def test_filters_combine_on_keys(api):
    alice = mint(user_id="alice")
    for i in range(3):
        assert api.put(f"/v1/banks/b{i}/rules/r", {"content": "x"}, token=alice if i else None)[0] == 200
    assert api.delete("/v1/banks/b1/rules/r")[0] == 200
    by_alice = _all(api, "actor=person:alice")
    assert [(e["action"], e["target"]) for e in by_alice] == [("rule.set", "b1/r"), ("rule.set", "b2/r")]
    on_b1 = _all(api, "target=b1/r")
    assert [(e["action"], e["actor"]) for e in on_b1] == [("rule.set", "person:alice"), ("rule.delete", "person:admin")]
    assert [e["action"] for e in _all(api, "target=b1/r&actor=person:admin")] == ["rule.delete"]
    assert [e["action"] for e in _all(api, "target=b1/r&action=rule.set")] == ["rule.set"]
    assert _all(api, "actor=person:alice&action=rule.delete") == []
    assert _all(api, "target=nothing") == [] and _all(api, "actor=person:nobody") == []
    # the time window: since inclusive, until exclusive
    ats = [e["at"] for e in on_b1]
    assert [e["at"] for e in _all(api, f"target=b1/r&since={ats[1]}")] == [ats[1]]
    assert [e["at"] for e in _all(api, f"target=b1/r&until={ats[1]}")] == ([ats[0]] if ats[0] < ats[1] else [])
    assert len(_all(api, f"since={ats[0]}&until={ats[1] + 1}")) >= 2


def test_paging_past_a_thousand_events_under_each_key(api):
    """1,030 events seeded in-process, 25 a batch, as ``audit.record`` builds them."""
    from chalicelib import audit
    from chalicelib.storage.tables import AuditModel, bind
    bind()
    with AuditModel.batch_write() as batch:
        for i in range(1030):
            batch.save(audit._event("default", "rule.set", "person:bulk" if i % 2 else "person:other",
                                    f"bank/r{i % 3}", {"bank": "bank"}))
    everything = _all(api)  # and the mint of the test's own token
    assert len(everything) == 1031 and len({e["id"] for e in everything}) == 1031
    assert [e["id"] for e in everything] == sorted(e["id"] for e in everything)
    assert len(_all(api, "action=rule.set")) == 1030
    assert len(_all(api, "actor=person:bulk")) == 515
    assert len(_all(api, "target=bank/r0")) == 344
    assert len(_all(api, "target=bank/r0&actor=person:bulk")) == 172
    s1, p1 = api.get("/v1/audit?limit=2&actor=person:bulk")
    s2, p2 = api.get(f"/v1/audit?limit=2&actor=person:bulk&cursor={p1['next_cursor']}")
    assert s1 == s2 == 200
    assert [e["id"] for e in p1["events"] + p2["events"]] == [e["id"] for e in _all(api, "actor=person:bulk")[:4]]


@pytest.mark.parametrize("query,field,message", [
    ("action=memory.nothing", "action", None),
    ("since=x", "since", None),
    ("since=-1", "since", None),
    ("until=0", "until", None),
    ("since=5&until=5", "until", "until must be greater than since (ms since epoch)."),
    ("limit=0", "limit", None),
    ("limit=501", "limit", None),
    ("limit=x", "limit", None),
    ("actor=" + "a" * 301, "actor", None),
    ("target=" + "t" * 1001, "target", None),
    ("cursor=!!", "cursor", None),
])
def test_bad_input_is_a_400_that_writes_nothing(api, query, field, message):
    api.put("/v1/banks/main/rules/r", {"content": "x"})
    before = dump()
    s, b = api.get(f"/v1/audit?{query}")
    assert (s, b["code"], b["details"]["field"]) == (400, "validation_error", field), b
    if message:
        assert b["error"] == message
    assert_unchanged(before)


def test_cursors_are_bound_to_listing_org_and_filter(api):
    from chalicelib.core.store import encode_cursor
    for i in range(3):
        api.put(f"/v1/banks/main/rules/r{i}", {"content": "x"})
    s, page = api.get("/v1/audit?limit=1&action=rule.set")
    cursor = page["next_cursor"]
    assert s == 200
    assert cursor and api.get(f"/v1/audit?limit=1&action=rule.set&cursor={cursor}")[0] == 200
    s, legacy = api.get("/v1/api/admin/audit?limit=1")
    other = mint(org="acme", user_id="o")
    from chalicelib.audit import Filter
    forged = encode_cursor("audit-events", f"default|{Filter().tag()}", {"k": "not a position"})
    unfiltered = encode_cursor("audit-events", f"default|{Filter().tag()}", {"k": "0" * 13 + "#" + "0" * 32})
    assert api.get(f"/v1/audit?cursor={unfiltered}")[0] == 200
    s, b = api.get(f"/v1/audit?target=None&cursor={unfiltered}")
    assert (s, b["code"]) == (400, "validation_error"), b  # "None" as a target is not the absent filter
    # forged with the right binding: a position outside the window never widens it
    late, early = 9_999_999_999_998, "0" * 13 + "#" + "0" * 32  # a window after every event; a position before
    for query, flt, k in (("since=2&until=3", Filter(since=2, until=3), "9" * 13 + "#" + "f" * 32),
                          (f"since={late}", Filter(since=late), early)):
        forged_here = encode_cursor("audit-events", f"default|{flt.tag()}", {"k": k})
        s, b = api.get(f"/v1/audit?{query}&cursor={forged_here}")
        assert (s, b["events"]) == (200, []), b
    before = dump()
    for path, token in [("/v1/audit?limit=1", None), ("/v1/audit?limit=1&action=rule.delete", None),
                        ("/v1/audit?limit=1&action=rule.set&since=1", None),
                        ("/v1/audit?limit=1&action=rule.set", other)]:
        s, b = api.get(f"{path}&cursor={cursor}", token=token)
        assert (s, b["code"], b["details"]["field"]) == (400, "validation_error", "cursor"), path
    for bad in (forged, legacy["next_cursor"] or "x"):
        s, b = api.get(f"/v1/audit?cursor={bad}")
        assert (s, b["code"]) == (400, "validation_error"), b
    assert_unchanged(before)


def test_an_org_never_sees_another_orgs_events(api):
    api.put("/v1/banks/main/rules/r", {"content": "x"})
    other = mint(org="acme", user_id="admin")
    assert [e["action"] for e in _all(api, token=other)] == ["token.mint"]  # its own token's mint only
    for q in ("actor=person:admin", "target=main/r", "action=rule.set"):
        assert _all(api, q, token=other) == [], q
        assert len(_all(api, q)) == 1


def test_needs_admin_memories_and_an_org_wide_token(api):
    reader = mint(user_id="rita", permissions=["memory:read"])
    s, b = api.get("/v1/audit", token=reader)
    assert (s, b["code"]) == (403, "forbidden")
    confined = mint(user_id="dana", permissions=["admin.memories"], banks=["main"])
    s, b = api.get("/v1/audit", token=confined)
    assert (s, b["code"]) == (403, "forbidden")


def test_an_action_missing_from_the_list_is_never_written(api):
    from chalicelib import audit
    before = dump()
    with pytest.raises(ValueError, match="unknown audit action"):
        audit.record("default", "memory.teleport", "person:admin", "x")
    assert_unchanged(before)


def test_refused_hooks_are_one_event_per_token_and_hour_with_sanitised_details(api):
    """A read key sending refused hooks (a bank outside its allow-list, a name with ESC, U+202E,
    LF) gets 200 every time, and the trail grows by one ``hook.refused`` event per token and
    hour, counting them, its strings free of control and bidirectional characters."""
    reader = mint(kind="api_key", permissions=["memory:read"], banks=["main"])
    other = mint(kind="api_key", permissions=["memory:read"], banks=["main"])
    names = ["evil\x1b[31mred", "x\u202eusr/nib", "two\nlines", "Not Valid!", "beta"] * 12
    for name in names:
        s, b = api.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": "hi"}],
                                                    "metadata": {"memory_bank": name}}, token=reader)
        assert s == 200 and b["retrieval"].startswith("none+"), b
    assert api.post("/v1/hooks/pre-generate", {"messages": [{"role": "user", "content": "hi"}],
                                               "metadata": {"memory_bank": "gamma"}}, token=other)[0] == 200
    events = _all(api, "action=hook.refused")
    assert len(events) == 2, events
    mine = [e for e in events if e["details"]["count"] == len(names)]
    assert len(mine) == 1 and mine[0]["details"]["last_at"] >= mine[0]["at"]
    assert {e["details"]["count"] for e in events} == {len(names), 1}
    for e in events:
        shown = str(e["details"])
        assert not any(c in shown for c in ("\x1b", "\u202e", "\n")), shown
    assert mine[0]["details"]["bank"] == "evil\ufffd[31mred"


def test_audit_details_are_sanitised_whoever_chose_them(api):
    s, b = api.post("/v1/api/admin/tokens", {"kind": "api_key", "permissions": ["memory:read"],
                                             "label": "ops \u202egnp.exe \u2066x\u2069"})
    assert s == 201, b
    [ev] = [e for e in _all(api, "action=token.mint") if e["target"] == b["token_id"]]
    assert ev["details"]["label"] == "ops \ufffdgnp.exe \ufffdx\ufffd"


def test_bank_memory_writes_are_in_the_trail_with_their_actor(api):
    """The reported case: saves, reinforcements, updates, pins and supersedes of bank memories,
    each one event of its own action naming who did it, in the order they happened."""
    bob = mint(user_id="bob", permissions=["memory:read", "memory:write"])
    ids = [api.post("/v1/banks/main/memories", {"text": f"Fact number {i}"})[1]["memory"]["id"] for i in range(20)]
    assert api.post("/v1/banks/main/memories", {"text": "fact number 3"}, token=bob)[0] == 200  # a reinforcement
    for mid in ids[:5]:
        assert api.patch(f"/v1/banks/main/memories/{mid}", {"tags": ["t"]}, token=bob)[0] == 200
        assert api.post(f"/v1/banks/main/memories/{mid}/pin", {"pinned": True})[0] == 200
    for mid in ids[5:8]:
        assert api.post(f"/v1/banks/main/memories/{mid}/supersede", {"superseded_by": ids[9]}, token=bob)[0] == 200
    saves = _all(api, "action=memory.save")
    assert [(e["target"], e["actor"], e["details"]["op"]) for e in saves] == \
        [(f"main/{m}", "person:admin", "create") for m in ids] + [(f"main/{ids[3]}", "person:bob", "reinforce")]
    assert [(e["target"], e["actor"]) for e in _all(api, "action=memory.update")] == \
        [(f"main/{m}", "person:bob") for m in ids[:5]]
    assert [e["details"]["pinned"] for e in _all(api, "action=memory.pin")] == [True] * 5
    assert [(e["target"], e["actor"]) for e in _all(api, "action=memory.supersede")] == \
        [(f"main/{m}", "person:bob") for m in ids[5:8]]
    assert [e["action"] for e in _all(api, f"target=main/{ids[0]}")] == ["memory.save", "memory.update", "memory.pin"]


def test_history_names_who_wrote_each_revision(api, monkeypatch):
    """``actor`` on every revision: a person, another person, the extraction job as
    ``system:extraction``; ``null`` for a revision written before revisions named their author."""
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    bob = mint(user_id="bob", permissions=["memory:read", "memory:write"])
    s, b = api.post("/v1/hooks/turn-completed", {
        "session_id": "s1", "turn_id": "t1", "metadata": {"memory_bank": "main"},
        "messages": [{"role": "user", "content": "Remember that the team meets on Mondays."}]})
    assert s == 202 and b["outcome"]["saved"] == 1, b
    [mem] = api.get("/v1/banks/main/memories")[1]["memories"]
    assert api.post("/v1/banks/main/memories", {"text": mem["text"]})[0] == 200
    assert api.patch(f"/v1/banks/main/memories/{mem['id']}", {"tags": ["team"]}, token=bob)[0] == 200
    from chalicelib.storage.tables import RevisionModel, bind
    bind()
    s, h = api.get(f"/v1/banks/main/memories/{mem['id']}/history")
    assert [(r["op"], r["actor"]) for r in h["revisions"]] == [
        ("create", "system:extraction"), ("reinforce", "person:admin"), ("update", "person:bob")]
    [old] = [r for r in RevisionModel.scan() if r.memory_id == mem["id"] and r.op == "reinforce"]
    old.update(actions=[RevisionModel.actor.remove()])  # as written before revisions had an actor
    s, h = api.get(f"/v1/banks/main/memories/{mem['id']}/history")
    assert s == 200 and [r["actor"] for r in h["revisions"]] == ["system:extraction", None, "person:bob"]
    [run] = _all(api, "action=extraction.run")
    assert run["actor"] == "system:extraction" and run["details"]["on_behalf_of"] == "person:admin"
    assert run["details"]["saved"] == 1 and run["target"] == "main/s1"
