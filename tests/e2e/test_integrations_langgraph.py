"""LangGraph's store kept in Cairn (``cairn_client.langgraph.CairnStore``) against the local stack.

A seeded differential run drives the same random operations (put, delete, get, search with a
filter, list_namespaces) through LangGraph's ``InMemoryStore`` and ``CairnStore`` and compares
every answer. The deviations allowed, and only these:

- order: a search without a query lists Cairn's newest first, ``InMemoryStore`` in insertion
  order, so result sets are compared (every search here asks for more than the namespace holds);
- a search with a query: ``InMemoryStore`` without embeddings ignores the query (every item of the
  prefix, insertion order), Cairn ranks by recall and keeps only matches, so Cairn's answer must
  be the matching subset, best first (``test_search_with_a_query_ranks_by_cairns_recall``);
- ``list_namespaces``: ``InMemoryStore`` goes on listing a namespace after its last item is
  deleted (and lists one that a ``get`` merely named), Cairn lists the namespaces holding items;
  so Cairn's answer is compared with an ``InMemoryStore`` holding the same items;
- timestamps and ``score`` (Cairn's are the service's times; no score);
- a numeric operator (``$gt``...) on a missing or non-numeric field: ``InMemoryStore`` raises
  ``TypeError``/``ValueError``, Cairn counts it as no match
  (``test_unknown_filter_operators_raise_in_both``).

Filter operators are LangGraph's own set in both; an unknown one raises ``ValueError`` in both.
A LangGraph agent graph compiled with the store then runs end to end with a scripted fake chat
model: one thread saves a memory, a later thread recalls it into the model's prompt.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from cairn_client import AsyncCairn, Cairn, as_data
from cairn_client.langgraph import MAX_ITEM_CHARS, CairnStore, ListingTooLarge, ValueTooLarge, item_name
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.config import get_store
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

NAMESPACES = [("users", "alice"), ("users", "bob"), ("users", "alice", "prefs"), ("docs",),
              ("Docs", "MiXed Case", "ünï code")]
KEYS = ["k1", "k2", "Key 3", "ключ", "a/b:c"]
WORDS = ["tea", "coffee", "deploy", "friday", "kayak", "sunrise"]


def random_value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {"kind": rng.choice(["note", "pref", "fact"]), "n": rng.randint(0, 9),
                             "text": " ".join(rng.sample(WORDS, 2)), "meta": {"lang": rng.choice(["en", "fr"])}}
    if rng.random() < 0.5:
        value["tags"] = rng.sample(["a", "b", "c"], rng.randint(0, 2))
    return value


def random_filter(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice([None, {"kind": "note"}, {"n": {"$gte": 5}}, {"n": {"$lt": 3, "$ne": 1}},
                       {"meta": {"lang": "fr"}}, {"kind": {"$ne": "fact"}, "meta": {"lang": "en"}},
                       {"tags": ["a", "b"]}, {"n": {"$eq": 4}}])


def as_set(items: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((it.namespace, it.key, repr(sorted(it.value.items()))) for it in items)


def step(rng: random.Random, mem: InMemoryStore, store: CairnStore) -> str:
    """One random operation on both stores; asserts they answer alike. Returns what it did."""
    ns, key, roll = rng.choice(NAMESPACES), rng.choice(KEYS), rng.random()
    if roll < 0.45:
        value = random_value(rng)
        mem.put(ns, key, value)
        store.put(ns, key, value)
        return "put"
    if roll < 0.55:
        mem.delete(ns, key)
        store.delete(ns, key)
        return "delete"
    if roll < 0.7:
        want, got = mem.get(ns, key), store.get(ns, key)
        assert (got is None) == (want is None), (ns, key)
        if want is not None and got is not None:
            assert (got.namespace, got.key, got.value) == (want.namespace, want.key, want.value)
        return "get"
    if roll < 0.88:
        prefix, flt = ns[: rng.randint(0, len(ns))], random_filter(rng)
        assert as_set(store.search(prefix, filter=flt, limit=50)) == as_set(mem.search(prefix, filter=flt, limit=50))
        return "search"
    kw = rng.choice([{}, {"prefix": ("users",)}, {"suffix": ("prefs",)}, {"max_depth": 1},
                     {"prefix": ("users", "*")}, {"prefix": ("users",), "max_depth": 2}])
    assert store.list_namespaces(**kw) == holding_items(mem).list_namespaces(**kw), kw
    return "list_namespaces"


def holding_items(mem: InMemoryStore) -> InMemoryStore:
    """``mem``'s items in a fresh ``InMemoryStore``: one that lists only namespaces holding items."""
    fresh = InMemoryStore()
    for it in mem.search((), limit=10_000):
        fresh.put(it.namespace, it.key, it.value)
    return fresh


@pytest.fixture
def cairn(stack):
    with Cairn(stack.base_url, stack.token) as c:
        yield c


@pytest.fixture
def workstream(cairn):
    """A workstream per test: its scope holds only what the test writes."""
    return as_data(cairn.workstreams.create("langgraph store e2e"))["workstream_id"]


@pytest.mark.parametrize("seed", [7, 2026])
def test_seeded_differential_against_langgraphs_in_memory_store(cairn, workstream, seed):
    rng = random.Random(seed)
    mem, store = InMemoryStore(), CairnStore(cairn, scope="workstream", scope_id=workstream)
    done = [step(rng, mem, store) for _ in range(70)]
    assert {"put", "delete", "get", "search", "list_namespaces"} <= set(done)
    # the end state, whole: every namespace and item alike
    assert store.list_namespaces() == holding_items(mem).list_namespaces()
    assert as_set(store.search((), limit=200)) == as_set(mem.search((), limit=200))


def test_unknown_filter_operators_raise_in_both(cairn, workstream):
    mem, store = InMemoryStore(), CairnStore(cairn, scope="workstream", scope_id=workstream)
    for s in (mem, store):
        s.put(("docs",), "x", {"n": 1})
        with pytest.raises(ValueError, match=r"Unsupported operator: \$in"):
            s.search(("docs",), filter={"n": {"$in": [1]}})
    with pytest.raises(TypeError):
        mem.search(("docs",), filter={"missing": {"$gt": 1}})
    assert store.search(("docs",), filter={"missing": {"$gt": 1}}) == []
    assert [i.key for i in store.search(("docs",), filter={"n": {"$gt": 0}})] == ["x"]


def test_search_with_a_query_ranks_by_cairns_recall(cairn, workstream):
    store = CairnStore(cairn, scope="workstream", scope_id=workstream)
    store.put(("users", "alice"), "m1", {"text": "Alice drinks green tea every morning"})
    store.put(("users", "alice"), "m2", {"text": "Alice deploys on Fridays"})
    store.put(("users", "alice"), "m3", {"text": "Tea, tea and more tea: Alice's tea collection"})
    store.put(("users", "bob"), "m1", {"text": "Bob likes tea too"})
    hits = store.search(("users", "alice"), query="tea")
    assert [h.key for h in hits] == ["m3", "m1"]  # within the prefix, best first, only matches
    assert all(h.namespace == ("users", "alice") and h.score is None for h in hits)
    assert [h.key for h in store.search(("users",), query="tea", filter={"text": "Bob likes tea too"})] == ["m1"]
    assert store.search(("users", "alice"), query="tea", limit=1, offset=1)[0].key == "m1"


def test_items_are_readable_structured_memories_and_survive_delete_then_put(cairn, workstream):
    store = CairnStore(cairn, scope="workstream", scope_id=workstream, prefix="agent")
    store.put(("users", "Alice"), "Prefs", {"drink": "tea"})
    store.put(("users", "Alice"), "Prefs", {"drink": "coffee"})
    [row] = as_data(cairn.structured.list(scope="workstream", scope_id=workstream))["memories"]
    assert row["name"] == item_name("agent", ("users", "Alice"), "Prefs") and row["name"].startswith("agent_")
    assert row["description"] == "LangGraph item users/Alice: Prefs"
    assert row["content"] == '{"namespace":["users","Alice"],"key":"Prefs","value":{"drink":"coffee"}}'
    store.delete(("users", "Alice"), "Prefs")
    assert store.get(("users", "Alice"), "Prefs") is None
    store.put(("users", "Alice"), "Prefs", {"drink": "coffee"})  # the same text again: a plain upsert
    assert store.get(("users", "Alice"), "Prefs").value == {"drink": "coffee"}
    # the same key in another case is another item
    store.put(("users", "alice"), "prefs", {"drink": "coffee"})
    assert len(store.search(("users",))) == 2


def test_a_value_over_the_limit_is_refused_and_its_batch_writes_nothing(cairn, workstream):
    store = CairnStore(cairn, scope="workstream", scope_id=workstream)
    from langgraph.store.base import PutOp
    with pytest.raises(ValueTooLarge, match=f"a Cairn memory holds at most {MAX_ITEM_CHARS}"):
        store.batch([PutOp(("docs",), "small", {"t": "ok"}), PutOp(("docs",), "big", {"t": "x" * MAX_ITEM_CHARS})])
    assert store.search(("docs",)) == []
    with pytest.raises(NotImplementedError):
        store.put(("docs",), "ttl", {"t": 1}, ttl=5)


def test_a_full_listing_is_refused_rather_than_answered_in_part(cairn, workstream):
    from langgraph.store.base import PutOp
    store = CairnStore(cairn, scope="workstream", scope_id=workstream)
    # 200 items in one request: the admin import of the rows the store itself would write
    rows = [{"name": s.name, "content": s.content, "description": s.description, "type": "general",
             "scope": "workstream", "scope_id": workstream}
            for s in (store.items.save(PutOp(("bulk",), f"k{i}", {"i": i})) for i in range(200))]
    assert as_data(cairn.admin.import_memories(rows))["imported"] == 200
    assert len(store.search(("bulk",), limit=10)) == 10  # the newest 200 hold enough
    with pytest.raises(ListingTooLarge):
        store.list_namespaces()
    with pytest.raises(ListingTooLarge):
        store.search(("elsewhere",))


def test_abatch_runs_on_the_async_client(stack, workstream):
    async def go() -> None:
        async with AsyncCairn(stack.base_url, stack.token) as ac:
            store = CairnStore(Cairn(stack.base_url, stack.token), async_cairn=ac, scope="workstream",
                               scope_id=workstream)
            await store.aput(("a",), "k", {"v": 1})
            got = await store.aget(("a",), "k")
            assert got is not None and got.value == {"v": 1}
            assert [i.key for i in await store.asearch(("a",))] == ["k"]
            assert await store.alist_namespaces() == [("a",)]
            await store.adelete(("a",), "k")
            assert await store.aget(("a",), "k") is None

    asyncio.run(go())


def build_agent(model: GenericFakeChatModel):
    """A memory agent: ``remember`` saves what the user says after "remember", ``respond``
    recalls the user's memories into the system prompt of the (fake) chat model."""

    def remember(state: MessagesState, config) -> dict[str, Any]:
        text = state["messages"][-1].content
        if isinstance(text, str) and text.lower().startswith("remember"):
            user = config["configurable"]["user_id"]
            get_store().put(("memories", user), f"m{len(text)}", {"text": text.split(" ", 1)[1]})
        return {}

    def respond(state: MessagesState, config) -> dict[str, Any]:
        store: BaseStore = get_store()
        hits = store.search(("memories", config["configurable"]["user_id"]), query=str(state["messages"][-1].content))
        system = SystemMessage("Known about the user:\n" + "\n".join(f"- {h.value['text']}" for h in hits))
        return {"messages": [model.invoke([system, *state["messages"]])]}

    g = StateGraph(MessagesState)
    g.add_node("remember", remember)
    g.add_node("respond", respond)
    g.add_edge(START, "remember")
    g.add_edge("remember", "respond")
    g.add_edge("respond", END)
    return g


def test_a_langgraph_agent_remembers_across_threads_through_cairn(cairn, workstream):
    seen: list[list[Any]] = []

    class Recording(GenericFakeChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    model = Recording(messages=iter([AIMessage("I'll remember that."), AIMessage("You drink green tea.")]))
    store = CairnStore(cairn, scope="workstream", scope_id=workstream)
    graph = build_agent(model).compile(store=store)
    user = {"configurable": {"user_id": "u-42"}}
    graph.invoke({"messages": [HumanMessage("remember I drink green tea in the morning")]},
                 {**user, "configurable": {**user["configurable"], "thread_id": "t1"}})
    out = graph.invoke({"messages": [HumanMessage("what tea do I drink?")]},
                       {**user, "configurable": {**user["configurable"], "thread_id": "t2"}})
    assert out["messages"][-1].content == "You drink green tea."
    system = seen[-1][0]
    assert system.content == "Known about the user:\n- I drink green tea in the morning"
    # the memory is a Cairn record of the store's scope
    assert [i.value for i in store.search(("memories", "u-42"))] == [{"text": "I drink green tea in the morning"}]
