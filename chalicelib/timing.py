"""Where one request's time went, by phase: the ``Server-Timing`` response header and the
request log line's ``phases``.

``recording()`` opens a ``Timings`` for the request (a ``ContextVar``, so code anywhere below the
route reports); ``phase(name)`` adds the wall time of its block to ``name`` (a block that runs
twice adds up; a block inside an open block of the same name adds nothing, so the hook's ``rank``
around ``recall``'s own counts once); outside a request (the CLI, scheduled jobs) it only runs the
block. Phase names are fixed tokens, never client text:

- ``token``: the bearer token's lookup (and its throttled ``last_used_at`` write);
- ``session``: a structured session and its visibility envelope;
- ``bank``: the turn's (or the recall's) consistent read of the bank rows;
- ``related``: a save's look-up of the memories its text duplicates or contradicts (the text
  embedded, the bank read, its index searched);
- ``rank``: the recall (the index caught up first when behind);
- ``floor``: the ambient floor (the bank's top memories when few matched);
- ``commit``: a bank write: its reads and staging (records embedded when not yet), its
  transaction, the move of the banks' versions and the index update;
- ``touch``: the injected memories' ``last_accessed``/``access_count`` write;
- ``render``: the injection's text and the response body;
- ``usage``: the request's usage counter write (and its rate-limit spend).

``server_timing(t, total_ms)`` renders ``name;dur=<ms>`` entries in the order above, then
``total``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

PHASES = ("token", "session", "bank", "related", "rank", "floor", "commit", "touch", "render", "usage")
HEADER = "Server-Timing"

Timings = dict[str, float]  # phase name -> ms

_current: ContextVar[Timings | None] = ContextVar("cairn_timings", default=None)
_open: ContextVar[frozenset[str]] = ContextVar("cairn_timing_open", default=frozenset())


@contextmanager
def recording() -> Iterator[Timings]:
    """Record the phases of the request running inside the block; yields its ``Timings``."""
    t: Timings = {}
    token = _current.set(t)
    try:
        yield t
    finally:
        _current.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Add the block's wall time (ms) to phase ``name`` (one of ``PHASES``) of the open request."""
    t = _current.get()
    opened = _open.get()
    if t is None or name in opened:
        yield
        return
    token = _open.set(opened | {name})
    started = time.perf_counter()
    try:
        yield
    finally:
        t[name] = t.get(name, 0.0) + (time.perf_counter() - started) * 1000
        _open.reset(token)


def rounded(t: Timings) -> dict[str, float]:
    """The recorded phases in ``PHASES`` order, ms rounded to 0.01."""
    return {k: round(t[k], 2) for k in PHASES if k in t}


def server_timing(t: Timings, total_ms: float) -> str:
    """``token;dur=0.81, bank;dur=2.4, ..., total;dur=9.7``: the phases that ran, then the total."""
    parts = [f"{k};dur={v:.2f}" for k, v in rounded(t).items()]
    return ", ".join([*parts, f"total;dur={total_ms:.2f}"])


def parse(header: str) -> dict[str, float]:
    """A ``Server-Timing`` value back into ``{name: ms}`` (entries without ``dur`` left out)."""
    out: dict[str, float] = {}
    for entry in header.split(","):
        name, *params = (p.strip() for p in entry.split(";"))
        for p in params:
            if p.startswith("dur="):
                with suppress(ValueError):
                    out[name] = float(p[4:])
    return out
