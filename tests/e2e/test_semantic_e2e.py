"""The semantic recall signal over real HTTP: the paraphrase set (bench/paraphrase, whose questions
share no analysed word with the memory that answers them) imported once through the REST import,
then three questions asked through REST recall, the MCP ``memory_recall`` tool (the SDK's own
client) and the per-turn hook ``POST /v1/hooks/pre-generate`` (its injected ``<memory>`` message).

"when do we go live?" is a known gap: its memory says the app "launches publicly" and an Atlas beta
that "went live" wins on its words (docs/banks.md, "How recall ranks"); its cases are strict
xfails, so they flag the day it starts to pass."""

from __future__ import annotations

import html
from typing import Any

import pytest

from bench import paraphrase

from .conftest import Http
from .test_mcp_e2e import over_http, run, structured

BANK = "paraphrase-e2e"
TOP = 5
GO_LIVE_RANK = 32  # measured on this set with the defaults; the REST case below re-measures it
GAP = pytest.mark.xfail(strict=True, raises=AssertionError,
                        reason=f"known gap: 'when do we go live?' ranks its memory ('launches publicly') "
                               f"at rank {GO_LIVE_RANK}, below an Atlas beta that 'went live'")
QUESTIONS = [
    pytest.param("what database did we choose and why?", "o_db", id="database"),
    pytest.param("what is the release date?", "b_release", id="release-date"),
    pytest.param("when do we go live?", "a_launch", id="go-live", marks=GAP),
]


def text_of(set_id: str) -> str:
    return next(m.text for m in paraphrase.memories() if m.id == set_id)


@pytest.fixture(scope="module")
def bank(stack) -> Http:
    """The whole paraphrase set imported into ``BANK`` through ``POST /v1/banks/{bank}/import``
    (ndjson), once for the module; the admin HTTP client."""
    http = Http(stack.base_url, stack.token)
    assert http.post("/v1/banks", json={"name": BANK}).status_code == 201
    body = b"\n".join(paraphrase.import_lines_of()) + b"\n"
    r = http.post(f"/v1/banks/{BANK}/import", data=body, headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert {k: got[k] for k in ("imported", "skipped", "errors")} == {
        "imported": len(paraphrase.memories()), "skipped": 0, "errors": []}
    return http


def rest_texts(http: Http, query: str, limit: int = TOP) -> tuple[list[str], dict[str, Any]]:
    r = http.post(f"/v1/banks/{BANK}/recall", json={"query": query, "limit": limit})
    assert r.status_code == 200, r.text
    body = r.json()
    return [h["memory"]["text"] for h in body["memories"]], body


@pytest.mark.parametrize(("question", "gold"), QUESTIONS)
def test_rest_recall_finds_the_memory_in_the_top_5(bank, question, gold):
    texts, body = rest_texts(bank, question)
    assert body["retrieval"] == "bm25-entity+semantic"
    assert text_of(gold) in texts, (question, texts)


@pytest.mark.parametrize(("question", "gold"), QUESTIONS)
def test_mcp_memory_recall_finds_the_memory_in_the_top_5(stack, bank, question, gold):
    async def go() -> dict[str, Any]:
        async with over_http(stack, stack.token, "auto") as client:
            return structured(await client.call_tool("memory_recall",
                                                     {"bank": BANK, "query": question, "limit": TOP}))

    got = run(go())
    assert got["retrieval"] == "bm25-entity+semantic"
    texts = [h["memory"]["text"] for h in got["memories"]]
    assert texts == rest_texts(bank, question)[0]  # the same ranking as REST
    assert text_of(gold) in texts, (question, texts)


@pytest.mark.parametrize(("question", "gold"), QUESTIONS)
def test_the_pre_generate_hook_injects_the_memory(bank, question, gold):
    r = bank.post("/v1/hooks/pre-generate", json={
        "messages": [{"role": "user", "content": question}], "metadata": {"memory_bank": BANK}, "step": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["retrieval"] == "bm25-entity+semantic"
    injected = [m["content"] for m in body["mutations"]["append_messages"]
                if m["content"].startswith("<memory ")]
    assert len(injected) == 1, body
    assert f"- {html.escape(text_of(gold), quote=False)}\n" in injected[0] + "\n", (question, injected[0])


def test_the_known_gap_still_finds_its_memory_further_down(bank):
    """What the strict xfails above record: the memory of "when do we go live?" is still found, at
    about ``GO_LIVE_RANK`` (within 50: the bound moves with the set's ranking, not by a rank or two)."""
    texts, _body = rest_texts(bank, "when do we go live?", limit=50)
    assert text_of("a_launch") in texts
    assert TOP < texts.index(text_of("a_launch")) + 1 <= 50


def test_a_question_about_nothing_in_the_bank_returns_nothing(bank):
    texts, body = rest_texts(bank, "how tall is the eiffel tower?", limit=10)
    assert texts == [] and body["memories"] == []
    assert body["retrieval"] == "bm25-entity+semantic"
