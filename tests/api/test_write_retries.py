"""Retries that converge: a lost race is retried within ``Settings.write_retries`` attempts; a
write that loses every one answers 503 ``write_contention`` with Retry-After and writes nothing;
both are counted in the ``write`` metric."""

import json

import pytest


def _metric_lines(out: str) -> list[dict]:
    return [d for d in (json.loads(x) for x in out.splitlines() if x.startswith("{")) if d.get("Event") == "write"]


def _losing_attempt(tries: list[int]):
    """An attempt whose condition always fails (the bank row's seq is never -1): every commit is
    cancelled with ConditionalCheckFailed, as when a concurrent writer keeps winning."""
    from chalicelib.core.store import get_bank_row
    from chalicelib.storage.tables import BankModel

    def attempt(tx):
        tries.append(1)
        row = get_bank_row("default", "busy")
        tx.update(row, actions=[BankModel.seq.set(999)], condition=BankModel.seq == -1)
    return attempt


def test_a_write_that_loses_every_attempt_is_a_503_and_writes_nothing(api, capsys):
    from chalicelib.api.http import error_response
    from chalicelib.core.store import get_bank_row
    from chalicelib.errors import WriteContended
    from chalicelib.storage.txn import run_transaction

    assert api.post("/v1/banks/busy/memories", {"text": "A memory in a busy bank"})[0] == 201
    before = get_bank_row("default", "busy")
    capsys.readouterr()
    tries: list[int] = []
    with pytest.raises(WriteContended) as exc:
        run_transaction(_losing_attempt(tries), retries=4)
    assert len(tries) == 4
    after = get_bank_row("default", "busy")
    assert (after.seq, after.memories, after.updated_at) == (before.seq, before.memories, before.updated_at)
    response = error_response(exc.value)
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert json.loads(response.body)["code"] == "write_contention"
    (line,) = _metric_lines(capsys.readouterr().out)
    assert (line["WriteRetries"], line["WriteContended"]) == (3, 1)


def test_a_write_that_wins_after_retries_counts_them(aws, capsys):
    from chalicelib.storage.tables import TokenModel
    from chalicelib.storage.txn import Retry, run_transaction

    tries: list[int] = []

    def attempt(tx):
        tries.append(1)
        if len(tries) < 3:
            raise Retry
        tx.save(TokenModel(token_id="tok-retry", org_id="default", kind="api_key", digest="x", created_at=1),
                condition=TokenModel.token_id.does_not_exist())
        return "done"

    capsys.readouterr()
    assert run_transaction(attempt, retries=5) == "done" and len(tries) == 3
    (line,) = _metric_lines(capsys.readouterr().out)
    assert (line["WriteRetries"], line["WriteContended"]) == (2, 0)


def test_a_write_that_commits_first_time_emits_no_write_metric(api, capsys):
    capsys.readouterr()
    assert api.post("/v1/banks/quiet/memories", {"text": "A memory in a quiet bank"})[0] == 201
    assert _metric_lines(capsys.readouterr().out) == []
