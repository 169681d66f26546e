"""The GCRA bucket arithmetic and usage keys (pure)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.usage import bucket, keys
from chalicelib.usage.bucket import US


def test_capacity_60_refill_1_per_second_allows_burst_plus_refill():
    r = bucket.rate(60, 60)
    tat, ok = None, 0
    rng = random.Random(7)
    times = sorted(rng.uniform(0, 5) for _ in range(200))
    for t in times:
        allowed, tat, _ = bucket.spend(tat, int(t * US), r)
        ok += allowed
    assert 60 <= ok <= 66


def test_denied_request_passes_after_its_retry_after():
    r = bucket.rate(60, 60)
    tat = None
    for _ in range(60):
        allowed, tat, _ = bucket.spend(tat, 0, r)
        assert allowed
    allowed, tat2, wait = bucket.spend(tat, 0, r)
    assert not allowed and tat2 == tat and wait == 1
    assert bucket.spend(tat, wait * US, r)[0]


def test_as_of_cost_spends_more_and_is_capped_at_the_burst():
    r = bucket.rate(60, 20)
    tat = None
    allowed, tat, _ = bucket.spend(tat, 0, r, cost=10)
    assert allowed and tat == 10 * US
    assert bucket.spend(tat, 0, r, cost=10)[0]
    assert not bucket.spend(tat + 10 * US, 0, r, cost=10)[0]
    # a cost above the burst takes the whole (full) bucket rather than never passing
    assert bucket.spend(None, 0, r, cost=500) == (True, 20 * US, 0)


def test_zero_rate_is_no_limit():
    assert bucket.rate(0, 10) is None
    r = bucket.rate(600, 120)
    assert r.burst == 120 and r.period_us == 100_000


@settings(derandomize=True, max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 3 * US), st.integers(1, 5)), min_size=1, max_size=80),
       st.integers(1, 120), st.integers(1, 30))
def test_wrong_guess_never_decides_and_a_deny_is_honest(steps, per_minute, burst):
    """Whichever form a caller guesses, a failed condition is either a deny (and the same request
    passes after the wait, nobody else spending) or the other form succeeds."""
    r = bucket.rate(per_minute, burst)
    tat, now = None, 0
    for dt, cost in steps:
        now += dt
        for form in ("busy", "idle"):
            p = bucket.choose(tat, now, r, cost, form)
            passes = (tat is not None and p.lo <= tat <= p.hi) if form == "busy" else (tat is None or tat < now)
            if not passes:
                v = bucket.verdict(tat, p)
                if v.deny:
                    assert bucket.spend(tat, now + v.retry_after_s * US, r, cost)[0]
        _allowed, tat, _ = bucket.spend(tat, now, r, cost)


def test_keys_sort_by_hour_and_split_back():
    ms = 1_764_612_000_000  # 2025-12-01T18:00Z
    hour = keys.hour_of(ms + 59 * 60_000)
    assert hour == "2025120118" and keys.hour_start_ms(hour) == ms
    sk = keys.write_sk(hour, "tok#1", 3)
    assert keys.split_sk(sk) == (hour, "tok#1") and keys.split_sk(keys.read_sk(hour, "t")) == (hour, "t")
    assert keys.split_counter(keys.counter("!space/a|b", "req_recall")) == ("!space/a|b", "req_recall")
    assert [keys.shown_scope(s) for s in ("", "main", "!space/x", "!project/p")] == \
        ["org", "main", "space:x", "scope:project/p"]
    assert keys.nano_usd(1_000_000, 0.25) == 250_000_000


def _burst_at_once(tat: int | None, now: int, r: bucket.Rate) -> int:
    """How many spends of 1 pass at ``now``, each trying the form its predecessor's ``tat`` says."""
    n = 0
    while True:
        p = bucket.choose(tat, now, r, 1)
        if p.form == "busy" and tat is not None and p.lo <= tat <= p.hi:
            tat += p.add
        elif p.form == "idle" and (tat is None or tat < p.lo):
            tat = p.set_to
        elif bucket.verdict(tat, p).deny:
            return n
        else:
            raise AssertionError("a state no form covers")
        n += 1


@settings(derandomize=True, max_examples=300)
@given(st.one_of(st.none(), st.integers(0, 400 * US)), st.integers(0, 400 * US), st.integers(1, 600),
       st.integers(1, 120))
def test_at_most_the_burst_passes_at_once_whatever_the_state(tat, now, per_minute, burst):
    """From any state of the item (a ``tat`` far or just behind ``now``, or ahead of it), the
    spends that pass at one instant never exceed the burst; from a full bucket, exactly the burst."""
    r = bucket.rate(per_minute, burst)
    assert _burst_at_once(tat, now, r) <= burst
    if tat is None or tat <= now:
        assert _burst_at_once(tat, now, r) == burst


def test_a_token_that_idled_one_burst_long_gets_one_burst_not_two():
    r = bucket.rate(60, 60)
    assert _burst_at_once(0, 60 * US, r) == 60
    assert _burst_at_once(0, 3600 * US, r) == 60
    assert _burst_at_once(70 * US, 60 * US, r) == 50
