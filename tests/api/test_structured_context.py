"""Per-turn injection and nudges: exact rendering, the hint, persona
off, touch counts, nudges and their cooldown, and a relevant memory found among 5,000 later ones
loaded through the admin import (a recent-window candidate pool would miss it)."""

from __future__ import annotations

import json

import pytest

from chalicelib.structured import context, memories
from tests.api.conftest import Api, mint
from tests.api.state import assert_unchanged, dump

USER = ["memory:read", "memory:write"]


@pytest.fixture
def alice(client, aws):
    return Api(client, mint(user_id="alice", permissions=USER))


def session(api, **kw):
    s, b = api.post("/v1/api/sessions", {"kind": "interactive", **kw})
    assert s == 201, b
    return b["session_id"]


def turn(api, sid, *texts, **kw):
    msgs = []
    for t in texts:
        msgs += [{"role": "user", "content": t}, {"role": "assistant", "content": "ok"}]
    s, b = api.post(f"/v1/api/sessions/{sid}/context", {"messages": msgs, **kw})
    assert s == 200, b
    return b


def save(api, name, content, description="", **kw):
    s, b = api.post("/v1/api/memories", {"name": name, "content": content, "description": description or name, **kw})
    assert s in (200, 201), b
    return b


def _row(fields: dict) -> memories.Row:
    """A ``memories.Row`` holding ``fields`` (the rest empty)."""
    base = {"memory_id": "m", "name": "", "description": "", "type": "general", "scope": "global", "scope_id": "",
            "created": "", "updated": "", "last_accessed": "", "access_count": 0, "content": ""}
    return memories.Row(**{**base, **fields})


def test_render_exact():
    rows = [{"name": "a_b", "type": "feedback", "scope": "user", "description": 'say "hi" & <go>',
             "content": "line1\nline2 <tag> & \"q\""},
            {"name": "long", "type": "general", "scope": "global", "description": "",
             "content": "x" * 499 + "\n" + "y" * 10}]
    assert context.render([_row(r) for r in rows], 7) == (
        "<memories>\n"
        '  <memory name="a_b" type="feedback" scope="user" description="say &quot;hi&quot; &amp; &lt;go&gt;">'
        "line1 line2 &lt;tag&gt; &amp; &quot;q&quot;</memory>\n"
        '  <memory name="long" type="general" scope="global">' + "x" * 499 + " ...</memory>\n"
        "</memories>\n\n"
        "You have 7 memories in scope. Use memory(action='search') or memory(action='list') for more.")
    assert context.render([], 3) == ""


def test_context_takes_last_three_user_messages_newest_first():
    msgs = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
            {"role": "user", "content": [{"type": "text", "text": "three"}, {"type": "image_url", "image_url": {}},
                                         {"type": "text", "text": "four"}]},
            {"role": "user", "content": "five"}, {"role": "user", "content": "six"}]
    assert context.user_context(msgs) == ["six", "five", "three\nfour"]


def test_injection_through_the_route_and_touch_counts(alice):
    m = save(alice, "deploy_process", "Deploy with the <blue> pipeline & check\nthe canary.", "How we deploy",
             type="reference")
    save(alice, "unrelated", "Lunch is at noon.", "Food")
    sid = session(alice)
    b = turn(alice, sid, "something else entirely", "how do we deploy the canary?")
    assert b["injected"] == [m["memory_id"]]
    assert b["system_message"] == (
        "<memories>\n"
        '  <memory name="deploy_process" type="reference" scope="global" description="How we deploy">'
        "Deploy with the &lt;blue&gt; pipeline &amp; check the canary.</memory>\n"
        "</memories>\n\n"
        "You have 2 memories in scope. Use memory(action='search') or memory(action='list') for more.")
    assert b["candidates"] >= 1 and b["in_scope"] == 2 and b["nudge"] is None
    _s, g = alice.get("/v1/api/memories/deploy_process")
    assert g["access_count"] == 1 and g["last_accessed"]
    turn(alice, sid, "deploy canary again")
    _s, g = alice.get("/v1/api/memories/deploy_process")
    assert g["access_count"] == 2 and g["updated"] == m["updated"]  # a touch is not an update
    _s, u = alice.get("/v1/api/memories/unrelated")
    assert u["access_count"] == 0 and u["last_accessed"] == ""


def test_touch_changes_neither_seq_nor_revision(alice):
    from chalicelib.core.store import get_bank_row, get_item
    save(alice, "deploy_process", "Deploy with the pipeline.")
    row = get_bank_row("default", "!scope/global/")
    item = get_item(row.incarnation, save(alice, "deploy_process", "Deploy with the pipeline.")["memory_id"])
    seq, rev = int(get_bank_row("default", "!scope/global/").seq), int(item.revision)
    sid = session(alice)
    turn(alice, sid, "pipeline deploy")
    assert int(get_bank_row("default", "!scope/global/").seq) == seq
    assert int(get_item(row.incarnation, item.sk).revision) == rev


def test_nothing_relevant_is_empty(alice):
    save(alice, "deploy_process", "Deploy with the pipeline.")
    b = turn(alice, session(alice), "what is the weather like")
    assert b["system_message"] == "" and b["injected"] == []


def test_persona_off_injects_nothing_touches_nothing_nudges_nothing(alice):
    save(alice, "deploy_process", "Deploy with the pipeline.")
    sid = session(alice, memory_enabled=False)
    before = dump()
    b = turn(alice, sid, "no, deploy with the pipeline")
    assert b == {"system_message": "", "injected": [], "candidates": 0, "in_scope": 0, "nudge": None}
    assert_unchanged(before)


def test_relevance_k_caps_injection(alice, monkeypatch):
    for i in range(8):
        save(alice, f"deploy_{i}", f"deploy note number {i}")
    monkeypatch.setenv("CAIRN_MEMORY_RELEVANCE_K", "3")
    b = turn(alice, session(alice), "deploy note")
    assert len(b["injected"]) == 3 and b["system_message"].count("<memory ") == 3
    assert "You have 8 memories in scope." in b["system_message"]


@pytest.mark.parametrize("text", ["no, use tabs", "Actually it is Friday", "don't do that", "that's not right",
                                  "I meant the other file"])
def test_correction_nudge_and_cooldown(alice, monkeypatch, text):
    clock = [1_800_000_000_000]
    monkeypatch.setattr(context, "now_ms", lambda: clock[0])
    sid = session(alice)
    assert turn(alice, sid, text)["nudge"] == context.NUDGES["correction"]
    clock[0] += 299_000
    assert turn(alice, sid, text)["nudge"] is None  # within nudge_cooldown (300 s)
    clock[0] += 1_000
    assert turn(alice, sid, text)["nudge"] == context.NUDGES["correction"]
    assert turn(alice, session(alice), text)["nudge"] == context.NUDGES["correction"]  # per session


def test_no_nudge_for_plain_messages_or_when_disabled(alice, monkeypatch):
    sid = session(alice)
    assert turn(alice, sid, "please deploy now")["nudge"] is None
    monkeypatch.setenv("CAIRN_MEMORY_NUDGES", "false")
    assert turn(alice, session(alice), "no, the other one")["nudge"] is None


def test_resume_nudge_once_per_session(alice, monkeypatch):
    alice.post("/v1/api/workstreams", {"workstream_id": "ws_1", "title": "W"})
    first = session(alice, workstream_id="ws_1")
    assert turn(alice, first, "hello")["nudge"] is None  # a new workstream is not resumed
    again = session(alice, workstream_id="ws_1")
    assert turn(alice, again, "hello")["nudge"] == context.NUDGES["resume"]
    assert turn(alice, again, "hello")["nudge"] is None
    monkeypatch.setenv("CAIRN_MEMORY_NUDGE_COOLDOWN", "0")
    assert turn(alice, again, "no, not that")["nudge"] == context.NUDGES["correction"]
    assert turn(alice, again, "no, not that")["nudge"] == context.NUDGES["correction"]


def test_needle_among_5000_later_memories(alice, api):
    """The needle is older than 5,000 imported memories, so the newest fetch_limit (or 200) would
    not hold it; BM25F over the whole envelope still injects it."""
    needle = {"memory_id": "0b7c5a52-4a43-4d5e-9a0c-1f7e1d2a3b4c", "name": "ingress_controller",
              "description": "Which ingress controller production uses", "type": "reference", "scope": "global",
              "scope_id": "", "content": "Production ingress runs the zebrafish controller behind the edge proxy.",
              "created": "2026-01-02T03:04:05", "updated": "2026-01-02T03:04:05"}
    s, b = api.post("/v1/api/admin/memories/import", raw=json.dumps(needle),
                    headers={"Content-Type": "application/x-ndjson"})
    assert b["imported"] == 1
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
             "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]
    lines = []
    for i in range(5000):
        w = [words[(i * k) % len(words)] for k in (1, 3, 7)]
        lines.append(json.dumps({"name": f"note_{i}", "description": f"note {w[0]}", "type": "general",
                                 "scope": "global" if i % 2 else "user", "scope_id": "" if i % 2 else "alice",
                                 "content": f"{' '.join(w)} production edge proxy ingress note {i}",
                                 "created": "2026-06-01T00:00:00", "updated": f"2026-06-{1 + i % 28:02d}T00:00:00"}))
    s, b = api.post("/v1/api/admin/memories/import", raw="\n".join(lines),
                    headers={"Content-Type": "application/x-ndjson"})
    assert (s, b["imported"], b["errors"]) == (200, 5000, []), b
    s, newest = api.get("/v1/api/admin/memories?limit=200")
    assert needle["memory_id"] not in {m["memory_id"] for m in newest["memories"]}
    b = turn(alice, session(alice), "which ingress controller does production use? the zebrafish one?")
    assert b["injected"][0] == needle["memory_id"]
    assert 'name="ingress_controller"' in b["system_message"]
    assert b["candidates"] >= 50  # the common terms matched many of the 5,000 and they were scored


def test_tool_content_limit_is_max_content_and_limits_cap(alice, monkeypatch):
    sid = session(alice)
    monkeypatch.setenv("CAIRN_MEMORY_MAX_CONTENT", "10")
    before = dump()
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "save", "name": "n", "content": "x" * 11,
                                                          "description": "d"})
    assert (s, b["error"]) == (400, "content exceeds 10 character limit")
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "list", "limit": "many"})
    assert (s, b["error"]) == (400, "limit must be an integer")
    assert_unchanged(before)
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "save", "name": "n", "content": "x" * 10,
                                                          "description": "d"})
    assert s == 201 and b["type"] == "general" and b["scope"] == "global"
    for i in range(51):
        save(alice, f"m_{i}", "c")
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "list", "limit": 500})
    assert s == 200 and b["total"] == 50
    s, b = alice.post(f"/v1/api/sessions/{sid}/memory", {"action": "list"})
    assert b["total"] == 20


def test_hint_counts_the_memories_in_scope_not_the_matches(alice):
    """Turnstone, per-turn injection step 6: "Appends a hint telling the model how many memories
    are in scope". It reported the matched candidates ("You have 1 memories") instead: the hint
    counts the session envelope's live memories, in good English."""
    save(alice, "deploy_process", "Deploy with the pipeline.")
    sid = session(alice)
    b = turn(alice, sid, "how do we deploy?")
    assert b["system_message"].endswith(
        "You have 1 memory in scope. Use memory(action='search') or memory(action='list') for more.")
    for i in range(4):
        save(alice, f"lunch_{i}", f"Lunch option {i} is pasta.")  # in scope, never matching
    _s, _ = alice.post("/v1/api/memories", {"name": "mine", "content": "my deploy note", "description": "x",
                                           "scope": "user"})
    b = turn(alice, sid, "how do we deploy?")
    assert b["candidates"] == 2 and b["in_scope"] == 6
    assert "You have 6 memories in scope." in b["system_message"]
    alice.delete("/v1/api/memories/lunch_0")
    assert turn(alice, sid, "how do we deploy?")["in_scope"] == 5


def test_warm_context_reads_its_namespaces_once_and_touches_in_one_write(alice, tmp_path):
    """A warm turn over two namespaces (global and the user's) that injects three memories: the
    session read, ONE consistent read of both namespaces (the hint's count and the ranking), ONE
    write touching all three, the usage counter; the touch counts as before. Server-Timing names
    those phases. The container's index cache is this test's own: one left by an earlier test
    would know other incarnations' lanes."""
    from chalicelib import timing
    from chalicelib.search import index
    with index.using(index.IndexCache(str(tmp_path / "cache"))):
        _warm_context_turn(alice, timing)


def _warm_context_turn(alice, timing):
    from tests.api.test_search_freshness import CallCounter
    for name in ("deploy_process", "deploy_canary"):
        save(alice, name, f"Deploy notes: {name}.")
    save(alice, "deploy_mine", "My deploy habit.", scope="user")
    save(alice, "lunch", "Lunch is at noon.")
    sid = session(alice)
    body = {"messages": [{"role": "user", "content": "how do we deploy?"}]}
    turn(alice, sid, "how do we deploy?")  # warm the indexes and the token's last_used_at
    counter = CallCounter().install()
    try:
        resp = alice.client.http.post(f"/v1/api/sessions/{sid}/context", body=json.dumps(body), headers={
            "Authorization": f"Bearer {alice.token}", "Content-Type": "application/json"})
    finally:
        counter.uninstall()
    b = json.loads(resp.body)
    assert resp.status_code == 200 and len(b["injected"]) == 3 and b["in_scope"] == 4, b
    calls = [c for c in counter.calls if "tokens" not in c[1]]
    assert calls == [("dynamodb.GetItem", "cairn-test-structured"), ("dynamodb.BatchGetItem", "cairn-test-banks"),
                     ("dynamodb.TransactWriteItems", "cairn-test-structured"),
                     ("dynamodb.UpdateItem", "cairn-test-usage")], list(zip(counter.calls, counter.where, strict=True))
    assert list(timing.parse(resp.headers[timing.HEADER])) == [
        "token", "session", "bank", "rank", "touch", "render", "usage", "total"]
    for name in ("deploy_process", "deploy_canary", "deploy_mine"):
        g = alice.get(f"/v1/api/memories/{name}" + ("?scope=user" if name == "deploy_mine" else ""))[1]
        assert g["access_count"] == 2 and g["last_accessed"], g
    assert alice.get("/v1/api/memories/lunch")[1]["access_count"] == 0


def test_a_touch_skips_a_memory_deleted_meanwhile_and_counts_the_rest_once(alice):
    """One memory of the batch lost its location item (deleted after the ranking): the others are
    touched exactly once (the cancelled batch wrote nothing; the second one leaves it out)."""
    from chalicelib.structured import objects
    ids = [save(alice, f"note_{i}", f"Note {i}.")["memory_id"] for i in range(3)]
    assert alice.delete("/v1/api/memories/note_1")[0] == 200
    assert objects.touch("default", [ids[0], ids[1], ids[2], ids[0]], 1_700_000_000_000) == {ids[0], ids[2]}
    got = objects.touches("default", ids)
    assert set(got) == {ids[0], ids[2]}
    assert [(got[i].access_count, got[i].last_accessed) for i in (ids[0], ids[2])] == [(1, 1_700_000_000_000)] * 2
    assert objects.touch("default", [ids[1]], 1) == set()  # nothing left to touch: no error
