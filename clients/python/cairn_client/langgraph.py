"""LangGraph's long-term memory kept in Cairn: ``CairnStore`` implements
``langgraph.store.base.BaseStore`` (``batch`` and ``abatch`` over get, put, delete, search with a
filter and a query, and list_namespaces), so ``graph.compile(store=CairnStore(...))`` gives every
node Cairn as its store. Install with ``pip install 'cairn-client[langgraph]'``.

Encoding: each item is one structured memory of the store's scope (``cairn_client._named``).
Its name is ``<prefix>_<slug>_<hash>``, the hash taken over the JSON array ``[namespace, key]``
(so any label or key, in any case and alphabet, maps to exactly one ``[a-z0-9_]`` name of at most
83 characters, and a name is found with no lookup); its content is the compact JSON object
``{"namespace": [...], "key": ..., "value": {...}}``, the value exactly as put; its description
``LangGraph item <label>/<label>: <key>`` for a person reading the scope. A put upserts the
memory (its id and history kept), a delete tombstones it; putting a key again after a delete
works like any put. A value whose stored JSON exceeds ``MAX_ITEM_CHARS`` characters (the
service's content limit) is refused with ``ValueTooLarge`` before anything of its batch is
written.

Search: with ``query``, the scope's best 50 memories by Cairn's recall (BM25F over the JSON), in
Cairn's order, then the namespace prefix and the filter; without, the scope's newest 200 items,
newest first. ``filter`` takes LangGraph's forms: a value (equality, nested objects and lists
compared whole) or operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``; another
operator raises ``ValueError``. A listing that reaches the service's cap without finding enough
items, and ``list_namespaces`` over a full listing, raise ``ListingTooLarge`` rather than answer
from part of the scope. ``score`` is ``None``; ``index`` is ignored (every value's text is
searchable); TTLs are not supported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from . import _named
from ._async_client import AsyncCairn
from ._named import Delete, Get, List, Listing, Plan, Save, Scope, Search
from ._sync_client import Cairn

__all__ = ["MAX_ITEM_CHARS", "CairnStore", "ListingTooLarge", "ValueTooLarge"]

MAX_ITEM_CHARS = _named.MAX_CONTENT
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
Key = tuple[tuple[str, ...], str]


class ValueTooLarge(ValueError):
    """A value too large for one Cairn memory: ``namespace``, ``key``, ``chars`` (its stored
    JSON's length) and ``limit``."""

    def __init__(self, namespace: tuple[str, ...], key: str, chars: int) -> None:
        super().__init__(f"The value of {'/'.join(namespace)}: {key} takes {chars} characters as stored JSON; a Cairn "
                         f"memory holds at most {MAX_ITEM_CHARS}. Nothing of this batch was written.")
        self.namespace, self.key, self.chars, self.limit = namespace, key, chars, MAX_ITEM_CHARS


class ListingTooLarge(RuntimeError):
    """An operation that would have to read more than the newest ``LIST_CAP`` records of the
    store's scope (the service lists no further)."""


def item_name(prefix: str, namespace: tuple[str, ...], key: str) -> str:
    """The structured memory name of item ``(namespace, key)``."""
    return _named.record_name(prefix, json.dumps([list(namespace), key], ensure_ascii=False))


def _time(value: object) -> datetime:
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        except ValueError:
            pass
    return datetime.fromtimestamp(0, UTC)


def _number(value: Any) -> float:
    return float(value)


def _operator(value: Any, op: str, operand: Any) -> bool:
    """One ``$`` operator of a filter; ``ValueError`` for one LangGraph does not define."""
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in OPERATORS:
        raise ValueError(f"Unsupported operator: {op}")
    try:
        a, b = _number(value), _number(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field never compares
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def matches(value: Any, wanted: Any) -> bool:
    """Whether ``value`` satisfies ``wanted`` (one field of a LangGraph filter)."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(matches(a, b) for a, b in zip(value, wanted, strict=True)))
    return bool(value == wanted)


def _namespace_matches(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = cond.path
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path, strict=False) if cond.match_type == "prefix" else zip(reversed(ns), reversed(path),
                                                                                  strict=False)
    return all(p == "*" or a == p for a, p in pairs)


class Items:
    """The store's items as records of one scope: ``batch`` as a plan (``_named``)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = _named.check_prefix(prefix)

    def name(self, namespace: tuple[str, ...], key: str) -> str:
        return item_name(self.prefix, namespace, key)

    def parse(self, row: dict[str, Any]) -> SearchItem | None:
        """The item a row holds, or ``None`` when the row is not one of this store's."""
        name, content = row.get("name"), row.get("content")
        if not isinstance(name, str) or not name.startswith(self.prefix + "_") or not isinstance(content, str):
            return None
        try:
            doc = json.loads(content)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        ns, key, value = doc.get("namespace"), doc.get("key"), doc.get("value")
        if (not isinstance(ns, list) or not all(isinstance(x, str) for x in ns) or not isinstance(key, str)
                or not isinstance(value, dict) or self.name(tuple(ns), key) != name):
            return None
        return SearchItem(namespace=tuple(ns), key=key, value=value, created_at=_time(row.get("created")),
                          updated_at=_time(row.get("updated")))

    def save(self, op: PutOp) -> Save:
        ns, key = tuple(op.namespace), str(op.key)
        content = _named.json_text({"namespace": list(ns), "key": key, "value": dict(op.value or {})})
        if len(content) > MAX_ITEM_CHARS:
            raise ValueTooLarge(ns, key, len(content))
        label = "/".join(ns)
        return Save(self.name(ns, key), content, _named.description_line(f"LangGraph item {label}: {key}"))

    def batch(self, ops: Iterable[Op]) -> Plan[list[Result]]:
        """LangGraph's batch semantics (``InMemoryStore``'s): reads see the store as it was
        before the batch, and its puts apply after them, the last put of a key winning."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        puts: dict[Key, PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts[(tuple(op.namespace), str(op.key))] = op
        saves = {k: self.save(op) for k, op in puts.items() if op.value is not None}  # refuse before writing
        results: list[Result] = []
        listing: list[Listing] = []  # read once per batch, when a search or listing needs it
        for op in ops:
            if isinstance(op, GetOp):
                row = yield Get(self.name(tuple(op.namespace), str(op.key)))
                found = self.parse(row) if row is not None else None
                results.append(None if found is None else Item(value=found.value, key=found.key,
                                                               namespace=found.namespace, created_at=found.created_at,
                                                               updated_at=found.updated_at))
            elif isinstance(op, SearchOp):
                results.append((yield from self.search(op, listing)))
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self.namespaces(op, listing)))
            elif isinstance(op, PutOp):
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        for k, op in puts.items():
            if op.value is None:
                yield Delete(self.name(*k))
            else:
                yield saves[k]
        return results

    def listed(self, cache: list[Listing]) -> Plan[Listing]:
        if not cache:
            cache.append((yield List()))
        return cache[0]

    def search(self, op: SearchOp, cache: list[Listing]) -> Plan[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        full = False
        if op.query:
            rows = yield Search(op.query)
        else:
            listing = yield from self.listed(cache)
            rows, full = listing.rows, listing.full
        found = []
        for row in rows:
            item = self.parse(row)
            if item is None or item.namespace[: len(prefix)] != prefix:
                continue
            if op.filter and not all(matches(item.value.get(k), v) for k, v in op.filter.items()):
                continue
            found.append(item)
        if full and len(found) < op.offset + op.limit:
            raise ListingTooLarge(f"The store's scope holds more than {_named.LIST_CAP} records and Cairn lists only "
                                  "the newest of them, so this search cannot see them all; search with a query, or "
                                  "give the store a scope of its own.")
        return found[op.offset: op.offset + op.limit]

    def namespaces(self, op: ListNamespacesOp, cache: list[Listing]) -> Plan[list[tuple[str, ...]]]:
        listing = yield from self.listed(cache)
        if listing.full:
            raise ListingTooLarge(f"The store's scope holds more than {_named.LIST_CAP} records and Cairn lists only "
                                  "the newest of them, so its namespaces cannot all be listed.")
        found = {item.namespace for row in listing.rows if (item := self.parse(row)) is not None}
        if op.match_conditions:
            found = {ns for ns in found if all(_namespace_matches(c, ns) for c in op.match_conditions)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset: op.offset + op.limit]


class CairnStore(BaseStore):
    """A LangGraph store kept in a Cairn structured-memory ``scope`` (``user``: the token's own
    user; ``global``; or ``workstream`` with ``scope_id``), its records named ``<prefix>_...``
    (1-16 of ``[a-z0-9]``; several stores can share a scope). ``batch`` runs on ``cairn`` (a
    ``Cairn``, else ``Cairn()`` from ``$CAIRN_URL``/``$CAIRN_TOKEN``), ``abatch`` on
    ``async_cairn`` (else an ``AsyncCairn`` with the same URL and token). A Cairn error answer
    raises its ``CairnError``; see the module for the encoding and the limits."""

    supports_ttl = False

    def __init__(self, cairn: Cairn | None = None, *, async_cairn: AsyncCairn | None = None, scope: str = "user",
                 scope_id: str | None = None, prefix: str = "lg") -> None:
        self.items = Items(prefix)
        self.scope = Scope(scope, scope_id)
        self.cairn = cairn if cairn is not None else Cairn()
        self._async = async_cairn

    @property
    def async_cairn(self) -> AsyncCairn:
        if self._async is None:
            t = self.cairn._t
            self._async = AsyncCairn(t.base_url, t.token)
        return self._async

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return _named.run(self.items.batch(ops), self.cairn, self.scope)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await _named.arun(self.items.batch(ops), self.async_cairn, self.scope)
