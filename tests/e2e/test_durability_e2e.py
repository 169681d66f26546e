"""An acknowledged write survives kill -9 of the whole local stack: 200 writes (memory saves in
DynamoDB, rule PUTs in S3 and DynamoDB) from 4 concurrent clients, SIGKILL to the launcher's
process group, nothing left listening, a restart on the same ports finds all 200."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

from .conftest import Http
from .harness import LocalStack

TOKEN = "cairn_e2e_durability_token_0123456789"
CLIENTS, WRITES_PER_CLIENT = 4, 50
RESTART_READY_S = 30
RATE_LIMITED_TRIES = 60


def _refused(port: int, within_s: float = 10.0) -> bool:
    """True once a connect to 127.0.0.1:port is refused (the API child may need a moment to
    get its parent-death signal)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
        except ConnectionRefusedError:
            return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def _unlimited(send, path: str, **kw):
    """``send(path, **kw)``'s response, sent again after the ``retry_after_s`` of each 429 (the
    token's rate limit: 200 writes outrun its burst on a fast machine; a refused request wrote
    nothing)."""
    for _attempt in range(RATE_LIMITED_TRIES):
        r = send(path, **kw)
        if r.status_code != 429:
            return r
        time.sleep(r.json()["details"]["retry_after_s"])
    raise AssertionError(f"still rate limited after {RATE_LIMITED_TRIES} tries: {r.text}")


def _client(stack: LocalStack, c: int) -> list[tuple[str, str, str]]:
    """One client's acknowledged writes: ``(kind, bank, memory id or rule name)``."""
    http = Http(stack.base_url, stack.token)
    bank, acked = f"durable-{c}", []
    for i in range(WRITES_PER_CLIENT):
        if i % 5 == 4:
            r = _unlimited(http.put, f"/v1/banks/{bank}/rules/rule-{i}", json={"content": f"Rule {i} of client {c}."})
            assert r.status_code == 200, r.text
            acked.append(("rule", bank, f"rule-{i}"))
        else:
            r = _unlimited(http.post, f"/v1/banks/{bank}/memories",
                           json={"text": f"Client {c} acknowledged fact number {i}"})
            assert r.status_code == 201, r.text
            acked.append(("memory", bank, r.json()["memory"]["id"]))
    return acked


def test_acknowledged_writes_survive_kill_9_of_the_process_group(tmp_path):
    s = LocalStack(tmp_path / "state", TOKEN, tmp_path / "stack.log").start()
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            acked = [w for part in pool.map(lambda c: _client(s, c), range(CLIENTS)) for w in part]
    except BaseException:
        s.stop()
        raise
    assert len(acked) == CLIENTS * WRITES_PER_CLIENT
    ports = (s.port, s.moto_port)

    s.kill_group()  # right after the last acknowledgement: no clean stop, no compaction
    assert _refused(ports[0]) and _refused(ports[1]), "something still listens after kill -9 of the group"

    s.start(ports=ports, timeout_s=RESTART_READY_S)
    try:
        http = Http(s.base_url, s.token)
        found = set()
        for c in range(CLIENTS):
            bank = f"durable-{c}"
            listed = http.get(f"/v1/banks/{bank}/memories", params={"limit": 100}).json()
            found |= {("memory", bank, m["id"]) for m in listed["memories"]}
            found |= {("rule", bank, r["name"]) for r in http.get(f"/v1/banks/{bank}/rules").json()["rules"]}
        missing = set(acked) - found
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {sorted(missing)[:5]}"
    finally:
        assert s.stop() == 0
