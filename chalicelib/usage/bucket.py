"""GCRA token-bucket arithmetic (pure; times in microseconds).

A bucket is one number, ``tat`` (theoretical arrival time). With ``period`` = the time one token
takes to refill (60 s / requests per minute) and ``cap`` = burst x period, a request of cost
``c`` (x period) is allowed when ``max(tat, now) + c <= now + cap``, and then ``tat`` becomes
``max(tat, now) + c``. DynamoDB applies it with one conditional update, in one of two forms whose
conditions partition the states of the item:

- ``busy`` (``tat >= now``): ``SET tat = tat + c`` if ``tat BETWEEN now AND now + cap - c``;
- ``idle`` (no ``tat`` or ``tat < now``): ``SET tat = now + c`` if ``attribute_not_exists(tat) OR
  tat < now``.

An ``ADD`` on a ``tat`` in the past would grant the time it lies behind ``now`` on top of the
burst, so ``busy`` never applies there: however the spends interleave, at most ``burst`` pass at
once.

The caller guesses the form from the last ``tat`` it saw (``choose``). A failed condition with the
old ``tat`` is then either a deny (``tat > now + cap - c``, with an honest wait: at ``now + wait``
the same request passes) or a wrong guess (use the other form).
"""

from __future__ import annotations

from dataclasses import dataclass

US = 1_000_000


@dataclass(frozen=True)
class Rate:
    """A bucket's shape: ``period_us`` per token, ``burst`` tokens of capacity."""

    period_us: int
    burst: int

    @property
    def cap_us(self) -> int:
        return self.burst * self.period_us

    def cost_us(self, cost: int) -> int:
        """The time a request of ``cost`` tokens takes from the bucket (a cost above the burst
        counts as the whole burst, so it can pass on a full bucket)."""
        return min(max(1, cost), self.burst) * self.period_us


def rate(per_minute: int, burst: int) -> Rate | None:
    """The bucket of ``per_minute`` requests and ``burst`` capacity; ``None`` when ``per_minute``
    is 0 (no limit)."""
    if per_minute <= 0:
        return None
    return Rate(period_us=max(1, 60 * US // per_minute), burst=max(1, burst))


@dataclass(frozen=True)
class Plan:
    """One conditional update: ``form`` is ``busy`` or ``idle``; ``lo``/``hi`` bound ``tat`` in
    the busy condition; ``add`` is what busy adds, ``set_to`` what idle sets."""

    form: str
    now_us: int
    add: int
    lo: int
    hi: int
    set_to: int


def choose(hint_tat: int | None, now_us: int, r: Rate, cost: int = 1, form: str | None = None) -> Plan:
    """The update to try: ``busy`` when the last ``tat`` seen is at or after ``now``, else ``idle``
    (``form`` forces one)."""
    c = r.cost_us(cost)
    if form is None:
        form = "busy" if hint_tat is not None and hint_tat >= now_us else "idle"
    return Plan(form=form, now_us=now_us, add=c, lo=now_us, hi=now_us + r.cap_us - c, set_to=now_us + c)


@dataclass(frozen=True)
class Verdict:
    """What a failed condition means: ``deny`` with ``retry_after_s``, or ``other`` (try the other
    form)."""

    deny: bool
    retry_after_s: int = 0


def verdict(old_tat: int | None, plan: Plan) -> Verdict:
    """The meaning of ``plan``'s failed condition given the item's old ``tat``."""
    if old_tat is not None and old_tat > plan.hi:
        wait = old_tat - plan.hi
        return Verdict(True, -(-wait // US))
    return Verdict(False)


def spend(tat: int | None, now_us: int, r: Rate, cost: int = 1) -> tuple[bool, int | None, int]:
    """The bucket law in one step, as DynamoDB applies it: ``(allowed, new tat, retry_after_s)``."""
    plan = choose(tat, now_us, r, cost)
    for form in (plan.form, "idle" if plan.form == "busy" else "busy"):
        p = choose(tat, now_us, r, cost, form)
        if p.form == "busy" and tat is not None and p.lo <= tat <= p.hi:
            return True, tat + p.add, 0
        if p.form == "idle" and (tat is None or tat < now_us):
            return True, p.set_to, 0
        v = verdict(tat, p)
        if v.deny:
            return False, tat, v.retry_after_s
    raise AssertionError("the two forms partition the states")  # pragma: no cover
