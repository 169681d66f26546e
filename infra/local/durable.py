"""Durable state for the local stack's moto server: a write-ahead journal of after-images,
replayed over the last snapshot (launcher only, never ``chalicelib``).

Every request to moto's server that may write (anything but GET/HEAD/OPTIONS and the DynamoDB
and SQS read calls) runs under one lock (``Durable.lock``). While moto handles it, hooks on its
DynamoDB and S3 backend methods note the items, objects and buckets it touched; when moto has
returned, still under the lock, the *after-image* of each (the item or object as it now is, or
its absence) is appended to the journal as one checksummed record, and the record is fsynced
(outside the lock, so concurrent writers share an fsync) before the response leaves. Hence:

- an acknowledged write is on disk, and a write is journaled before any later write that could
  have read it (one lock: journal order is commit order);
- replay needs none of moto's request handling, only ``put_item``/``delete_item`` and
  ``put_object``/``delete_object``, and is idempotent (a record states a result, not a change);
- one write costs its own after-images and one fsync, whatever the size of the state.

Compaction reads every item, object and bucket from moto's in-memory backends under the same
lock, starts a new journal, writes ``snapshot.bin`` outside the lock (temp file, fsync, rename)
and deletes the journals it covers: at start when a journal is not empty, at a clean stop, and
when the journal outgrows ``max(COMPACT_MIN_BYTES, size of the last snapshot)`` (so its cost
amortizes to a constant per byte written). A record cut short by a crash fails its length or
checksum; it and the rest of its file are ignored (its write was never acknowledged).

Files in the state dir: ``snapshot.bin`` (its first record names the first journal it does not
cover), ``journal-<n>.bin``, ``lock`` (flock of the running stack). A ``state.tar.gz`` written by
the earlier whole-state export is imported once, then removed. Not kept: SQS messages, table
definitions (the template's are created on every start), object tags and ACLs.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import fcntl
import json
import os
import struct
import sys
import tarfile
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import motolock

SNAPSHOT = "snapshot.bin"
JOURNAL_PREFIX = "journal-"
JOURNAL_SUFFIX = ".bin"
LOCK_FILE = "lock"
LEGACY_STATE = "state.tar.gz"
COMPACT_MIN_BYTES = 32 * 1024 * 1024
SNAPSHOT_CHUNK = 500  # items per snapshot record
FORMAT = "cairn-local-state"
VERSION = 1

# DynamoDB calls that never write: they skip the lock. Anything else (and every unknown call) takes it.
DDB_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "DescribeTable",
                       "ListTables", "DescribeTimeToLive", "DescribeContinuousBackups", "ListTagsOfResource",
                       "DescribeEndpoints", "DescribeLimits"})

_FRAME = struct.Struct("<II")  # payload length, crc32 of the payload
_META = struct.Struct("<I")  # length of the JSON part of the payload; the blobs follow it
_BYTES = "\x00b64"  # JSON stand-in for a bytes value: {"\x00b64": "<base64>"}
_tls = threading.local()


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {_BYTES: base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"cannot journal a {type(value).__name__}")


def _hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and isinstance(obj.get(_BYTES), str):
        return base64.b64decode(obj[_BYTES])
    return obj


# --- records ----------------------------------------------------------------------------------

def encode_record(ops: list[dict[str, Any]], blobs: Sequence[bytes] = ()) -> bytes:
    """One frame: ``<length><crc32>`` then the ops as JSON and the blobs (object bodies, in the
    order of the ops with an ``n``). Bytes inside ops (binary attributes) are base64 in JSON."""
    meta = json.dumps(ops, separators=(",", ":"), default=_default).encode()
    payload = b"".join([_META.pack(len(meta)), meta, *blobs])
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def read_records(path: Path) -> tuple[list[tuple[list[dict[str, Any]], list[bytes]]], int | None]:
    """The records of one file, ``([(ops, blobs)], damaged_at)``: ``damaged_at`` is the byte
    offset of the first frame that is cut short or fails its checksum (``None`` when the file
    is whole); that frame and the rest of the file are not returned."""
    data = path.read_bytes()
    out: list[tuple[list[dict[str, Any]], list[bytes]]] = []
    pos = 0
    while pos < len(data):
        if pos + _FRAME.size > len(data):
            return out, pos
        size, crc = _FRAME.unpack_from(data, pos)
        payload = data[pos + _FRAME.size:pos + _FRAME.size + size]
        if len(payload) != size or zlib.crc32(payload) != crc or size < _META.size:
            return out, pos
        (mlen,) = _META.unpack_from(payload)
        try:
            ops = json.loads(payload[_META.size:_META.size + mlen], object_hook=_hook)
        except ValueError:
            return out, pos
        blobs, at = [], _META.size + mlen
        for op in ops:
            if "n" in op:
                blobs.append(payload[at:at + op["n"]])
                at += op["n"]
        out.append((ops, blobs))
        pos += _FRAME.size + size
    return out, None


# --- what a request touched, and its after-images -------------------------------------------

def _note(kind: str, backend: Any, *ident: Any) -> None:
    touched = getattr(_tls, "touched", None)
    if touched is not None:
        key = (kind, id(backend), *(json.dumps(i, sort_keys=True, default=_default) for i in ident))
        touched.setdefault(key, (kind, backend, ident))


def _item_key(table: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


_installed = False


def install_hooks() -> None:
    """Wrap the write methods of moto's DynamoDB and S3 backends so a journaled request learns
    what it touched (idempotent; a no-op outside ``Durable.journaled``)."""
    global _installed
    if _installed:
        return
    from moto.dynamodb.models import DynamoDBBackend
    from moto.s3.models import S3Backend

    def wrap(cls: type, name: str, note: Callable[..., None]) -> None:
        original = getattr(cls, name)

        def hooked(self, *args, __original=original, **kwargs):
            result = __original(self, *args, **kwargs)
            if getattr(_tls, "touched", None) is not None:
                note(self, *args, **kwargs)
            return result

        hooked.__name__ = name
        setattr(cls, name, hooked)

    def ddb_put(be, table_name, item_attrs, *a, **kw):
        table = be.get_table(table_name)
        _note("item", be, table.name, _item_key(table, item_attrs))

    def ddb_key(be, table_name, key, *a, **kw):
        _note("item", be, be.get_table(table_name).name, key)

    def s3_object(be, bucket_name, key_name, *a, **kw):
        _note("object", be, bucket_name, key_name)

    def s3_bucket(be, bucket_name, *a, **kw):
        _note("bucket", be, bucket_name)

    wrap(DynamoDBBackend, "put_item", ddb_put)
    wrap(DynamoDBBackend, "update_item", ddb_key)
    wrap(DynamoDBBackend, "delete_item", ddb_key)
    wrap(S3Backend, "put_object", s3_object)
    wrap(S3Backend, "delete_object", s3_object)
    wrap(S3Backend, "create_bucket", s3_bucket)
    wrap(S3Backend, "delete_bucket", s3_bucket)
    _installed = True


def _attr(value: Any) -> dict[str, Any]:
    """A moto ``DynamoType`` as DynamoDB JSON, values as moto holds them (a copy)."""
    kind, inner = value.type, value.value
    if kind == "M":
        return {"M": {k: _attr(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_attr(v) for v in inner]}
    return {kind: list(inner) if isinstance(inner, list) else inner}


def _image(item: Any) -> dict[str, Any]:
    """A moto ``Item``'s attributes as DynamoDB JSON (``Item.to_json`` without its deep copies)."""
    return {name: _attr(v) for name, v in item.attrs.items()}


def _items(table: Any) -> list[Any]:
    """A table's items in storage order (``Table.all_items`` sorts them, slowly)."""
    if table.range_key_attr is None:
        return list(table.items.values())
    return [item for by_range in list(table.items.values()) for item in list(by_range.values())]


def _object_op(be: Any, bucket_name: str, key_name: str, fk: Any) -> tuple[dict[str, Any], bytes]:
    from moto.s3.models import FakeKey

    op: dict[str, Any] = {"op": "object", "account": be.account_id, "partition": be.region_name,
                          "bucket": bucket_name, "key": key_name, "meta": None}
    if not isinstance(fk, FakeKey):  # absent, or a delete marker
        return op, b""
    body = fk.value
    op.update(meta=dict(fk.metadata), mtime=fk.last_modified.isoformat(), n=len(body))
    return op, body


def after_images(touched: dict[tuple, tuple]) -> tuple[list[dict[str, Any]], list[bytes]]:
    """The ops and blobs stating the current value of everything in ``touched`` (call under the
    journal lock, so that nothing changes them meanwhile)."""
    ops: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    with motolock.lock():
        for kind, be, ident in touched.values():
            if kind == "item":
                table_name, key = ident
                if table_name not in be.tables:
                    continue
                item = be.get_item(table_name, key)
                ops.append({"op": "item", "account": be.account_id, "region": be.region_name, "table": table_name,
                            "key": key, "item": _image(item) if item is not None else None})
            elif kind == "object":
                bucket_name, key_name = ident
                bucket = be.buckets.get(bucket_name)
                op, body = _object_op(be, bucket_name, key_name, bucket.keys.get(key_name) if bucket else None)
                ops.append(op)
                if "n" in op:
                    blobs.append(body)
            else:
                (bucket_name,) = ident
                bucket = be.buckets.get(bucket_name)
                ops.append({"op": "bucket", "account": be.account_id, "partition": be.region_name,
                            "bucket": bucket_name, "region": bucket.region_name if bucket else None})
    return ops, blobs


def snapshot_records() -> list[tuple[list[dict[str, Any]], list[bytes]]]:
    """Every bucket, object and item of moto's backends as ``(ops, blobs)`` records (call under
    the journal lock; the values are copies)."""
    # Only writes change the backends and every write holds the journal lock: reads go on meanwhile.
    return [*_s3_records(), *_dynamodb_records()]


def _s3_records() -> list[tuple[list[dict[str, Any]], list[bytes]]]:
    from moto.s3.models import s3_backends

    records: list[tuple[list[dict[str, Any]], list[bytes]]] = []
    for per_account in list(s3_backends.values()):
        for be in list(per_account.values()):
            for bucket in list(be.buckets.values()):
                records.append(([{"op": "bucket", "account": be.account_id, "partition": be.region_name,
                                  "bucket": bucket.name, "region": bucket.region_name}], []))
                for name, fk in list(bucket.keys.items()):
                    op, body = _object_op(be, bucket.name, name, fk)
                    if "n" in op:
                        records.append(([op], [body]))
    return records


def _dynamodb_records() -> list[tuple[list[dict[str, Any]], list[bytes]]]:
    from moto.dynamodb.models import dynamodb_backends

    records: list[tuple[list[dict[str, Any]], list[bytes]]] = []
    for per_account in list(dynamodb_backends.values()):
        for be in list(per_account.values()):
            for table in list(be.tables.values()):
                chunk: list[dict[str, Any]] = []
                for item in _items(table):
                    chunk.append({"op": "item", "account": be.account_id, "region": be.region_name,
                                  "table": table.name, "item": _image(item)})
                    if len(chunk) == SNAPSHOT_CHUNK:
                        records.append((chunk, []))
                        chunk = []
                if chunk:
                    records.append((chunk, []))
    return records


# --- replay ---------------------------------------------------------------------------------

class Applier:
    """Applies records to moto's backends directly; counts what it did. Items of a table the
    template no longer declares are skipped (``missing_tables``)."""

    def __init__(self) -> None:
        self.items = self.objects = 0
        self.missing_tables: set[str] = set()

    def apply(self, ops: list[dict[str, Any]], blobs: list[bytes]) -> None:
        """Apply one record's ops in order (``item``, ``object`` with the next blob when it has an
        ``n``, ``bucket``)."""
        bodies = iter(blobs)
        for op in ops:
            kind = op.get("op")
            if kind == "item":
                self._item(op)
            elif kind == "object":
                self._object(op, next(bodies) if "n" in op else b"")
            elif kind == "bucket":
                self._bucket(op)

    def _item(self, op: dict[str, Any]) -> None:
        """Put ``op["item"]``, or delete the item at ``op["key"]`` when it is ``None``."""
        from moto.dynamodb.models import dynamodb_backends

        be = dynamodb_backends[op["account"]][op["region"]]
        if op["table"] not in be.tables:
            self.missing_tables.add(op["table"])
            return
        if op["item"] is not None:
            be.put_item(op["table"], op["item"])
            self.items += 1
        elif be.get_item(op["table"], op["key"]) is not None:
            be.delete_item(op["table"], op["key"])

    def _object(self, op: dict[str, Any], body: bytes) -> None:
        """Put the object (its metadata and mtime kept), or delete it when ``op["meta"]`` is ``None``."""
        from moto.s3.models import s3_backends

        be = s3_backends[op["account"]][op["partition"]]
        if op["meta"] is None:
            bucket = be.buckets.get(op["bucket"])
            if bucket is not None and op["key"] in bucket.keys:
                be.delete_object(op["bucket"], op["key"])
            return
        if op["bucket"] not in be.buckets:
            be.create_bucket(op["bucket"], "us-east-1")
        fk = be.put_object(op["bucket"], op["key"], body, disable_notification=True)
        fk.set_metadata(dict(op["meta"]))
        if op.get("mtime"):
            fk.last_modified = dt.datetime.fromisoformat(op["mtime"])
        self.objects += 1

    def _bucket(self, op: dict[str, Any]) -> None:
        """Create the bucket (``op["region"]`` set) or delete it (``None``) when it is not so yet."""
        from moto.s3.models import s3_backends

        be = s3_backends[op["account"]][op["partition"]]
        exists = op["bucket"] in be.buckets
        if op["region"] is not None and not exists:
            be.create_bucket(op["bucket"], op["region"])
        elif op["region"] is None and exists:
            # not empty: its objects' own records decide
            with contextlib.suppress(Exception):
                be.delete_bucket(op["bucket"])


def _legacy_value(value: Any) -> Any:
    """An attribute value of the whole-state export (DynamoDB JSON, binary as base64)."""
    (kind, inner), = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(b) for b in inner]}
    if kind == "M":
        return {"M": {k: _legacy_value(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_legacy_value(v) for v in inner]}
    return value


def _member(tar: tarfile.TarFile, member: str | tarfile.TarInfo) -> bytes:
    """A regular file's bytes from ``tar``; ``ValueError`` for a member that is not one."""
    fh = tar.extractfile(member)
    if fh is None:
        raise ValueError(f"{member} is not a file in the archive")
    return fh.read()


def import_legacy(path: Path, applier: Applier, account: str, region: str) -> None:
    """Load a ``state.tar.gz`` of the whole-state export (``dynamodb/<table>.jsonl``,
    ``s3/index.jsonl`` and the bodies it names) through ``applier``."""
    with tarfile.open(path, mode="r:gz") as tar:
        names = set(tar.getnames())
        for member in tar.getmembers():
            if member.name.startswith("dynamodb/") and member.name.endswith(".jsonl"):
                table = member.name[len("dynamodb/"):-len(".jsonl")]
                ops = [{"op": "item", "account": account, "region": region, "table": table,
                        "item": {k: _legacy_value(v) for k, v in json.loads(line).items()}}
                       for line in _member(tar, member).decode().splitlines() if line.strip()]
                applier.apply(ops, [])
        if "s3/index.jsonl" in names:
            for line in _member(tar, "s3/index.jsonl").decode().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    body = _member(tar, entry["member"])
                    applier.apply([{"op": "object", "account": account, "partition": "aws",
                                    "bucket": entry["bucket"], "key": entry["key"], "n": len(body),
                                    "meta": {"Content-Type": entry.get("content_type", "binary/octet-stream")}}],
                                  [body])


# --- the state dir --------------------------------------------------------------------------

def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_datasync = getattr(os, "fdatasync", os.fsync)


class StateDirBusy(RuntimeError):
    """Another running stack holds the state dir."""


class Durable:
    """The snapshot and journal in ``state_dir`` and the lock that orders moto's writes.

    Use: ``acquire()``, then ``discard()`` (``--fresh``) or ``load()``, then ``open()``; serve
    through ``JournalMiddleware``; ``compact_if_due()`` from a worker; ``close()`` on stop.
    ``log`` receives one line per notable event (restored counts, damaged records, compaction).
    """

    def __init__(self, state_dir: Path, log: Callable[[str], None] = print,
                 compact_min_bytes: int = COMPACT_MIN_BYTES) -> None:
        self.dir = Path(state_dir)
        self.log = log
        self.compact_min_bytes = compact_min_bytes
        self.lock = threading.Lock()  # held by every writing request: dispatch, after-images, append
        self._sync_lock = threading.Lock()  # one fsync at a time; a journal switch holds it too
        self._compact_lock = threading.Lock()
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self._n = 0  # number of the journal being appended to
        self._lsn = self._synced = 0  # bytes appended / fsynced since open(), across journals
        self._journal_bytes = 0
        self._snapshot_bytes = 0
        self._dirty_at_start = False
        self.active = False

    # paths
    @property
    def snapshot_path(self) -> Path:
        return self.dir / SNAPSHOT

    def journal_path(self, n: int) -> Path:
        return self.dir / f"{JOURNAL_PREFIX}{n:06d}{JOURNAL_SUFFIX}"

    def journals(self) -> list[tuple[int, Path]]:
        """``[(n, path)]`` of the journal files, oldest first."""
        out = []
        for p in self.dir.glob(f"{JOURNAL_PREFIX}*{JOURNAL_SUFFIX}"):
            try:
                out.append((int(p.name[len(JOURNAL_PREFIX):-len(JOURNAL_SUFFIX)]), p))
            except ValueError:
                continue
        return sorted(out)

    # lifecycle
    def acquire(self) -> None:
        """Take the state dir (``flock`` on ``lock``, released by the kernel even on kill -9).
        Raises ``StateDirBusy`` when another stack runs on it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StateDirBusy(f"another local stack is using {self.dir}") from None
        self._lock_fd = fd

    def discard(self) -> None:
        """Delete the saved state (``--fresh``)."""
        for _, p in self.journals():
            p.unlink()
        for name in (SNAPSHOT, LEGACY_STATE):
            (self.dir / name).unlink(missing_ok=True)
        self._n = 0

    def load(self) -> dict[str, int]:
        """Apply the snapshot, then the journals it does not cover, to moto's backends (their
        tables and bucket must exist). Returns ``{"items", "objects", "journal_records"}``."""
        from moto.core import DEFAULT_ACCOUNT_ID

        applier = Applier()
        first = 0
        if self.snapshot_path.exists():
            records, damaged = read_records(self.snapshot_path)
            if records and records[0][0] and records[0][0][0].get("format") == FORMAT:
                first = int(records[0][0][0]["next_journal"])
                records = records[1:]
            for ops, blobs in records:
                applier.apply(ops, blobs)
            if damaged is not None:
                self.log(f"WARNING: {self.snapshot_path} is damaged at byte {damaged}; the rest of it is ignored")
            self._snapshot_bytes = self.snapshot_path.stat().st_size
        elif (self.dir / LEGACY_STATE).exists():
            import_legacy(self.dir / LEGACY_STATE, applier, DEFAULT_ACCOUNT_ID, "us-east-1")
            self._dirty_at_start = True
            self.log(f"imported {self.dir / LEGACY_STATE} (written by an earlier version)")
        replayed = 0
        for n, path in self.journals():
            if n < first:
                path.unlink()  # covered by the snapshot (a compaction stopped before deleting it)
                continue
            records, damaged = read_records(path)
            for ops, blobs in records:
                applier.apply(ops, blobs)
            replayed += len(records)
            if damaged is not None:
                self.log(f"ignored a damaged record at byte {damaged} of {path.name} and the rest of the file "
                         "(a write cut short by a crash, never acknowledged)")
            if path.stat().st_size:
                self._dirty_at_start = True
            first = max(first, n)
        self._n = first
        for table in sorted(applier.missing_tables):
            self.log(f"skipped saved items of table {table}: the template no longer declares it")
        return {"items": applier.items, "objects": applier.objects, "journal_records": replayed}

    def open(self) -> None:
        """Start journaling (compacting first when the state came from a journal or an old
        export, so every run starts from one snapshot and an empty journal)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.active = True
        if self._dirty_at_start:
            self.compact()
            (self.dir / LEGACY_STATE).unlink(missing_ok=True)
        else:
            self._open_journal(self._n)

    def close(self) -> None:
        """Compact (the next start reads one snapshot) and stop journaling."""
        if not self.active:
            return
        self.compact()
        with self.lock, self._sync_lock:
            self.active = False
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        for _, p in self.journals():
            if p.stat().st_size == 0:
                p.unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # journal
    def _open_journal(self, n: int) -> None:
        self._fd = os.open(self.journal_path(n), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._n = n
        self._journal_bytes = os.fstat(self._fd).st_size
        _fsync_dir(self.dir)

    def _journal_fd(self) -> int:
        if self._fd is None:
            raise RuntimeError("the journal is not open")
        return self._fd

    def append(self, ops: list[dict[str, Any]], blobs: Sequence[bytes] = ()) -> int:
        """Append one record (call under ``lock``); returns the position to ``sync`` to."""
        frame = encode_record(ops, blobs)
        view = memoryview(frame)
        fd = self._journal_fd()
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            # a partial frame would hide every later record from replay: cut it off again
            os.ftruncate(fd, self._journal_bytes)
            raise
        self._journal_bytes += len(frame)
        self._lsn += len(frame)
        return self._lsn

    def sync(self, lsn: int) -> None:
        """Return once everything up to ``lsn`` is on disk (one fsync serves every writer
        waiting meanwhile)."""
        if self._synced >= lsn:
            return
        with self._sync_lock:
            if self._synced >= lsn:
                return
            target = self._lsn
            _datasync(self._journal_fd())
            self._synced = max(self._synced, target)

    def journaled(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` (moto handling one request) as one journaled write: under ``lock``,
        noting what it touches; append the after-images; fsync them before returning."""
        touched: dict[tuple, tuple] = {}
        lsn = 0
        with self.lock:
            _tls.touched = touched
            try:
                result = call()
            finally:  # even when moto failed half-way: journal what it did change
                _tls.touched = None
                if touched:
                    lsn = self.append(*after_images(touched))
        if lsn:
            self.sync(lsn)
        return result

    # compaction
    def needs_compaction(self) -> bool:
        """The journal outgrew ``max(compact_min_bytes, size of the last snapshot)``."""
        return self.active and self._journal_bytes > max(self.compact_min_bytes, self._snapshot_bytes)

    def compact_if_due(self) -> None:
        """``compact()`` when ``needs_compaction()`` (a worker's tick)."""
        if self.needs_compaction():
            self.compact()

    def compact(self) -> None:
        """Snapshot the backends and start a new journal; delete the journals it covers."""
        with self._compact_lock:
            with self.lock:
                started = time.perf_counter()
                records = snapshot_records()
                n = self._n + 1
                with self._sync_lock:
                    if self._fd is not None:
                        _datasync(self._fd)
                        os.close(self._fd)
                    self._synced = self._lsn
                    self._open_journal(n)
                held_ms = (time.perf_counter() - started) * 1000
            tmp = self.dir / f".{SNAPSHOT}.{os.getpid()}.tmp"
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb", buffering=1 << 20) as fh:
                fh.write(encode_record([{"format": FORMAT, "version": VERSION, "next_journal": n}]))
                for ops, blobs in records:
                    fh.write(encode_record(ops, blobs))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.snapshot_path)
            _fsync_dir(self.dir)
            self._snapshot_bytes = self.snapshot_path.stat().st_size
            for m, path in self.journals():
                if m < n:
                    path.unlink()
            self.log(f"state compacted into {self.snapshot_path} ({self._snapshot_bytes / 1e6:.1f} MB; "
                     f"writes waited {held_ms:.0f} ms)")


# --- the server -----------------------------------------------------------------------------

def may_write(environ: dict[str, Any]) -> bool:
    """Whether a request to moto's server can change DynamoDB or S3 (reads skip the lock)."""
    if environ.get("REQUEST_METHOD") in ("GET", "HEAD", "OPTIONS"):
        return False
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        service, _, op = target.partition(".")
        if service.startswith("AmazonSQS") or (service.startswith("DynamoDB") and op in DDB_READS):
            return False
    return True


class JournalMiddleware:
    """WSGI middleware around moto's server app: every request that may write runs through
    ``Durable.journaled``. When the journal cannot be written the client gets a 500 (the write
    is in memory but not durable, so it is not acknowledged)."""

    def __init__(self, app: Callable, durable: Durable | None) -> None:
        self.app = app
        self.durable = durable

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Any:
        durable = self.durable
        if durable is None or not durable.active or not may_write(environ):
            return self.app(environ, start_response)
        try:
            return durable.journaled(lambda: self.app(environ, start_response))
        except OSError as exc:
            durable.log(f"ERROR: the journal could not be written ({exc}); the write was not acknowledged")
            start_response("500 Internal Server Error", [("Content-Type", "application/json")], sys.exc_info())
            return [json.dumps({"__type": "InternalFailure", "message": "local state journal failed"}).encode()]


class MotoServer:
    """moto's server app (DynamoDB, S3, SQS, ...) on a threaded werkzeug server, wrapped in
    ``JournalMiddleware`` (``durable=None``: no persistence)."""

    def __init__(self, host: str, port: int, durable: Durable | None) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import ThreadedWSGIServer

        self.app = JournalMiddleware(DomainDispatcherApplication(create_backend_app), durable)
        self.server = ThreadedWSGIServer(host, port, self.app, handler=MotoRequestHandler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="cairn-moto", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
