"""Keys and names of usage items (pure).

Counter items live in partition ``u#<org>``, sorted by UTC hour so a time range is one key query.
Each holds the counters of one scope (its key ends in the scope's ``slot``), so however many banks
a caller names, no item gathers more than one scope's counters (and an org's request counters):

- ``<yyyymmddhh>#<token_id>#r<slot>``: the token's reads of that hour in one scope, one ``ADD``
  per read after its answer;
- ``<yyyymmddhh>#<token_id>#w<shard:02d><slot>``: counters written inside write transactions,
  sharded (by the write lane the transaction touches) so concurrent writers rarely meet on one
  item; ``<slot>`` is the scope the transaction writes (the request's, or the bank it stages).

A counter is a top-level number attribute named ``<scope>|<name>``: ``scope`` is the bank (or a
stored namespace such as ``!space/<id>``, ``""`` for org-level requests, or ``UNKNOWN`` for a bank
that does not exist) and ``name`` one of ``COUNTERS`` or ``req_<operation>``.

The rate-limit buckets hold ``tat`` (and ``expires_at``) only, in partition ``b#<org>``:
``<token_id>#r`` (a token's reads), ``<token_id>#w`` (its writes) and ``ORG_BUCKET`` (all the
org's tokens together); counting never grows them.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

READ = "r"
SEP = "|"
ORG_BUCKET = "#org"  # token ids never start with '#'
UNKNOWN = "?"  # the scope of a request naming a bank that does not exist (no bank name has a '?')

# counter names besides req_<operation> and w_<write op>
COUNTERS = ("recall", "preview", "hook", "context", "inj_chars", "inj_tok",
            "x_jobs", "x_in", "x_out", "x_nusd")
BYTES_PREFIX = "bytes_"  # stored-bytes deltas: bytes_rules, bytes_snapshot, bytes_export, bytes_yjs
NON_COUNTERS = frozenset({"pk", "sk", "tat", "expires_at"})


def hour_of(ms: int) -> str:
    """``yyyymmddhh`` (UTC) of a time in ms since the epoch."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y%m%d%H")


def hour_start_ms(hour: str) -> int:
    """The first ms of the UTC hour ``yyyymmddhh``."""
    return int(datetime.strptime(hour, "%Y%m%d%H").replace(tzinfo=UTC).timestamp() * 1000)


def partition(org_id: str) -> str:
    """The counter partition of an org."""
    return f"u#{org_id}"


def slot(scope: str) -> str:
    """The end of a counter item's key for ``scope``: ``""`` for the org, else ``.`` and 12 hex
    digits of its SHA-256 (any length of name, one short key; no ``#``)."""
    return "" if not scope else "." + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:12]


def read_sk(hour: str, token_id: str, scope: str = "") -> str:
    """The sort key of a token's read counter item of ``hour`` in ``scope``."""
    return f"{hour}#{token_id}#{READ}{slot(scope)}"


def write_sk(hour: str, token_id: str, shard: int, scope: str = "") -> str:
    """The sort key of a token's write counter shard of ``hour`` for ``scope``."""
    return f"{hour}#{token_id}#w{shard:02d}{slot(scope)}"


def write_bucket_key(org_id: str, token_id: str) -> tuple[str, str]:
    """``(pk, sk)`` of a token's write bucket."""
    return f"b#{org_id}", f"{token_id}#w"


def read_bucket_key(org_id: str, token_id: str) -> tuple[str, str]:
    """``(pk, sk)`` of a token's read bucket."""
    return f"b#{org_id}", f"{token_id}#{READ}"


def org_bucket_key(org_id: str) -> tuple[str, str]:
    """``(pk, sk)`` of the bucket all of an org's tokens share."""
    return f"b#{org_id}", ORG_BUCKET


def split_sk(sk: str) -> tuple[str, str]:
    """``(hour, token_id)`` of a counter item's sort key."""
    hour, rest = sk.split("#", 1)
    return hour, rest.rsplit("#", 1)[0]


def counter(scope: str, name: str) -> str:
    """The attribute name of counter ``name`` of ``scope``."""
    return f"{scope}{SEP}{name}"


def split_counter(attr: str) -> tuple[str, str]:
    """``(scope, name)`` of a counter attribute name."""
    scope, _, name = attr.rpartition(SEP)
    return scope, name


def shown_scope(scope: str) -> str:
    """A stored scope as reports show it: a bank name, ``space:<id>``, ``scope:<namespace>``,
    ``org`` for requests that name no bank, ``?`` for those naming a bank that does not exist."""
    if not scope:
        return "org"
    if scope == UNKNOWN:
        return UNKNOWN
    if scope.startswith("!space/"):
        return "space:" + scope[len("!space/"):]
    if scope.startswith("!"):
        return "scope:" + scope[1:]
    return scope


def nano_usd(tokens: int, usd_per_million: float) -> int:
    """The cost of ``tokens`` model tokens at ``usd_per_million`` USD per million, in nano-USD
    (USD per million tokens is micro-USD per token)."""
    return round(tokens * usd_per_million * 1000)
