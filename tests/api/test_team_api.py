"""Team memory over HTTP: entries, Yjs updates and their error codes, the permission
matrix, history and audit. Every refused request is shown to write nothing."""

from __future__ import annotations

import pytest
from pycrdt import Doc, Map, Text

from tests.api.state import assert_unchanged, contains, dump
from tests.api.team_support import MEM, SPACES, Editor, World, b64, unb64

# yjs encodeStateAsUpdateV2
V2_UPDATE = bytes.fromhex("0000028d01000001040f0c636f6e74656e7468656c6c6f07050101000001010000")


@pytest.fixture
def world(api):
    return World(api)


def test_create_edit_read_roundtrip(world):
    e = world.create(links=["https://tracker.example.com/T-1", "source:adr-7"])
    assert e["status"] == "draft" and e["revision"] == 0 and e["metaVersion"] == 1
    assert e["createdAt"].endswith("Z") and len(e["createdAt"]) == 24  # ISO 8601 with ms
    ed = world.write_text("alice", e["id"], "We use Postgres 16 for orders.")
    got = world.entry("reader", e["id"])
    assert got["text"] == "We use Postgres 16 for orders." == ed.text
    assert len(got["documentSha256"]) == 64 and got["projectionSha256"] is None
    assert got["limits"]["compactAfter"] == 256
    replica = Editor()
    replica.load(got["snapshot"])
    assert replica.text == got["text"]


def test_update_id_duplicate_and_reuse(world):
    e = world.create()
    ed = Editor()
    u1 = ed.insert(0, "hello")
    st, body = world.post_update("alice", e["id"], u1, "update-0001")
    assert st == 200 and body["duplicate"] is False
    st, body = world.post_update("alice", e["id"], u1, "update-0001")
    assert st == 200 and body == {"duplicate": True, "seq": 1}
    before = dump()
    u2 = ed.insert(5, " world")
    st, body = world.post_update("alice", e["id"], u2, "update-0001")
    assert st == 409 and body["code"] == "update_id_reused"
    assert_unchanged(before)
    for bad in ("short", "x" * 65, "has space!"):
        st, body = world.post_update("alice", e["id"], u2, bad)
        assert st == 400 and body["code"] == "validation_error"
    assert_unchanged(before)


def test_missing_dependency_returns_state_vector_and_resend_converges(world):
    e = world.create()
    a, b = Editor(), Editor()
    ua = a.insert(0, "alpha ")
    assert world.post_update("alice", e["id"], ua)[0] == 200
    b.apply(ua)
    first = b.insert(6, "beta")
    second = b.insert(10, "!")
    before = dump()
    st, body = world.post_update("bob", e["id"], second)  # depends on `first`, which the server lacks
    assert st == 409 and body["code"] == "missing_dependency"
    assert_unchanged(before)
    st, _ = world.post_update("bob", e["id"], b.diff_against(body["details"]["stateVector"]))
    assert st == 200
    assert world.entry("alice", e["id"])["text"] == "alpha beta!" == b.text
    del first


def test_delete_of_unknown_clock_is_missing_dependency(world):
    e = world.create()
    ed = Editor()
    ed.insert(0, "abc")  # never sent
    delete_only = ed.delete(0, 1)
    before = dump()
    st, body = world.post_update("alice", e["id"], delete_only)
    assert st == 409 and body["code"] == "missing_dependency"
    assert_unchanged(before)


def _format_update():
    ed = Editor()
    ed.insert(0, "hello")
    before = ed.doc.get_state()
    ed.content.format(0, 2, {"bold": True})
    return ed.doc.get_update(before)


def _format_set_and_cleared():
    doc = Doc(skip_gc=True)
    t = doc.get("content", type=Text)
    with doc.transaction():
        t.insert(0, "hello")
        t.format(0, 5, {"bold": True})
        t.format(0, 5, {"bold": None})
    assert str(t) == "hello" and all(not attrs for _, *attrs in [(c, *([a] if a else [])) for c, a in
                                                              [(d[0], d[1] if len(d) > 1 else None) for d in t.diff()]])
    return doc.get_update()


def _map_update():
    d = Doc()
    d.get("content", type=Map)["k"] = "v"
    return d.get_update()


def _other_root():
    d = Doc()
    d.get("notes", type=Text).insert(0, "x")
    return d.get_update()


def _embed():
    d = Doc()
    d.get("content", type=Text).insert_embed(0, {"image": "x.png"})
    return d.get_update()


@pytest.mark.parametrize("make", [_format_update, _format_set_and_cleared, _map_update, _other_root, _embed,
                                  lambda: V2_UPDATE, lambda: b"\xff\xfe\xfd"],
                         ids=["format", "format-set-and-cleared", "map", "other-root", "embed", "v2", "garbage"])
def test_unsupported_updates(world, make):
    e = world.create()
    update = make()
    before = dump()
    st, body = world.post_update("alice", e["id"], update)
    assert st == 422 and body["code"] == "unsupported_update", body
    assert_unchanged(before)


def test_client_id_owned(world):
    e = world.create()
    a = Editor(client_id=4242)
    assert world.post_update("alice", e["id"], a.insert(0, "mine"))[0] == 200
    thief = Editor(client_id=4242)
    thief.load(world.entry("bob", e["id"])["snapshot"])
    before = dump()
    st, body = world.post_update("bob", e["id"], thief.insert(4, " stolen"))
    assert st == 403 and body["code"] == "client_id_owned"
    assert_unchanged(before)
    # the owner keeps editing with it
    assert world.post_update("alice", e["id"], a.insert(4, " still"))[0] == 200


def test_meta_version_conflict_and_patch(world):
    e = world.create()
    st, body = world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}",
                          {"title": "Use Postgres 16", "ifMetaVersion": 1})
    assert st == 200 and body["metaVersion"] == 2 and body["title"] == "Use Postgres 16"
    before = dump()
    st, body = world.call("bob", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "Use MySQL", "ifMetaVersion": 1})
    assert st == 409 and body["code"] == "meta_version_conflict" and body["details"]["metaVersion"] == 2
    st, body = world.call("bob", "PATCH", f"{MEM}/entries/{e['id']}", {"classification": "public"})
    assert st == 400 and body["details"]["field"] == "classification"  # may only tighten the space's (internal)
    st, body = world.call("bob", "PATCH", f"{MEM}/entries/{e['id']}", {"links": ["http://insecure.example.com"]})
    assert st == 400
    assert_unchanged(before)
    st, body = world.call("bob", "PATCH", f"{MEM}/entries/{e['id']}", {"classification": "restricted", "kind": "note"})
    assert st == 200 and body["classification"] == "restricted" and body["kind"] == "note"


def test_personal_space_refuses_entries(world, api):
    sid = world.new_space(kind="personal")
    before = dump()
    st, body = world.call("alice", "POST", f"{MEM}/entries", {"spaceId": sid, "kind": "note", "title": "x"})
    assert st == 422 and body["code"] == "personal_space"
    assert_unchanged(before)


def test_collab_switch_gates_create_patch_update_accept_not_read_supersede_archive(world, api):
    e = world.create()
    world.write_text("alice", e["id"], "text")
    st, _ = api.patch(f"{SPACES}/{world.space}", {"team_memory_enabled": False})
    assert st == 200
    before = dump()
    code = "context.collab_policy.capability_disabled"
    assert world.call("alice", "POST", f"{MEM}/entries",
                      {"spaceId": world.space, "kind": "note", "title": "t"})[1]["code"] == code
    assert world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "t2"})[1]["code"] == code
    assert world.post_update("alice", e["id"], Editor().insert(0, "x"))[1]["code"] == code
    st, body = world.call("bob", "POST", f"{MEM}/entries/{e['id']}/accept", {"documentSha256": "0" * 64})
    assert st == 403 and body["code"] == code
    assert_unchanged(before)
    assert world.entry("reader", e["id"])["text"] == "text"
    st, body = world.call("alice", "POST", f"{MEM}/entries/{e['id']}/archive")
    assert st == 200 and body["status"] == "archived"


def test_permission_matrix(world):
    e = world.create()
    world.write_text("alice", e["id"], "secret plans")
    eid = e["id"]
    before = dump()
    # read only: may read, may not change (403 forbidden)
    assert world.call("reader", "GET", f"{MEM}/entries/{eid}")[0] == 200
    st, body = world.post_update("reader", eid, Editor().insert(0, "x"))
    assert (st, body["code"]) == (403, "forbidden")
    st, body = world.call("reader", "PATCH", f"{MEM}/entries/{eid}", {"title": "x"})
    assert (st, body["code"]) == (403, "forbidden")
    # write grant without read: indistinguishable from a missing entry
    for who in ("writer", "stranger", "other"):
        for method, path, body_ in (("GET", f"{MEM}/entries/{eid}", None),
                                    ("PATCH", f"{MEM}/entries/{eid}", {"title": "x"}),
                                    ("GET", f"{MEM}/entries/{eid}/updates", None),
                                    ("GET", f"{MEM}/entries/{eid}/history", None),
                                    ("POST", f"{MEM}/entries/{eid}/archive", None)):
            st, body = world.call(who, method, path, body_)
            assert (st, body["code"]) == (404, "not_found"), (who, method, path, body)
        st, body = world.call(who, "GET", f"{MEM}/entries/ent_00000000000000000000")
        assert (st, body["code"]) == (404, "not_found")
        st, body = world.call(who, "GET", f"{MEM}/entries?spaceId={world.space}")
        assert (st, body["code"]) == (404, "not_found")
    assert_unchanged(before)
    # other space: alice has no grant in a second space
    st, body = world.api.post(SPACES, {"name": "Finance"})
    other_space = body["id"]
    st, body = world.call("alice", "POST", f"{MEM}/entries", {"spaceId": other_space, "kind": "note", "title": "x"})
    assert (st, body["code"]) == (404, "not_found")
    # deny rule overrides grants
    st, _ = world.api.put("/api/v1/context/deny-rules", {"rules": [{"memberId": "alice", "spaceId": world.space}]})
    assert st == 200
    st, body = world.call("alice", "GET", f"{MEM}/entries/{eid}")
    assert (st, body["code"]) == (404, "not_found")
    st, _ = world.api.put("/api/v1/context/deny-rules",
                          {"rules": [{"memberId": "bob", "permissions": ["context:space:write"]}]})
    assert world.call("alice", "GET", f"{MEM}/entries/{eid}")[0] == 200
    assert world.call("bob", "GET", f"{MEM}/entries/{eid}")[0] == 200
    st, body = world.call("bob", "PATCH", f"{MEM}/entries/{eid}", {"title": "x"})
    assert (st, body["code"]) == (403, "forbidden")
    # admin routes need context:admin
    st, body = world.call("alice", "POST", SPACES, {"name": "mine"})
    assert (st, body["code"]) == (403, "forbidden")
    st, body = world.call("alice", "GET", f"{MEM}/attributions?spaceId={world.space}")
    assert (st, body["code"]) == (403, "forbidden")


def test_member_delete_revokes(world):
    e = world.create()
    assert world.call("carol", "GET", f"{MEM}/entries/{e['id']}")[0] == 200
    st, body = world.api.delete(f"{SPACES}/{world.space}/members/carol")
    assert st == 200 and body == {"removed": True}
    assert world.call("carol", "GET", f"{MEM}/entries/{e['id']}")[0] == 404


def test_api_key_member_edits_by_token_id(world):
    world.grant(world.space, world.key_id(), ["context:space:read", "context:space:write"])
    e = world.create(who="key")
    assert e["createdBy"] == world.key_id()
    world.write_text("key", e["id"], "from a key")


def test_list_filters_search_and_snippet_dlp(world):
    a = world.create(title="Deploy on Tuesdays")
    world.write_text("alice", a["id"], "Deploys go out Tuesday. Questions to ops@example.com please.")
    b = world.create(title="Glossary: SLO", kind="glossary")
    st, body = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}&kind=glossary")
    assert [x["id"] for x in body["entries"]] == [b["id"]]
    st, body = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}&q=questions")
    assert [x["id"] for x in body["entries"]] == [a["id"]]
    assert ("ops@example.com" not in body["entries"][0]["snippet"]
            and "[REDACTED:email]" in body["entries"][0]["snippet"])
    st, body = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}&limit=1")
    assert len(body["entries"]) == 1 and body["cursor"]
    st, body2 = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}&limit=1&cursor={body['cursor']}")
    assert body2["entries"][0]["id"] != body["entries"][0]["id"]
    st, body = world.call("reader", "GET", f"{MEM}/entries")
    assert (st, body["details"]["field"]) == (400, "spaceId")
    st, body = world.call("reader", "GET", f"{MEM}/entries?spaceId={world.space}&status=bogus")
    assert st == 400


def test_history_and_audit_never_hold_text(world, api):
    e = world.create()
    world.write_text("alice", e["id"], "Zanzibar-unique-phrase")
    world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "Use Postgres 16"})
    st, body = world.accept("bob", e["id"])
    assert st == 200, body
    st, body = world.call("reader", "GET", f"{MEM}/entries/{e['id']}/history")
    kinds = [(ev["type"], ev["action"], ev["author"]) for ev in body["events"]]
    assert kinds == [("status", "create", "alice"), ("edit", "update", "alice"), ("meta", "patch", "alice"),
                     ("status", "accept", "bob")]
    from chalicelib.storage.tables import AuditModel
    actions = sorted(ev.action for ev in AuditModel.query("default") if ev.action.startswith("context.memory"))
    assert actions == ["context.memory.accept", "context.memory.create", "context.memory.patch",
                       "context.memory.update"]
    hits = contains(dump(), "Zanzibar-unique-phrase")
    assert not any("audit" in h or "events" in h for h in hits), hits


def test_read_only_after_archive(world):
    e = world.create()
    assert world.call("alice", "POST", f"{MEM}/entries/{e['id']}/archive")[0] == 200
    before = dump()
    st, body = world.post_update("alice", e["id"], Editor().insert(0, "x"))
    assert (st, body["code"]) == (409, "entry_read_only")
    st, body = world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "x"})
    assert (st, body["code"]) == (409, "entry_read_only")
    st, body = world.call("alice", "POST", f"{MEM}/entries/{e['id']}/archive")
    assert (st, body["code"]) == (409, "invalid_transition")
    assert_unchanged(before)


def test_get_updates_by_seq_and_state_vector(world):
    e = world.create()
    ed = Editor()
    for word in ("one ", "two ", "three"):
        assert world.post_update("alice", e["id"], ed.insert(len(ed.text), word))[0] == 200
    _st, body = world.call("reader", "GET", f"{MEM}/entries/{e['id']}/updates?sinceSeq=1")
    assert [u["seq"] for u in body["updates"]] == [2, 3] and body["seq"] == 3
    assert all(u["author"] == "alice" for u in body["updates"])
    late = Editor()
    late.apply(ed.insert(0, "") or b"\x00\x00")
    _st, body = world.call("reader", "GET", f"{MEM}/entries/{e['id']}/updates?stateVector={b64(late.doc.get_state())}")
    late.apply(unb64(body["update"]))
    assert late.text == "one two three"


def test_malformed_inputs_are_400_and_write_nothing(world):
    e = world.create()
    before = dump()
    st, body = world.call("alice", "POST", f"{MEM}/entries/{e['id']}/updates",
                          {"updateId": "update-0001", "update": "%%%"})
    assert (st, body["details"]["field"]) == (400, "update")
    st, body = world.call("bob", "POST", f"{MEM}/entries/{e['id']}/accept", {"documentSha256": "not-a-hash"})
    assert (st, body["code"]) == (400, "validation_error")
    st, body = world.call("alice", "GET", f"{MEM}/entries/{e['id']}/updates?stateVector=AQ")
    assert (st, body["details"]["field"]) == (400, "stateVector")
    st, body = world.call("alice", "POST", f"{MEM}/entries", {"spaceId": world.space, "kind": "essay", "title": "x"})
    assert (st, body["code"]) == (400, "validation_error")
    st, body = world.call("alice", "POST", f"{MEM}/entries",
                          {"spaceId": world.space, "kind": "note", "title": "x" * 201})
    assert st == 400
    st, body = world.call("alice", "POST", f"{MEM}/entries",
                          {"spaceId": world.space, "kind": "note", "title": "x", "links": ["https://a.example"] * 51})
    assert st == 400
    st, body = world.call("alice", "POST", f"{MEM}/entries",
                          {"spaceId": world.space, "kind": "note", "title": "x",
                           "supersedes": "ent_00000000000000000000"})
    assert (st, body["details"]["field"]) == (400, "supersedes")
    assert_unchanged(before)


def test_update_post_accepts_exactly_the_update_ids_update_id_matches():
    from pydantic import ValidationError

    from chalicelib.team.entries import UPDATE_ID, UpdatePost
    ids = ("upd-0001", "A_b-" * 16, "short", "x" * 65, "upd 0001", "upd-0001\n", "\u00fcnic0de-1", "12345678")
    assert {bool(UPDATE_ID.fullmatch(u)) for u in ids} == {True, False}
    for uid in ids:
        try:
            UpdatePost.model_validate({"updateId": uid, "update": "AA=="})
            accepted = True
        except ValidationError:
            accepted = False
        assert accepted == bool(UPDATE_ID.fullmatch(uid)), uid
