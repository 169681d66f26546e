"""The semantic signal in recall: a paraphrase finds its memory through the stored vectors, a
question about nothing in the bank still returns nothing, the mode says what ran, only allowed
memories join, and an index written before the vector field existed opens without a rebuild."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from whoosh import index as whoosh_index

from bench import paraphrase
from chalicelib import semantic
from chalicelib.core import vectors
from chalicelib.core.records import Memory
from chalicelib.core.store import Clock
from chalicelib.search.index import INDEX_NAME, BankIndex
from chalicelib.search.schema import VECTOR_FIELD, schema, to_document, with_added_fields
from chalicelib.search.scorer import SegmentData

pytestmark = pytest.mark.skipif(not semantic.available(), reason="the model artifact is not built")

def _text(set_id: str) -> str:
    return next(m.text for m in paraphrase.memories() if m.id == set_id)


@pytest.fixture
def bank(api):
    """The paraphrase set's 500 memories imported into bank ``sem``."""
    raw = b"\n".join(paraphrase.import_lines_of()) + b"\n"
    s, b = api.post("/v1/banks/sem/import", raw=raw.decode(), headers={"Content-Type": "application/x-ndjson"})
    assert s == 200 and b["imported"] == len(paraphrase.memories()), b
    return api


def _recall(api, query, **kw):
    s, b = api.post("/v1/banks/sem/recall", {"query": query, **{"limit": 5, **kw}})
    assert s == 200, b
    return [h["memory"]["text"] for h in b["memories"]], b


def test_paraphrases_find_their_memories_and_the_mode_says_so(bank):
    """Two of the three end-to-end questions reach their memory's top 5; "when do we go live?"
    does not (the Atlas beta that "went live" matches its words, and its gold memory says
    "launches publicly": see docs/banks.md), so it is not asserted here."""
    for question, gold in (("what database did we choose and why?", "o_db"),
                           ("what is the release date?", "b_release")):
        texts, body = _recall(bank, question)
        assert _text(gold) in texts, (question, texts)
        assert body["retrieval"] == "bm25-entity+semantic"
        for hit in body["memories"]:
            assert "semantic" in hit["signals"]
            assert sum(hit["contributions"].values()) == pytest.approx(hit["score"], rel=1e-9)
    top = _recall(bank, "what database did we choose and why?")[1]["memories"][0]
    assert top["signals"]["semantic"] > 0 and top["contributions"]["semantic"] > 0


def test_a_question_about_nothing_in_the_bank_returns_nothing(bank):
    texts, body = _recall(bank, "how tall is the eiffel tower?")
    assert texts == [] and body["retrieval"] == "bm25-entity+semantic"


def test_modes_when_the_signal_does_not_run(bank, monkeypatch):
    assert _recall(bank, "東京の天気")[1]["retrieval"] == "bm25-entity"  # not covered: lexical
    monkeypatch.setenv("CAIRN_MEMORY_W_SEMANTIC", "0")
    texts, body = _recall(bank, "when do we go live?")
    assert body["retrieval"] == "bm25-entity" and _text("a_launch") not in texts
    assert all("semantic" not in h["signals"] for h in body["memories"])


def test_only_allowed_memories_join(bank):
    """A tag filter and a forgotten memory keep their memories out of the semantic candidates."""
    question = "what is the release date?"
    assert _text("b_release") in _recall(bank, question)[0]
    assert _recall(bank, question, tag="nomatch")[0] == []
    _s, listing = bank.get("/v1/banks/sem/memories?limit=100&q=billing dashboard")
    mid = next(m["id"] for m in listing["memories"] if m["text"] == _text("b_release"))
    assert bank.delete(f"/v1/banks/sem/memories/{mid}")[0] == 200
    assert _text("b_release") not in _recall(bank, question)[0]


def test_the_rank_of_when_do_we_go_live(bank):
    """Measured, not asserted to be in the top 5 (see the test above): it must stay findable."""
    texts, _b = _recall(bank, "when do we go live?", limit=100)
    rank = texts.index(_text("a_launch")) + 1 if _text("a_launch") in texts else None
    print("rank of a_launch for 'when do we go live?':", rank)
    assert rank is not None


def test_an_index_written_before_the_vector_field_opens_and_gains_it(tmp_path):
    old = copy.deepcopy(schema())
    old.remove(VECTOR_FIELD)
    path = str(tmp_path)
    ix = whoosh_index.create_in(path, old, indexname=INDEX_NAME)
    w = ix.writer()
    legacy = Memory(id="m1", text="an old memory about Frankfurt", created_at=1, updated_at=1)
    doc = dict(to_document(legacy))
    doc.pop(VECTOR_FIELD, None)
    w.add_document(**doc)
    w.commit()
    ix = with_added_fields(whoosh_index.open_dir(path, indexname=INDEX_NAME))
    assert VECTOR_FIELD in ix.schema
    entry = BankIndex("o", "b", "inc", path, ix, clock=Clock((1,)))
    fresh = Memory(id="m2", text="a new memory about Berlin", created_at=2, updated_at=2)
    vectors.attach([(fresh, None)])
    assert entry.apply([(2, fresh)]) == 1
    seen = {}
    for leaf, _off in entry.reader().leaf_readers():
        data = SegmentData(leaf)
        mat, present = data.vectors(leaf)
        for d in range(data.n):
            if not leaf.is_deleted(d):
                seen[data.ids[d]] = (bool(present[d]), mat[d] if present[d] else None)
        assert data.vector_bytes == mat.nbytes + present.nbytes
    assert seen["m1"] == (False, None)
    [want] = semantic.embed_documents([fresh.text])
    assert seen["m2"][0] and float(np.dot(seen["m2"][1], want)) > 0.99
    entry.close_reader()
