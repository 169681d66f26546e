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


def test_zero_rate_is_no_limit_and_shards_split_the_rate():
    assert bucket.rate(0, 10) is None
    r = bucket.rate(600, 120, shards=4)
    assert r.burst == 30 and r.period_us == 400_000


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


def _burst_at_once(tat: int, now: int, r: bucket.Rate, slack: int) -> int:
    n = 0
    while True:
        p = bucket.choose(tat, now, r, 1, slack_us=slack)
        if p.form == "busy" and p.lo <= tat <= p.hi:
            tat += p.add
        elif p.form == "idle" and tat < p.lo:
            tat = p.set_to
        elif bucket.verdict(tat, p).deny:
            return n
        else:
            raise AssertionError("a state no form covers")
        n += 1


def test_a_slack_keeps_the_commutative_form_and_grants_at_most_one_burst_more():
    """The write buckets' slack of one burst: after an idle spell at most twice the burst passes
    at once; a bucket in use passes exactly what it would without the slack."""
    r = bucket.rate(60, 60)
    assert _burst_at_once(0, 60 * US, r, 0) == 60
    assert _burst_at_once(0, 60 * US, r, r.cap_us) == 120
    assert _burst_at_once(0, 3600 * US, r, r.cap_us) == 60  # long idle: the idle form, one burst
    assert _burst_at_once(70 * US, 60 * US, r, r.cap_us) == _burst_at_once(70 * US, 60 * US, r, 0) == 50
