"""Make moto's DynamoDB safe and affordable under concurrent transactions (launcher and tests only).

moto's ``transact_write_items`` keeps a rollback backup by deep-copying every table it touches,
once per item of the transaction and without a lock, so concurrent transactions lose committed
writes and each one costs items x table size. ``install()`` wraps the backend:

- one process-wide lock serializes transactions and the plain operations that could run while
  one is applying (``dictionary changed size during iteration`` otherwise);
- a transaction's backup is the prior state of only the items it names, restored on
  cancellation, instead of copies of whole tables: the same all-or-nothing outcome;
- two string values compare as strings, without moto's per-comparison type dispatch, and a
  base-table Query looks only at its partition's items in its key range, not at the whole table
  sorted on every page: the same answers, at a cost that grows with the page, as DynamoDB's does;
- a response member's alias keys are worked out once per member of a shape, not once per
  attribute value of every item returned: the same response, for much less work.

Real DynamoDB needs none of this; it never runs in chalicelib.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import operator
import threading
from collections.abc import Callable
from typing import Any

_LOCK = threading.RLock()
_installed = False


class _TablesNotCopied:
    """Stand-in for the ``copy`` module inside moto's transaction: a ``Table`` is "copied" as
    itself (its rollback is done item by item instead), everything else really is copied."""

    def __init__(self, table_type: type) -> None:
        self._table_type = table_type

    def deepcopy(self, obj: Any, *args: Any) -> Any:
        if isinstance(obj, self._table_type):
            return obj
        return copy.deepcopy(obj, *args)


def _item_key(table: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any] | None:
    if op_type == "Put":
        attrs = op.get("Item") or {}
        if table.hash_key_attr not in attrs:
            return None
        key = {table.hash_key_attr: attrs[table.hash_key_attr]}
        if table.range_key_attr is not None:
            if table.range_key_attr not in attrs:
                return None
            key[table.range_key_attr] = attrs[table.range_key_attr]
        return key
    return op.get("Key")


def install() -> None:
    """Wrap moto's DynamoDB backend operations (idempotent)."""
    global _installed
    if _installed:
        return
    from moto.dynamodb.models import DynamoDBBackend

    for name in ("transact_get_items", "put_item", "update_item", "delete_item", "get_item", "query", "scan",
                 "batch_write_item", "batch_get_item"):
        original = getattr(DynamoDBBackend, name, None)
        if original is not None:
            setattr(DynamoDBBackend, name, _locked(original))
    # setattr: mypy forbids assigning to a method, and replacing moto's is the point here
    setattr(DynamoDBBackend, "transact_write_items",  # noqa: B010 - see the comment above
            _transact(DynamoDBBackend.transact_write_items))
    _compare_strings_directly()
    _query_one_partition()
    _pick_response_members_once()
    _installed = True


def _pick_response_members_once() -> None:
    """moto's response serializer finds a member's value by trying its alias keys in turn.

    For every member of every structure in a response (ten per DynamoDB attribute value) it asks
    six alias providers afresh: most of the time of a large Query page went there. For a plain
    ``dict`` those providers name keys that depend only on the member's name, its shape and that
    shape's parent, so the keys are computed by moto once per triple and reused, and the first one
    the dict holds gives the value, as in moto. Other objects, pickers and provider lists keep
    moto's own path; a moto whose providers are not the six known ones is left alone."""
    from moto.core import serialize

    known = ["ExplicitAlias", "ShapeNameAlias", "NoAlias", "ShapePrefixAlias", "ClassPrefixAlias", "ModelAlias"]
    if [p.__name__ for p in serialize.DEFAULT_ALIAS_PROVIDERS] != known:
        return
    original = serialize.ResponseSerializer.get_value
    keys_of: dict[tuple[Any, Any, Any], tuple[str, ...]] = {}  # (member, shape, parent) -> keys

    @functools.wraps(original)
    def get_value(self: Any, value: Any, key: str, shape: Any) -> Any:
        picker = self._value_picker
        if (type(value) is not dict or type(picker) is not serialize.XFormedAttributePicker
                or picker.response_transformers or picker.alias_providers is not serialize.DEFAULT_ALIAS_PROVIDERS):
            return original(self, value, key, shape)
        cache_key = (key, shape, getattr(shape, "parent", None))
        keys = keys_of.get(cache_key)
        if keys is None:
            context = serialize.AttributePickerContext(obj=value, key=key, shape=shape)
            keys = keys_of[cache_key] = tuple(picker.get_possible_keys(context))
        for name in keys:
            if "." in name:  # a path, as moto's get_value reads it
                found = serialize.get_value(value, name, serialize.MISSING)
                if found is not serialize.MISSING:
                    return found
            elif name in value:
                return value[name]
        return None

    setattr(serialize.ResponseSerializer, "get_value", get_value)  # noqa: B010 - replacing moto's method is the point


def _query_one_partition() -> None:
    """A base-table Query looks at its own partition's items in its key range only.

    moto's ``Table.query`` starts every page from ``all_items()``, the whole table sorted, then
    keeps the partition and sorts it again: a page cost O(table log table), so reading one bank
    grew with every other bank. Under the lock (``_locked``), the query is handed the items it
    could return anyway (same partition, inside the key condition); it pages, filters, projects
    and counts them itself as before. Index queries and multi-attribute keys are left to moto."""
    from moto.dynamodb.models.table import Table

    original = Table.query

    @functools.wraps(original)
    def query(self: Any, hash_key: Any, range_comparison: Any, range_objs: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[4] if len(args) > 4 else kwargs.get("index_name")
        conds = kwargs.get("range_key_conditions") or []
        if (index_name or hash_key is None or self.range_key_attr is None or "all_items" in vars(self)
                or len(conds) > 1 or (conds and conds[-1][0] != self.range_key_attr)):
            return original(self, hash_key, range_comparison, range_objs, *args, **kwargs)
        items = list(self.items.get(hash_key, {}).values())
        if range_comparison:
            items = [i for i in items if i.range_key.compare(range_comparison, range_objs)]
        self.all_items = lambda: items  # this call's view; the method again once it returns
        try:
            return original(self, hash_key, range_comparison, range_objs, *args, **kwargs)
        finally:
            del self.all_items

    setattr(Table, "query", query)  # noqa: B010 - replacing moto's method is the point


def _compare_strings_directly() -> None:
    """Compare two string ``DynamoType`` values as the strings they are.

    moto sorts a whole partition on every page of a Query, and each comparison goes through
    ``cast_value`` and its chain of type tests: a 10k-memory rebuild spent most of its time
    there. For two ``S`` values ``cast_value`` is the value itself, so the result is the same."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    def fast(name: str, original: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
        compare = getattr(operator, name)

        @functools.wraps(original)
        def method(self: Any, other: Any) -> bool:
            if self.type == "S" and getattr(other, "type", None) == "S":
                return bool(compare(self.value, other.value))
            return original(self, other)

        return method

    for name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
        setattr(DynamoType, name, fast(name, getattr(DynamoType, name)))


def _locked(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` run under the process-wide lock."""
    @functools.wraps(original)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return original(self, *args, **kwargs)

    return locked


def _backups(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """``(table, key, prior attributes or None)`` of every item a transaction names."""
    backups: list[tuple[str, dict[str, Any], Any]] = []
    for entry in transact_items:
        op_type, op = next(iter(entry.items()))
        table = backend.tables.get(op.get("TableName", ""))
        key = _item_key(table, op_type, op) if table is not None else None
        if key is None:
            continue
        try:
            current = backend.get_item(op["TableName"], key)
        except Exception:  # noqa: BLE001 - an invalid key fails inside moto's own code
            continue
        backups.append((op["TableName"], key, copy.deepcopy(current.to_json()["Attributes"]) if current else None))
    return backups


def _restore(backend: Any, backups: list[tuple[str, dict[str, Any], Any]]) -> None:
    """Put every item a cancelled transaction named back as it was."""
    for table_name, key, attrs in reversed(backups):
        if attrs is None:
            with contextlib.suppress(Exception):  # nothing to remove
                backend.delete_item(table_name, key)
        else:
            backend.put_item(table_name, attrs)


def _transact(original_transact: Callable[..., Any]) -> Callable[..., Any]:
    """moto's ``transact_write_items`` under the lock, backing up only the items it names."""
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    no_table_copies = _TablesNotCopied(Table)

    @functools.wraps(original_transact)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            backups = _backups(self, transact_items)
            setattr(models, "copy", no_table_copies)  # noqa: B010 - moto's module global, swapped under the lock
            try:
                return original_transact(self, transact_items, *args, **kwargs)
            except Exception:
                _restore(self, backups)
                raise
            finally:
                setattr(models, "copy", copy)  # noqa: B010 - restored

    return transact_write_items


def lock() -> threading.RLock:
    """The lock itself, for code that must not interleave with a transaction (the journal's
    after-images, ``infra.local.durable``)."""
    return _LOCK
