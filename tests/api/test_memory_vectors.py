"""Sentence vectors stored with records: every write path stores the current model's vector of the
embedded text on the memory item and its revision, a stale one is embedded again, a text the model
does not cover gets none, the bank's coverage counter follows, and no response, export or history
ever shows a vector."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chalicelib import semantic
from chalicelib.core import store, vectors
from chalicelib.storage.tables import MemoryModel, RevisionModel, bind
from tests.api.team_support import World

pytestmark = pytest.mark.skipif(not semantic.available(), reason="the model artifact is not built")

M = "/v1/banks/vec/memories"


def _items(text_has: str) -> list[MemoryModel]:
    bind()
    return [it for it in MemoryModel.scan() if it.record and text_has in json.dumps(it.record, ensure_ascii=False)]


def _revisions(memory_id: str) -> list[RevisionModel]:
    bind()
    return [r for r in RevisionModel.scan() if r.memory_id == memory_id]


def _vector(blob: bytes | None) -> np.ndarray:
    got = vectors.decode(blob)
    assert got is not None
    return np.frombuffer(got.codes, dtype=np.int8).astype(np.float32) * got.scale


def _cos(blob: bytes | None, text: str) -> float:
    [ref] = semantic.embed_documents([text])
    assert ref is not None
    return float(_vector(blob) @ ref)


def test_a_saved_memory_and_its_revisions_carry_the_vector_of_its_text(api):
    text = "We chose Postgres for the orders database because of JSONB"
    s, b = api.post(M, {"text": text})
    assert s == 201, b
    [item] = _items("orders database")
    got = vectors.decode(item.vec)
    assert got is not None and got.model == semantic.MODEL_ID and got.current_for(text)
    assert _cos(item.vec, text) > 0.99  # int8 codes keep the direction
    [rev] = _revisions(b["memory"]["id"])
    assert rev.vec == item.vec
    # a pin keeps the vector; a new text gets the new text's vector, on the item and its revision
    assert api.post(f"{M}/{b['memory']['id']}/pin", {"pinned": True})[0] == 200
    assert _items("orders database")[0].vec == item.vec
    new = "We moved the orders database to MySQL"
    s, u = api.patch(f"{M}/{b['memory']['id']}", {"text": new})
    assert s == 200, u
    [item2] = _items("MySQL")
    assert vectors.decode(item2.vec).current_for(new) and _cos(item2.vec, new) > 0.99
    assert [vectors.decode(r.vec).current_for(new) for r in
            sorted(_revisions(b["memory"]["id"]), key=lambda r: r.rev_key)] == [False, False, True]


def test_no_response_export_or_history_shows_a_vector(api):
    _s, b = api.post(M, {"text": "User likes strong black coffee"})
    mid = b["memory"]["id"]
    bodies = [b, api.get(f"{M}/{mid}")[1], api.get(f"{M}/{mid}/history")[1], api.get(M)[1],
              api.post("/v1/banks/vec/recall", {"query": "coffee"})[1],
              api.get("/v1/banks/vec/export?history=true")[1]]
    for body in bodies:
        text = json.dumps(body)
        assert "coffee" in text
        assert "vec" not in text.replace("/vec/", "") and "vector" not in text, text[:300]


def test_structured_and_team_memories_embed_name_description_and_text(api):
    s, b = api.post("/v1/api/memories", {"name": "deploy_window", "description": "when we ship",
                                         "content": "Releases go out on Tuesdays"})
    assert s in (200, 201), b
    [item] = _items("Releases go out")
    assert vectors.decode(item.vec).current_for("deploy_window\nwhen we ship\nReleases go out on Tuesdays")
    world = World(api)
    e = world.create(title="Use Postgres")
    world.write_text("alice", e["id"], "Orders live in Postgres.")
    assert world.accept("bob", e["id"], world.entry("bob", e["id"])["documentSha256"])[0] == 200
    [proj] = _items("Orders live in Postgres")
    rec = store.record_of(proj)
    got = vectors.decode(proj.vec)
    # a team projection's text is the entry's title and text
    assert got is not None and got.current_for("Use Postgres\n\nOrders live in Postgres.")
    assert vectors.embedded_text(rec) == rec.text


def test_uncovered_text_gets_none_and_the_coverage_counter_follows(api):
    assert api.post(M, {"text": "Deploys happen on Fridays after lunch"})[0] == 201
    s, _cjk = api.post(M, {"text": "東京都の天気は晴れです"})
    assert s == 201
    [item] = _items("東京都")
    assert item.vec is None
    assert store.vector_coverage("default", "vec") == (1, 2)
    raw = "".join(json.dumps({"text": f"Imported note number {i} about tea"}) + "\n" for i in range(5))
    s, b = api.post("/v1/banks/vec/import", raw=raw, headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and b["imported"] == 5, b
    assert store.vector_coverage("default", "vec") == (6, 7)
    mid = _items("Fridays after lunch")[0].sk
    assert api.delete(f"{M}/{mid}")[0] == 200
    assert store.vector_coverage("default", "vec") == (5, 6)
    assert store.vector_coverage("default", "nobank") is None


def test_a_stale_vector_is_embedded_again_on_the_next_write(api):
    text = "The staging cluster runs in Frankfurt"
    assert api.post(M, {"text": text})[0] == 201
    [item] = _items("staging cluster")
    original = item.vec
    stale = item.vec.replace(semantic.MODEL_ID.encode(), b"x" * len(semantic.MODEL_ID))
    item.update(actions=[MemoryModel.vec.set(stale)])
    assert vectors.decode(_items("staging cluster")[0].vec).current_for(text) is False
    s, again = api.post(M, {"text": text})  # a reinforcement: same text, same memory
    assert s == 200 and again["memory"]["corroboration"] == 1, again
    fixed = _items("staging cluster")[0].vec
    assert vectors.decode(fixed).current_for(text) and fixed == original
