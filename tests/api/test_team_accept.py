"""Review, accept, DLP, supersede and retrieval of team memory: separation of duties, the document
hash, DLP policies, supersede-on-accept in one transaction, pending changes never reaching
retrieval, attribution."""

from __future__ import annotations

import pytest

from tests.api.state import assert_unchanged, dump
from tests.api.team_support import MEM, SPACES, World

AWS_PAIR = "Prod key AKIAIOSFODNN7EXAMPLE with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY is in the vault."


@pytest.fixture
def world(api):
    return World(api)


def _projection(world, eid):
    from chalicelib.core import store
    from chalicelib.team.accept import namespace
    row = store.get_bank_row("default", namespace(world.space))
    if row is None:
        return None
    item = store.get_item(row.incarnation, eid)
    return store.record_of(item) if item else None


def test_accept_by_second_person_projects_the_accepted_revision(world):
    e = world.create()
    world.write_text("alice", e["id"], "Orders live in Postgres 16.")
    sha = world.entry("bob", e["id"])["documentSha256"]
    st, body = world.accept("bob", e["id"], sha)
    assert st == 200, body
    assert body["status"] == "accepted" and body["revision"] == 1 and body["acceptedBy"] == "bob"
    got = world.entry("reader", e["id"])
    assert got["projectionSha256"] == sha == got["documentSha256"]
    rec = _projection(world, e["id"])
    assert rec.live and rec.text == "Use Postgres\n\nOrders live in Postgres 16."
    assert rec.meta["entryId"] == e["id"] and rec.meta["revision"] == 1 and rec.meta["kind"] == "decision"
    assert rec.meta["title"] == "Use Postgres" and rec.meta["acceptedAt"].endswith("Z")


def test_separation_of_duties(world):
    e = world.create()  # alice creates
    world.write_text("bob", e["id"], "bob edits")  # bob changes it
    world.grant(world.space, world.key_id(), ["context:space:read", "context:space:write"])
    before = dump()
    for who in ("alice", "bob"):
        st, body = world.accept(who, e["id"])
        assert (st, body["code"]) == (403, "context.memory.self_accept"), who
    # an API key that may write cannot accept (a person is required)
    st, body = world.accept("key", e["id"])
    assert (st, body["code"]) == (403, "context.person_required")
    # a reader cannot accept at all
    st, body = world.accept("reader", e["id"])
    assert (st, body["code"]) == (403, "forbidden")
    assert_unchanged(before)
    assert world.accept("carol", e["id"])[0] == 200
    # after acceptance bob's earlier edit no longer bars him; the creator stays barred
    world.write_text("carol", e["id"], " more")
    assert world.accept("carol", e["id"])[1]["code"] == "context.memory.self_accept"
    assert world.accept("alice", e["id"])[1]["code"] == "context.memory.self_accept"
    st, body = world.accept("bob", e["id"])
    assert st == 200 and body["revision"] == 2


def test_stale_hash_is_document_changed(world):
    e = world.create()
    world.write_text("alice", e["id"], "v1")
    stale = world.entry("bob", e["id"])["documentSha256"]
    world.write_text("alice", e["id"], " v2")
    current = world.entry("bob", e["id"])["documentSha256"]
    before = dump()
    st, body = world.accept("bob", e["id"], stale)
    assert (st, body["code"]) == (409, "document_changed") and body["details"]["documentSha256"] == current
    assert_unchanged(before)
    # a title change changes the document too
    world.call("alice", "PATCH", f"{MEM}/entries/{e['id']}", {"title": "Use Postgres 16"})
    st, body = world.accept("bob", e["id"], current)
    assert st == 409 and body["details"]["documentSha256"] != current


def test_dlp_redact_indexes_redacted_text(world):
    e = world.create()
    world.write_text("alice", e["id"], AWS_PAIR + " Ask ops@example.com or +44 20 7946 0958. Card 4111 1111 1111 1111.")
    got = world.entry("bob", e["id"])
    assert "AKIA" not in got["text"] and "wJalr" not in got["text"] and "ops@example.com" not in got["text"]
    assert got["dlpFindings"] == ["aws_key", "email", "payment_card", "phone", "token"]
    st, body = world.accept("bob", e["id"], got["documentSha256"])
    assert st == 200, body
    rec = _projection(world, e["id"])
    for value in ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "ops@example.com", "7946", "4111"):
        assert value not in rec.text
    assert "[REDACTED:aws_key]" in rec.text and "[REDACTED:payment_card]" in rec.text


@pytest.mark.parametrize("policy", ["drop", "block_source"])
def test_dlp_drop_and_block_source_refuse(world, api, policy):
    api.patch(f"{SPACES}/{world.space}", {"dlp_policy": policy})
    e = world.create()
    world.write_text("alice", e["id"], "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\n"
                     "-----END RSA PRIVATE KEY-----\nand the token ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    before = dump()
    st, body = world.accept("bob", e["id"])
    assert (st, body["code"]) == (422, "dlp_blocked")
    assert body["details"]["kinds"] == ["private_key", "token"] and body["details"]["policy"] == policy
    assert "ghp_" not in str(body) and "MIIE" not in str(body)
    assert_unchanged(before)
    assert _projection(world, e["id"]) is None


def test_clean_text_passes_drop_policy(world, api):
    api.patch(f"{SPACES}/{world.space}", {"dlp_policy": "drop"})
    e = world.create()
    world.write_text("alice", e["id"], "We deploy on Tuesdays; see ADR 0001 from 2026-11-29.")
    assert world.accept("bob", e["id"])[0] == 200


def test_supersede_on_accept_is_atomic(world):
    old = world.create(title="Use MySQL")
    world.write_text("alice", old["id"], "MySQL for orders.")
    assert world.accept("bob", old["id"])[0] == 200
    new = world.create(title="Use Postgres", supersedes=old["id"])
    world.write_text("alice", new["id"], "Postgres for orders.")
    st, body = world.accept("bob", new["id"])
    assert st == 200 and body["status"] == "accepted"
    old_now = world.entry("reader", old["id"])
    assert old_now["status"] == "superseded" and old_now["supersededBy"] == new["id"]
    rec = _projection(world, old["id"])
    assert not rec.live and rec.superseded_by == new["id"]
    assert _projection(world, new["id"]).live
    # superseded entries are read-only
    st, body = world.call("alice", "PATCH", f"{MEM}/entries/{old['id']}", {"title": "x"})
    assert (st, body["code"]) == (409, "entry_read_only")


def test_supersede_on_accept_fails_whole(world, monkeypatch):
    """If any write of the accept transaction fails, neither entry nor projection changes."""
    old = world.create(title="Use MySQL")
    world.write_text("alice", old["id"], "MySQL for orders.")
    assert world.accept("bob", old["id"])[0] == 200
    new = world.create(title="Use Postgres", supersedes=old["id"])
    world.write_text("alice", new["id"], "Postgres for orders.")
    sha = world.entry("bob", new["id"])["documentSha256"]
    from chalicelib.team import store

    # The last write staged for the superseded entry (its history event) joins a condition that
    # fails on every attempt: the whole transaction must be cancelled.
    real_event = store.add_event

    def sabotage(tx, org, eid, action, actor, details=None, at=None):
        if action == "superseded":
            from chalicelib.storage.tables import TeamSpaceModel
            tx.condition_check(TeamSpaceModel, "default", range_key=f"space#{world.space}",
                               condition=TeamSpaceModel.version == -1)
        return real_event(tx, org, eid, action, actor, details, at)

    monkeypatch.setattr(store, "add_event", sabotage)
    from chalicelib.storage import txn
    few_retries = txn.get_settings().model_copy(update={"write_retries": 2})
    monkeypatch.setattr(txn, "get_settings", lambda: few_retries)
    before = dump()
    st, body = world.accept("bob", new["id"], sha)
    assert (st, body["code"]) == (503, "write_contention"), body  # every attempt lost: retryable
    assert_unchanged(before)
    assert world.entry("reader", old["id"])["status"] == "accepted"
    assert _projection(world, new["id"]) is None and _projection(world, old["id"]).live


def test_supersede_and_archive_leave_retrieval(world):
    a = world.create(title="Cache TTL")
    world.write_text("alice", a["id"], "The cache TTL is 300 seconds.")
    b = world.create(title="Cache TTL v2")
    world.write_text("alice", b["id"], "The cache TTL is 60 seconds.")
    assert world.accept("bob", a["id"])[0] == 200
    assert world.accept("bob", b["id"])[0] == 200
    st, body = world.call("alice", "POST", f"{MEM}/entries/{a['id']}/supersede", {"supersededBy": b["id"]})
    assert st == 200 and body["status"] == "superseded" and body["supersededBy"] == b["id"]
    assert not _projection(world, a["id"]).live
    st, body = world.call("alice", "POST", f"{MEM}/entries/{b['id']}/archive")
    assert st == 200 and body["status"] == "archived"
    assert not _projection(world, b["id"]).live
    from chalicelib.storage.tables import AuditModel
    targets = {(ev.action, ev.target) for ev in AuditModel.query("default") if ev.action.startswith("context.memory")}
    assert {("context.memory.supersede", a["id"]), ("context.memory.archive", b["id"])} <= targets
    # superseding needs an accepted target; a draft cannot be superseded
    c = world.create(title="draft")
    st, body = world.call("alice", "POST", f"{MEM}/entries/{c['id']}/supersede", {"supersededBy": b["id"]})
    assert (st, body["code"]) == (409, "invalid_transition")


def test_retrieval_serves_accepted_text_only_and_attributes(world, api):
    e = world.create(title="Deploy window")
    world.write_text("alice", e["id"], "Deploys happen on Tuesday mornings.")
    draft = world.create(title="Draft idea")
    world.write_text("alice", draft["id"], "Deploys happen on Friday evenings.")
    assert world.accept("bob", e["id"])[0] == 200
    # pending change to the accepted entry
    world.write_text("alice", e["id"], " Also Thursdays.")
    st, body = world.retrieve("reader", "deploys happen")
    assert st == 200, body
    assert [r["entryId"] for r in body["results"]] == [e["id"]]
    hit = body["results"][0]
    assert hit["revision"] == 1 and "Thursdays" not in hit["text"] and "Tuesday" in hit["text"]
    assert hit["metadata"]["memory"]["entryId"] == e["id"] and hit["kind"] == "decision"
    st, body2 = world.retrieve("reader", "thursdays")
    assert body2["results"] == []
    # accepted again by another person: the new revision replaces the old one
    assert world.accept("carol", e["id"])[0] == 200
    st, body3 = world.retrieve("reader", "thursdays")
    assert [(r["entryId"], r["revision"]) for r in body3["results"]] == [(e["id"], 2)]
    st, att = api.get(f"{MEM}/attributions?spaceId={world.space}")
    assert st == 200
    served = [a["entries"] for a in att["attributions"]]
    assert [{"entryId": e["id"], "revision": 2}] in served and [{"entryId": e["id"], "revision": 1}] in served
    assert all(a["actor"] == "person:reader" for a in att["attributions"])
    # unreadable spaces are not found
    st, body = world.retrieve("stranger", "deploys")
    assert (st, body["code"]) == (404, "not_found")
