"""Extraction across tenants: identical session, turn and bank ids in another org (or another
bank) never stop a turn's extraction, merge with it or change what it wrote: not the FIFO
queue's deduplication and groups, not the extraction table's records (cursor, job progress,
provenance, parked jobs)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.extraction.job import TurnJob, queue_ids
from tests.api.conftest import mint

# ids as a client may send them: printable, '#' and '|' included (they separate key parts)
IDS = st.text(alphabet=st.sampled_from("ab1#|-_ ."), min_size=1, max_size=8).filter(lambda s: s.strip() == s)
BANKS = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
_orgs = itertools.count(1)


def _job(org: str, bank: str, session: str, turn: str) -> TurnJob:
    return TurnJob(org_id=org, bank=bank, session_id=session, turn_id=turn, actor="person:x")


@given(org=IDS, other=IDS, bank=BANKS, other_bank=BANKS, session=IDS, turn=IDS)
def test_queue_ids_name_the_org_and_bank(org, other, bank, other_bank, session, turn):
    group, dedup = queue_ids(_job(org, bank, session, turn))
    assert len(group) == len(dedup) == 64  # within SQS's 128 characters, whatever the ids
    assert queue_ids(_job(org, bank, session, turn)) == (group, dedup)  # a redelivery is a duplicate
    if other != org:
        assert queue_ids(_job(other, bank, session, turn))[0] != group
        assert queue_ids(_job(other, bank, session, turn))[1] != dedup
    if other_bank != bank:
        assert queue_ids(_job(org, other_bank, session, turn))[1] != dedup
    assert queue_ids(_job(org, bank, session, turn), again="resumed#20260101")[1] != dedup


def _summary(api, token: str, org: str, bank: str) -> tuple:
    """What the org's extraction left: its bank's memories and every extraction record's keys and
    values (times left out: they differ from run to run)."""
    from chalicelib.storage.tables import ExtractionModel, bind
    bind()
    records = sorted((it.sk, it.position, tuple(it.turns or ()), it.bank, it.memory_id, it.turn_id)
                     for it in ExtractionModel.scan() if it.org_id == org)
    s, b = api.get(f"/v1/banks/{bank}/memories", token=token)
    memories = sorted((m["id"], m["text"], m["corroboration"]) for m in b["memories"]) if s == 200 else []
    return memories, records


def _fact(api, token, org_bank: str) -> list[str]:
    s, b = api.get(f"/v1/banks/{org_bank}/memories", token=token)
    return [m["text"] for m in b["memories"]] if s == 200 else []


@pytest.fixture
def queued(api, aws, monkeypatch):
    """Jobs go to the moto FIFO queue; ``poll()`` runs them through the app's SQS handler."""
    from app import app as chalice_app
    from infra.local.events import LocalEvents
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    loops = LocalEvents(chalice_app, queue_url=aws["CAIRN_QUEUE_URL"], log=lambda msg: None)

    def poll() -> None:
        while loops.poll_queue()["received"]:
            pass
    return poll


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bank=BANKS, session=IDS, turn=IDS)
def test_another_orgs_identical_ids_change_nothing(api, queued, bank, session, turn):
    """An org's turn alone, then two orgs sending the same turn (same session, turn and bank ids,
    same text) while both wait in the queue, and the first one's redelivery: each org's memories
    and extraction records are exactly those of the org that ran alone."""
    n = next(_orgs)
    orgs = [f"org{n}s", f"org{n}a", f"org{n}b"]
    tokens = {org: mint(org=org, user_id="u") for org in orgs}

    def send(org: str) -> None:
        body = {"session_id": session, "turn_id": turn, "metadata": {"memory_bank": bank},
                "messages": [{"role": "user", "content": "Remember that the build runs at night."}]}
        s, b = api.post("/v1/hooks/turn-completed", body, token=tokens[org])
        assert s == 202 and b["queued"] is True, b

    send(orgs[0])
    queued()
    alone = _summary(api, tokens[orgs[0]], orgs[0], bank)
    assert alone[0] and alone[1], alone  # it extracted and recorded
    send(orgs[1])
    send(orgs[2])
    send(orgs[1])  # a redelivery of the same turn: still one
    queued()
    for org in orgs[1:]:
        assert _summary(api, tokens[org], org, bank) == alone, org


def test_two_orgs_queued_together_both_extract(api, queued):
    """The reported case: both orgs' turns are in the queue at once."""
    tokens = {org: mint(org=org, user_id="u") for org in ("acme", "globex")}
    for org in tokens:
        body = {"session_id": "s1", "turn_id": "t1", "metadata": {"memory_bank": "main"},
                "messages": [{"role": "user", "content": f"Remember that {org} ships on Fridays."}]}
        assert api.post("/v1/hooks/turn-completed", body, token=tokens[org])[0] == 202
    queued()
    for org, token in tokens.items():
        assert _fact(api, token, "main") == [f"{org.capitalize()} ships on Fridays."]
