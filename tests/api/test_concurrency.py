"""Concurrent saves through the service, in-process moto with
motolock serialising moto's transactions (tests/api/conftest.py): optimistic retries resolve every
conflict, so no write is lost and the bank's clock (its lanes' positions) advances once per change."""

import threading

N = 20


def _bank(name="race", org="default"):
    """The bank's ``BankHead``: row, clock and counters summed over its lanes."""
    from chalicelib.core.store import get_bank_head
    return get_bank_head(org, name)


def _run_all(fns):
    barrier = threading.Barrier(len(fns))
    results, errors = [None] * len(fns), []

    def wrap(i, fn):
        try:
            barrier.wait()
            results[i] = fn()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _save(text):
    from chalicelib.api.banks import render_save
    from chalicelib.banks import service
    from chalicelib.banks.records import SaveRequest
    return lambda: render_save(service.save_memory("default", "race", SaveRequest(text=text), actor="t"))


def test_twenty_saves_of_one_text(api):
    api.post("/v1/banks", {"name": "race"})
    seq0 = _bank().clock.total
    results = _run_all([_save("Concurrent   SAVE of one text") for _ in range(N)])
    assert sorted(r[0] for r in results) == [200] * (N - 1) + [201]
    assert sorted(r[1]["memory"]["corroboration"] for r in results) == list(range(N))
    _s, b = api.get("/v1/banks/race/memories?include_superseded=true")
    assert b["total"] == 1 and len(b["memories"]) == 1
    m = b["memories"][0]
    assert (m["corroboration"], m["revision"]) == (N - 1, N - 1)
    row = _bank()
    assert row.clock.total == seq0 + N and row.memories == 1
    _s, h = api.get(f"/v1/banks/race/memories/{m['id']}/history")
    assert [r["revision"] for r in h["revisions"]] == list(range(N))


def test_twenty_saves_of_twenty_texts(api):
    api.post("/v1/banks", {"name": "race"})
    seq0 = _bank().clock.total
    _clock0 = _bank().clock.positions
    results = _run_all([_save(f"distinct concurrent text number {i}") for i in range(N)])
    assert all(r[0] == 201 for r in results)
    assert len({r[1]["memory"]["id"] for r in results}) == N
    _s, b = api.get("/v1/banks/race/memories?limit=100")
    assert b["total"] == N and len(b["memories"]) == N
    row = _bank()
    assert row.clock.total == seq0 + N and row.memories == N and row.records == N
    from chalicelib.core.store import iter_revisions, split_seq
    before = dict(enumerate(_clock0))
    revs = [split_seq(s) for s, _, _ in iter_revisions(row.incarnation, 0)]
    # every lane's positions past where it stood are consecutive, and there are N of them
    new = [(lane, at) for lane, at in revs if at > before.get(lane, 0)]
    assert len(new) == N
    for lane in {lane for lane, _ in new}:
        ats = [at for la, at in new if la == lane]
        assert ats == list(range(before.get(lane, 0) + 1, row.clock.positions[lane] + 1))


def test_bank_created_by_racing_first_saves(api):
    results = _run_all([_save(f"first use text {i}") for i in range(10)])
    assert all(r[0] == 201 for r in results)
    row = _bank()
    assert row.clock.total == 10 and row.memories == 10


def test_twenty_concurrent_rule_puts_keep_the_rule_count(api):
    """20 PUTs of distinct rules at once: the bank's ``rules`` count is 20, as listed (each PUT
    recounted and the last writer won: 19 were counted while 20 were listed)."""
    from chalicelib.banks.rules import set_rule
    api.post("/v1/banks", {"name": "race"})
    _run_all([lambda i=i: set_rule("default", "race", f"rule-{i}", f"Rule number {i}.") for i in range(N)])
    assert len(api.get("/v1/banks/race/rules")[1]["rules"]) == N
    assert int(_bank().row.rules) == N
    assert api.get("/v1/banks/race")[1]["bank"]["rules"] == N


def test_a_stale_rule_count_never_lands_last(api, monkeypatch):
    """The race made deterministic: writer A lists the rules before B's rule lands, B counts and
    finishes, then A writes. A's stale count must not be the one that stays."""
    from chalicelib.banks import rules
    from chalicelib.storage import blobs
    api.put("/v1/banks/race/rules/first", {"content": "One."})
    real = blobs.list_objects
    a_listed, b_done = threading.Event(), threading.Event()

    def listing(prefix):
        out = list(real(prefix))
        if threading.current_thread().name == "writer-a" and not a_listed.is_set():
            a_listed.set()
            b_done.wait(10)  # A holds its stale listing until B has finished
        return out

    monkeypatch.setattr(blobs, "list_objects", listing)
    a = threading.Thread(target=rules.refresh_rule_count, args=("default", "race"), name="writer-a")
    a.start()
    assert a_listed.wait(10)
    rules.set_rule("default", "race", "second", "Two.")
    b_done.set()
    a.join(10)
    assert int(_bank().row.rules) == 2
