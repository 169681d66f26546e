"""Observability: one JSON request line per request with request id, principal
id, route, status and latency; EMF metric lines; never memory text or tokens in either."""

from __future__ import annotations

import json
import logging

import pytest

SECRET_TEXT = "Remember that the vault combination is zebra-quartz-1789."


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def logs():
    handler = Lines()
    root = logging.getLogger("cairn")
    root.addHandler(handler)
    yield handler.lines
    root.removeHandler(handler)


def test_request_lines_and_metrics_never_carry_text_or_tokens(api, token, logs, capsys, monkeypatch):
    monkeypatch.setenv("CAIRN_QUEUE_URL", "")
    monkeypatch.setenv("CAIRN_EXTRACTOR", "offline")
    status, _ = api.post("/v1/hooks/turn-completed", {
        "session_id": "obs", "turn_id": "t1", "metadata": {"memory_bank": "work"},
        "messages": [{"role": "user", "content": SECRET_TEXT}]})
    assert status == 202
    status, body = api.get("/v1/banks/work/memories")
    saved = body["memories"][0]["text"]
    assert "zebra-quartz" in saved
    resp = api.client.http.get("/v1/banks/work/memories", headers={"Authorization": f"Bearer {token}"})
    request_id = resp.headers["X-Request-Id"]
    out = capsys.readouterr()
    everything = "\n".join(logs) + out.out + out.err
    assert "zebra-quartz" not in everything and token not in everything
    requests = [json.loads(line) for line in logs if line.startswith('{"msg": "request"')]
    assert len(requests) == 3, logs[:5]
    last = requests[-1]
    assert last["request_id"] == request_id
    assert last["route"] == "GET /v1/banks/{bank}/memories" and last["status"] == 200
    assert last["principal_id"].startswith("tok_") and isinstance(last["latency_ms"], float)
    assert list(last["phases"]) == ["token", "render", "usage"]  # where the time went (Server-Timing's)
    emf = [json.loads(line) for line in out.out.splitlines() if line.startswith('{"_aws"')]
    extraction = [m for m in emf if m["Event"] == "extraction"]
    assert extraction and extraction[0]["ExtractionSaved"] == 1 and extraction[0]["outcome"] == "applied"
