"""Concurrent writers on the local stack (chalice local's threads + moto's
server, serialized only by motolock in the launcher)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from chalicelib.fingerprint import fingerprint

from .conftest import Http

# distinct words, not numbers: texts differing only by a number are a detected conflict (a link
# revision each, which moves the bank's sequence)
WORDS = ["amber", "basil", "coral", "dune", "ember", "fjord", "grove", "heath", "iris", "jade",
         "kelp", "lotus", "maple", "nectar", "onyx", "pearl", "quartz", "reed", "sage", "thyme"]


def _parallel(n, fn):
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(fn, range(n)))


def test_20_concurrent_saves_of_one_text_corroborate(stack):
    bank = "conc-one-" + uuid.uuid4().hex[:8]
    text = "Concurrent saves land on one memory"

    def save(_):
        return Http(stack.base_url, stack.token).post(f"/v1/banks/{bank}/memories", json={"text": text})

    responses = _parallel(20, save)
    assert sorted(r.status_code for r in responses) == [200] * 19 + [201], [r.text for r in responses]
    listed = Http(stack.base_url, stack.token).get(f"/v1/banks/{bank}/memories").json()
    assert listed["total"] == 1
    assert listed["memories"][0]["id"] == fingerprint(text)
    assert listed["memories"][0]["corroboration"] == 19


def test_20_concurrent_saves_of_20_texts_advance_seq_by_20(stack):
    bank = "conc-many-" + uuid.uuid4().hex[:8]
    http = Http(stack.base_url, stack.token)
    assert http.post("/v1/banks", json={"name": bank}).status_code == 201
    before = stack.bank_seq(bank)

    def save(i):
        return Http(stack.base_url, stack.token).post(f"/v1/banks/{bank}/memories",
                                                      json={"text": f"Distinct fact {WORDS[i]} for the race"})

    responses = _parallel(20, save)
    assert [r.status_code for r in responses] == [201] * 20, [r.text for r in responses]
    listed = http.get(f"/v1/banks/{bank}/memories", params={"limit": 100}).json()
    assert listed["total"] == 20 and len(listed["memories"]) == 20
    assert stack.bank_seq(bank) == before + 20


def test_idempotency_key_retry_does_not_reinforce(stack):
    bank = "idem-" + uuid.uuid4().hex[:8]
    http = Http(stack.base_url, stack.token)
    body = {"text": "Retries must not reinforce a memory"}
    key = {"Idempotency-Key": uuid.uuid4().hex}
    first = http.post(f"/v1/banks/{bank}/memories", json=body, headers=key)
    assert first.status_code == 201
    retries = _parallel(5, lambda _: Http(stack.base_url, stack.token).post(
        f"/v1/banks/{bank}/memories", json=body, headers=key))
    assert all(r.status_code == 201 and r.json() == first.json() for r in retries), [r.text for r in retries]
    mem = http.get(f"/v1/banks/{bank}/memories/{fingerprint(body['text'])}").json()["memory"]
    assert mem["corroboration"] == 0 and mem["revision"] == 0
    # Without the key, the same save reinforces: the check above could fail.
    assert http.post(f"/v1/banks/{bank}/memories", json=body).json()["memory"]["corroboration"] == 1
