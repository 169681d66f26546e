"""Keys and names of usage items (pure).

Counter items live in partition ``u#<org>``, sorted by UTC hour so a time range is one key query:

- ``<yyyymmddhh>#<token_id>#r``: the token's reads of that hour, and its read rate-limit bucket
  (``tat``), written by one conditional ``UpdateItem`` per read;
- ``<yyyymmddhh>#<token_id>#w<shard:02d>``: counters written inside write transactions, sharded
  (by the write lane the transaction touches) so concurrent writers rarely meet on one item.

A counter is a top-level number attribute named ``<scope>|<name>``: ``scope`` is the bank (or a
stored namespace such as ``!space/<id>``, or ``""`` for org-level requests) and ``name`` one of
``COUNTERS`` or ``req_<operation>``. The write rate-limit buckets are ``b#<org>`` /
``<token_id>#w<k>`` (``tat`` only).
"""

from __future__ import annotations

from datetime import UTC, datetime

READ = "r"
SEP = "|"
BUCKET_SHARDS = 4  # write-bucket shards of a token (each holds 1/K of the rate and the burst)

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


def read_sk(hour: str, token_id: str) -> str:
    """The sort key of a token's read item (counters and read bucket) of ``hour``."""
    return f"{hour}#{token_id}#{READ}"


def write_sk(hour: str, token_id: str, shard: int) -> str:
    """The sort key of a token's write counter shard of ``hour``."""
    return f"{hour}#{token_id}#w{shard:02d}"


def bucket_key(org_id: str, token_id: str, shard: int) -> tuple[str, str]:
    """``(pk, sk)`` of write-bucket shard ``shard`` of a token."""
    return f"b#{org_id}", f"{token_id}#w{shard}"


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
    """A stored scope as reports show it: a bank name, ``space:<id>``, ``scope:<namespace>``, or
    ``org`` for requests that name no bank."""
    if not scope:
        return "org"
    if scope.startswith("!space/"):
        return "space:" + scope[len("!space/"):]
    if scope.startswith("!"):
        return "scope:" + scope[1:]
    return scope


def nano_usd(tokens: int, usd_per_million: float) -> int:
    """The cost of ``tokens`` model tokens at ``usd_per_million`` USD per million, in nano-USD
    (USD per million tokens is micro-USD per token)."""
    return round(tokens * usd_per_million * 1000)
