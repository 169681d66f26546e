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


def _extraction_items(org: str) -> list[dict]:
    from chalicelib.storage.tables import ExtractionModel, bind
    bind()
    return sorted((it.attribute_values for it in ExtractionModel.scan() if it.org_id == org),
                  key=lambda a: (a["session_key"], a["sk"]))


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
    """Two orgs send a turn with the same session, turn and bank ids before the queue runs: each
    org's turn is extracted into its own bank, and the first org's extraction records and memories
    are the same as when it ran alone."""
    n = next(_orgs)
    first, second = f"org{n}a", f"org{n}b"
    tokens = {org: mint(org=org, user_id="u") for org in (first, second)}

    def send(org: str, fact: str) -> None:
        body = {"session_id": session, "turn_id": turn, "metadata": {"memory_bank": bank},
                "messages": [{"role": "user", "content": f"Remember that {fact}."}]}
        s, b = api.post("/v1/hooks/turn-completed", body, token=tokens[org])
        assert s == 202 and b["queued"] is True, b

    send(first, f"the {first} build runs at night")
    queued()
    alone = (_extraction_items(first), _fact(api, tokens[first], bank))
    send(second, f"the {second} build runs at dawn")
    send(first, f"the {first} build runs at night")  # a redelivery of the same turn: still one
    queued()
    assert _fact(api, tokens[second], bank) == [f"The {second} build runs at dawn."]
    assert (_extraction_items(first), _fact(api, tokens[first], bank)) == alone
    cursor = [a for a in _extraction_items(second) if a["sk"] == "cursor"]
    assert [(c["position"], c["turns"]) for c in cursor] == [(1, [turn])]


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
