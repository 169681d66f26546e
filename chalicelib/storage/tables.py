"""The DynamoDB tables, as pynamodb models.

One table per purpose; ``infra/template.json`` declares the same keys and indexes and
``tests/test_infra_drift.py`` proves they agree. Physical names are ``<table_prefix><logical>``
(``Settings.table_name``); ``bind()`` points every model at the current settings' names and region
before use, because Chalice applies stage variables per request.

Tables (logical name: hash key, range key; index): purpose.
- ``tokens`` (token_id; GSI org-index (org_id, created_at)): principals and their bearer tokens
- ``banks`` (org_id, name): live banks, trash entries, internal namespaces
- ``memories`` (bank_key, sk; LSI order-index (bank_key, ord)): current memory records and
  fingerprint pointers
- ``revisions`` (bank_key, seq; LSI memory-index (bank_key, rev_key)): append-only history; ``seq``
  order is commit order
- ``idempotency`` (key): first responses replayed for an Idempotency-Key
- ``audit`` (org_id, sk; LSI action-index (org_id, action_sk); GSIs actor-index (actor_key, sk) and
  target-index (target_key, sk)): audit events, never content
- ``team_spaces`` (org_id, sk): team spaces, memberships, deny rules
- ``team_entries`` (org_id, entry_id; LSI space-index (org_id, space_sk)): team-memory entries
  (metadata, derived text, counters)
- ``team_updates`` (entry_key, sk): append-only edit log, updateIds, Yjs client-id owners
- ``team_events`` (entry_key, sk): entry history: status events and metadata changes
- ``team_attributions`` (space_key, sk): what team-memory retrievals served, to whom, when
- ``team_rates`` (key): per-minute update counters (TTL)
- ``structured`` (org_id, sk): sessions, workstreams, projects, members, memory locations
- ``extraction`` (session_key, sk): extraction cursors, per-turn job progress, session provenance
- ``usage`` (pk, sk): per-org usage counters by hour, rate-limit buckets, quota counters and
  per-org limits (counters are top-level number attributes named by ``chalicelib.usage``)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.connection import Connection
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, LocalSecondaryIndex
from pynamodb.models import Model

from ..settings import Settings, get_settings
from . import damage


class _Base(Model):
    class Meta:
        abstract = True
        table_name = "unbound"
        region = "us-east-1"
        billing_mode = "PAY_PER_REQUEST"

    LOGICAL_NAME = ""
    # {attribute: problem} of an item read from DynamoDB (``damage``); empty when healthy
    damaged: Mapping[str, str] = MappingProxyType({})

    @classmethod
    def from_raw_data(cls, data: dict[str, Any]) -> Any:
        """Every item read (get, query, scan, batch get) comes through here: an attribute that
        does not decode is left at its default and values no client can take are scrubbed
        (``damage``), so one hand-edited attribute never fails a read of the item or of a page."""
        try:
            item = super().from_raw_data(data)
            found: dict[str, str] = {}
        except Exception:  # noqa: BLE001 - decode attribute by attribute below
            item, found = cls._decode_each(data)
        for name, attr in cls.get_attributes().items():
            value = getattr(item, name, None)
            if isinstance(value, MapAttribute):
                value = value.as_dict()
            reason = damage.problem(value)
            if reason is None:
                continue
            found[name] = reason
            if not (attr.is_hash_key or attr.is_range_key):  # a key must keep addressing its item
                cleaned = damage.clean(value)
                setattr(item, name, MapAttribute(**cleaned) if isinstance(attr, MapAttribute) else cleaned)
        if found:
            item.damaged = found
            damage.report_values(cls.LOGICAL_NAME, found)
        return item

    @classmethod
    def raw_int(cls, data: Mapping[str, Any], name: str) -> int | None:
        """The integer attribute ``name`` (a ``NumberAttribute``) of ``data``, an item as DynamoDB
        returned it, decoded without building the model (a read of many small items, such as
        the bank version items recall reads); ``None`` when absent or when it does not decode as
        an integer every client can take (then reported as ``from_raw_data`` reports it: one
        ``DamagedValues`` metric)."""
        attr = cls.get_attributes()[name]
        raw = data.get(attr.attr_name)
        if not raw or "NULL" in raw:
            return None
        try:
            value = attr.deserialize(attr.get_value(raw))
            reason = damage.problem(value) or (None if type(value) is int else "not an integer")
        except Exception:  # noqa: BLE001 - wrong stored type, not a number
            reason = "not decodable" if attr.attr_type in raw else "wrong stored type"
        if reason is not None:
            damage.report_values(cls.LOGICAL_NAME, {name: reason})
            return None
        return int(value)

    def _container_deserialize(self, attribute_values: dict[str, Any]) -> None:
        # what ``update()`` (ALL_NEW) and ``refresh()`` call: decoded as tolerantly as a read
        item = type(self).from_raw_data(attribute_values)
        self.attribute_values = item.attribute_values
        self.damaged = item.damaged

    @classmethod
    def _decode_each(cls, data: dict[str, Any]) -> tuple[Any, dict[str, str]]:
        item = cls(_user_instantiated=False)
        found: dict[str, str] = {}
        for name, attr in cls.get_attributes().items():
            raw = data.get(attr.attr_name)
            if not raw or "NULL" in raw:
                continue
            try:
                setattr(item, name, attr.deserialize(attr.get_value(raw)))
            except Exception:  # noqa: BLE001 - wrong stored type, invalid JSON, too deep
                found[name] = "not decodable" if attr.attr_type in raw else "wrong stored type"
        return item, found


# --- tokens ---------------------------------------------------------------------------------

class TokensByOrg(GlobalSecondaryIndex):
    """List an org's tokens, oldest first."""

    class Meta:
        index_name = "org-index"
        projection = AllProjection()

    org_id = UnicodeAttribute(hash_key=True)
    created_at = NumberAttribute(range_key=True)


class TokenModel(_Base):
    """A principal's bearer token. ``token_id`` = ``tok_`` + the first 32 hex digits of the
    token's SHA-256, so authentication is one consistent GetItem; the secret is never stored."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "tokens"
    token_id = UnicodeAttribute(hash_key=True)
    digest = UnicodeAttribute()
    org_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    permissions = ListAttribute(of=UnicodeAttribute, default=list)
    label = UnicodeAttribute(null=True)
    expires_at = NumberAttribute(null=True)
    banks = ListAttribute(of=UnicodeAttribute, null=True)
    created_at = NumberAttribute()
    created_by = UnicodeAttribute(null=True)
    revoked_at = NumberAttribute(null=True)
    last_used_at = NumberAttribute(null=True)
    by_org = TokensByOrg()


# --- banks ----------------------------------------------------------------------------------

class BankModel(_Base):
    """A bank row. ``name`` is the bank name for live banks (``[a-z0-9]...``), ``.trash/<id>`` for
    trash entries, ``!<namespace>`` for internal namespaces and ``!lane/<incarnation>/<lane>`` for
    a bank's write lanes 1.. (keys no bank name can take); org ``_system`` also holds the config
version row ``!config`` and the service secret ``!secret`` (``storage.secret``). ``seq`` counts the changes committed in
    lane 0 (the bank row) or in the lane a lane row holds; ``lanes`` (bank rows only; absent: 1) is
    how many lanes the bank's changes are split into, by memory id; ``sealed`` marks the lanes of
    a trashed bank; ``snapshot_*`` (bank rows only) the newest index snapshot written of it."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "banks"
    org_id = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    bank_name = UnicodeAttribute()  # the public name (== name for live banks)
    incarnation = UnicodeAttribute()
    description = UnicodeAttribute(default="")
    seq = NumberAttribute(default=0)
    memories = NumberAttribute(default=0)  # live memories
    pinned = NumberAttribute(default=0)  # live pinned memories
    records = NumberAttribute(default=0)  # all memory records, retired included
    rules = NumberAttribute(default=0)
    rules_version = NumberAttribute(default=0)
    created_at = NumberAttribute()
    updated_at = NumberAttribute()
    trashed_to = UnicodeAttribute(null=True)
    trashed_at = NumberAttribute(null=True)
    tuning = UnicodeAttribute(null=True)  # the config row only: the last good memory tuning, JSON
    lanes = NumberAttribute(null=True)
    sealed = BooleanAttribute(null=True)
    secret = UnicodeAttribute(null=True)  # the service secret's row only (``storage.secret``)
    # the newest recall index snapshot the snapshot writer recorded (what GET /v1/status shows)
    snapshot_seq = NumberAttribute(null=True)
    snapshot_key = UnicodeAttribute(null=True)
    snapshot_at = NumberAttribute(null=True)
    # the last snapshot a reader or writer claimed the right to write: its clock total, when (ms)
    snapshot_claim = NumberAttribute(null=True)
    snapshot_claim_at = NumberAttribute(null=True)
    tag_counts = BooleanAttribute(null=True)  # the bank keeps per-tag counters (core.store.tag_total)
    # live memories with a current-model sentence vector, in the lane this row counts (core.vectors)
    vectors = NumberAttribute(null=True)
    settings = UnicodeAttribute(null=True)  # bank rows only: the bank's settings, JSON (banks.records.BankSettings)
    vectors_model = UnicodeAttribute(null=True)  # the model whose vectors ``vectors`` counts (core.store)


# --- memories -------------------------------------------------------------------------------

class MemoriesByOrder(LocalSecondaryIndex):
    """Newest first: ``ord`` = (MAX_MS - updated_at) zero-padded + ``#`` + id, read ascending.
    Fingerprint pointer items have no ``ord`` and so never appear (a sparse index)."""

    class Meta:
        index_name = "order-index"
        projection = AllProjection()

    bank_key = UnicodeAttribute(hash_key=True)
    ord = UnicodeAttribute(range_key=True)


class MemoryModel(_Base):
    """Current state of one memory (``sk`` = its id), a fingerprint pointer (``sk`` =
    ``~fp/<fingerprint>``, ``memory_id`` = the memory whose current text has it), or a lane's
    counter of one tag (``sk`` = ``~tag/<lane>/<tag>``, ``t_live``, ``t_all``)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "memories"
    bank_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    ord = UnicodeAttribute(null=True)
    memory_id = UnicodeAttribute(null=True)  # pointer items only
    record = JSONAttribute(null=True)  # the memory record (chalicelib.banks.records.Memory)
    fp = UnicodeAttribute(null=True)  # fingerprint of the current text
    live = BooleanAttribute(null=True)
    revision = NumberAttribute(null=True)
    tags = UnicodeSetAttribute(null=True)  # copy of record.tags, for the list's tag filter
    t_live = NumberAttribute(null=True)  # tag counter items only: live records carrying the tag
    t_all = NumberAttribute(null=True)  # tag counter items only: records carrying the tag
    vec = BinaryAttribute(null=True, legacy_encoding=False)  # the record's sentence vector (core.vectors)
    # a bank's backfill cursor only (core.store.BackfillCursor; ``memory_id``: the last id examined,
    # ``revision``: the cursor's version): live memories the pass left without a vector, and the
    # model a finished pass embedded for
    bf_left = NumberAttribute(null=True)
    bf_model = UnicodeAttribute(null=True)
    by_order = MemoriesByOrder()


# --- revisions ------------------------------------------------------------------------------

class RevisionsByMemory(LocalSecondaryIndex):
    """One memory's history, oldest first: ``rev_key`` = id + ``#`` + revision + ``#`` + seq."""

    class Meta:
        index_name = "memory-index"
        projection = AllProjection()

    bank_key = UnicodeAttribute(hash_key=True)
    rev_key = UnicodeAttribute(range_key=True)


class RevisionModel(_Base):
    """One committed change of a bank's documents, append-only, keyed by the bank's ``seq``.
    ``op`` names the change; ``record`` is the full memory record after it (index catch-up
    replays these in ``seq`` order)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "revisions"
    bank_key = UnicodeAttribute(hash_key=True)
    seq = NumberAttribute(range_key=True)
    rev_key = UnicodeAttribute()
    memory_id = UnicodeAttribute()
    op = UnicodeAttribute()
    record = JSONAttribute()
    at = NumberAttribute()
    actor = UnicodeAttribute(null=True)
    vec = BinaryAttribute(null=True, legacy_encoding=False)  # the record's sentence vector (core.vectors)
    why = UnicodeAttribute(null=True)  # why the change was made, when not the caller's own request
    by_memory = RevisionsByMemory()


# --- idempotency ----------------------------------------------------------------------------

class IdempotencyModel(_Base):
    """The first response to a request carrying an ``Idempotency-Key`` (scoped to the token)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "idempotency"
    key = UnicodeAttribute(hash_key=True)
    request_digest = UnicodeAttribute()
    status = NumberAttribute()
    body = JSONAttribute()
    expires_at = NumberAttribute()  # seconds since epoch: the table's TTL attribute


# --- audit ----------------------------------------------------------------------------------

class AuditByAction(LocalSecondaryIndex):
    """An org's audit events of one action, oldest first: ``action_sk`` = action + ``#`` + sk."""

    class Meta:
        index_name = "action-index"
        projection = AllProjection()

    org_id = UnicodeAttribute(hash_key=True)
    action_sk = UnicodeAttribute(range_key=True)


class AuditByActor(GlobalSecondaryIndex):
    """An org's audit events by one actor, oldest first: ``actor_key`` = org + ``#`` + actor."""

    class Meta:
        index_name = "actor-index"
        projection = AllProjection()

    actor_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)


class AuditByTarget(GlobalSecondaryIndex):
    """An org's audit events on one target, oldest first: ``target_key`` = org + ``#`` + target
    (absent, so not indexed, for an event without a target)."""

    class Meta:
        index_name = "target-index"
        projection = AllProjection()

    target_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)


class AuditModel(_Base):
    """One audit event: who did what to which target, when. Never memory text or secrets."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "audit"
    org_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)  # "<at ms, 13 digits>#<uuid>"
    action_sk = UnicodeAttribute()
    action = UnicodeAttribute()
    actor = UnicodeAttribute()
    target = UnicodeAttribute(null=True)
    details: MapAttribute[str, Any] = MapAttribute(null=True)
    at = NumberAttribute()
    actor_key = UnicodeAttribute(null=True)  # absent on events written before the actor index
    target_key = UnicodeAttribute(null=True)
    times = NumberAttribute(null=True)  # an aggregated event (hook refusals): how many it stands for
    last_at = NumberAttribute(null=True)  # ... and the last one's time (ms)
    by_action = AuditByAction()
    by_actor = AuditByActor()
    by_target = AuditByTarget()


# --- structured memory --------------------------------------------------------------

class StructuredModel(_Base):
    """Structured memory's own records, keyed per org by a typed ``sk``: ``session#<id>``,
    ``workstream#<id>``, ``project#<id>``, ``member#<project_id>#<user_id>``, ``nudge#<session>#<type>``
    (``created_at`` = the last nudge of that type) and ``mem#<memory_id>``
    (where a memory lives, plus its touch counters ``access_count``/``last_accessed``, kept out of
    the memory record so a touch changes neither ``seq`` nor revision); ``deleted#<memory_id>``:
    where a deleted memory lived."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "structured"
    org_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    kind = UnicodeAttribute()  # session | workstream | project | member | mem | deleted
    data = JSONAttribute(null=True)  # the object's fields (pydantic-validated by its module)
    access_count = NumberAttribute(null=True)  # mem# items: atomic counter
    last_accessed = NumberAttribute(null=True)  # mem# items: ms since epoch
    created_at = NumberAttribute()


# --- extraction -------------------------------------------------------------------

class ExtractionModel(_Base):
    """Extraction state of one session, ``session_key`` = ``<org_id>#<session_id>``, typed ``sk``:
    ``cursor`` (how far the transcript was extracted: ``position`` messages, ``last_message_id``,
    the recent ``turns`` applied), ``job#<turn_id>`` (fingerprints already applied by an unfinished
    job, so a retry does not reinforce twice; expires) and ``mem#<bank>#<memory_id>`` (provenance:
    a memory this session taught, so forget-session is a key query, never a scan) and
    ``parked#<total>#<enqueued_at>#<turn_id>`` (a job deferred past the org's daily extraction
    quota, in turn order)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "extraction"
    session_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    org_id = UnicodeAttribute()
    session_id = UnicodeAttribute()
    position = NumberAttribute(null=True)  # cursor: messages consumed
    last_message_id = UnicodeAttribute(null=True)  # cursor: id of the last consumed message, when ids are sent
    turns = ListAttribute(of=UnicodeAttribute, null=True)  # cursor: recent turn ids applied, newest last
    applied = UnicodeSetAttribute(null=True)  # job#: fingerprints applied so far
    bank = UnicodeAttribute(null=True)  # mem#: the bank the memory lives in
    memory_id = UnicodeAttribute(null=True)  # mem#
    turn_id = UnicodeAttribute(null=True)  # mem#, job#
    updated_at = NumberAttribute()
    expires_at = NumberAttribute(null=True)  # seconds since epoch: the table's TTL attribute (job# rows)
    job = UnicodeAttribute(null=True)  # parked#: a deferred TurnJob (its JSON), run again the next UTC day


# --- team memory ------------------------------------------------------------------

class TeamSpaceModel(_Base):
    """Team-memory spaces and their access control, per org, typed ``sk``: ``space#<id>`` (the
    space; ``entries_live`` counts its entries that are not archived), ``member#<space_id>#<member_id>``
    (a member's per-space grants: ``context:space:read``/``context:space:write``; member id =
    user_id for persons and services, token_id for API keys) and ``deny`` (the org's deny rules)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "team_spaces"
    org_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    data = JSONAttribute(null=True)  # the object's fields (validated by chalicelib.team.spaces)
    entries_live = NumberAttribute(null=True)  # space#: entries not archived (the per-space cap)
    version = NumberAttribute(null=True)
    updated_at = NumberAttribute()


class TeamEntriesBySpace(LocalSecondaryIndex):
    """A space's entries, oldest first: ``space_sk`` = space id + ``#`` + created_at (13 digits) + ``#`` + id."""

    class Meta:
        index_name = "space-index"
        projection = AllProjection()

    org_id = UnicodeAttribute(hash_key=True)
    space_sk = UnicodeAttribute(range_key=True)


class TeamEntryModel(_Base):
    """One team-memory entry (``doc`` holds title, kind, links, supersedes, classification,
    authorship), its server-derived plain ``text`` and counters every write is conditioned on:
    ``meta_version`` (PATCH), ``log_seq`` (edit log rows), ``compacted_seq`` (payloads folded
    into S3 ``entries/<id>/state.bin``), ``revision`` (accepted revisions)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "team_entries"
    org_id = UnicodeAttribute(hash_key=True)
    entry_id = UnicodeAttribute(range_key=True)
    space_sk = UnicodeAttribute()
    space_id = UnicodeAttribute()
    status = UnicodeAttribute()
    kind = UnicodeAttribute()
    doc = JSONAttribute()
    text = UnicodeAttribute(default="")
    units = NumberAttribute(default=0)
    meta_version = NumberAttribute(default=1)
    revision = NumberAttribute(default=0)
    log_seq = NumberAttribute(default=0)
    compacted_seq = NumberAttribute(default=0)
    compacting_until = NumberAttribute(null=True)  # ms since epoch: the compaction lease (one compactor at a time)
    created_at = NumberAttribute()
    updated_at = NumberAttribute()
    by_space = TeamEntriesBySpace()


class TeamUpdateModel(_Base):
    """An entry's append-only edit log, ``entry_key`` = ``<org_id>#<entry_id>``, typed ``sk``:
    ``seq#<12 digits>`` (one update: author, time, SHA-256, ``payload`` until compacted),
    ``uid#<updateId>`` (the seq and SHA-256 an updateId was first used with) and
    ``client#<yjs client id>`` (the author who owns that client id in this entry)."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "team_updates"
    entry_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    seq = NumberAttribute(null=True)
    update_id = UnicodeAttribute(null=True)
    sha256 = UnicodeAttribute(null=True)
    payload = BinaryAttribute(null=True, legacy_encoding=False)
    size = NumberAttribute(null=True)
    author = UnicodeAttribute(null=True)
    at = NumberAttribute()


class TeamEventModel(_Base):
    """An entry's status events and metadata changes (history), ``entry_key`` = ``<org_id>#<entry_id>``,
    ``sk`` = at (13 digits) + ``#`` + uuid. Never the text."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "team_events"
    entry_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    action = UnicodeAttribute()
    actor = UnicodeAttribute()
    details = JSONAttribute(null=True)
    at = NumberAttribute()


class TeamAttributionModel(_Base):
    """What a retrieval served, per space: ``space_key`` = ``<org_id>#<space_id>``, ``sk`` = at
    (13 digits) + ``#`` + attribution id; ``entries`` = [{entryId, revision}], ``actor`` = to whom."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "team_attributions"
    space_key = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    attribution_id = UnicodeAttribute()
    actor = UnicodeAttribute()
    entries = JSONAttribute()
    at = NumberAttribute()


class TeamRateModel(_Base):
    """Fixed-window update counters (``key`` = ``<org>#<author>#<entry id or *>#<minute>``); expire by TTL."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "team_rates"
    key = UnicodeAttribute(hash_key=True)
    n = NumberAttribute(default=0)
    expires_at = NumberAttribute()  # seconds since epoch: the table's TTL attribute


class UsageModel(_Base):
    """Usage counters, rate-limit buckets, quota counters and per-org limits. ``pk`` starts with the
    item kind and the org (``<kind>#<org>...``); the counters themselves are top-level number
    attributes written with raw ``ADD`` updates, so the model declares only the keys and the TTL."""

    class Meta(_Base.Meta):
        pass

    LOGICAL_NAME = "usage"
    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    expires_at = NumberAttribute(null=True)  # seconds since epoch: the table's TTL attribute


TEAM_MODELS: tuple[type[_Base], ...] = (TeamSpaceModel, TeamEntryModel, TeamUpdateModel, TeamEventModel,
                                        TeamAttributionModel, TeamRateModel)


ALL_MODELS: tuple[type[_Base], ...] = (TokenModel, BankModel, MemoryModel, RevisionModel, IdempotencyModel, AuditModel,
                                         StructuredModel, ExtractionModel, UsageModel)
ALL_MODELS += TEAM_MODELS

_bind_lock = threading.Lock()
_bound: tuple[str, str] | None = None


def bind(settings: Settings | None = None) -> Settings:
    """Point every model at ``settings``' table names and region (idempotent, thread-safe).

    pynamodb caches a connection per model class, so a change of prefix or region drops it.
    Returns the settings used.
    """
    global _bound
    settings = settings or get_settings()
    want = (settings.table_prefix, settings.region)
    if _bound == want:
        return settings
    with _bind_lock:
        if _bound != want:
            for model in ALL_MODELS:
                model.Meta.table_name = settings.table_name(model.LOGICAL_NAME)
                model.Meta.region = settings.region
                model._connection = None
            _bound = want
    return settings


_connections: dict[tuple[str, str], Connection] = {}


def connection(settings: Settings | None = None) -> Connection:
    """A low-level connection for ``TransactWrite``/``TransactGet`` (pynamodb 6 requires one).

    Cached per (region, endpoint): building one creates a botocore session and client, which
    loads the service model from disk (tenths of a second), far more than a transaction costs.
    """
    settings = settings or get_settings()
    # boto's own endpoint variables (not Cairn settings), read by boto itself: part of the key
    key = (settings.region, os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL", ""))
    conn = _connections.get(key)
    if conn is None:
        with _bind_lock:
            conn = _connections.setdefault(key, Connection(region=settings.region))
    return conn
