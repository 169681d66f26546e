"""The contention benchmark's pure helpers: one writer count's summary row, and the DynamoDB
operations read back from a moto recording."""

from __future__ import annotations

import json
from collections import Counter

from bench.contention import Level, recorded_operations, summary


def test_summary_divides_calls_by_successful_saves_and_keeps_failures_apart():
    level = Level(8, latencies_ms=[float(ms) for ms in range(1, 101)], failed=Counter({"503": 3}), seconds=4.0)
    calls = Counter({"TransactWriteItems": 150, "GetItem": 400, "Query": 100, "PutItem": 7})
    row = summary(level, calls)
    assert (row["writers"], row["saves"], row["saves_per_s"]) == (8, 100, 25.0)
    assert (row["p50_ms"], row["p95_ms"], row["p99_ms"]) == (50.5, 95.0, 99.0)
    assert row["transact_per_save"] == 1.5
    assert row["reads_per_save"] == {"GetItem": 4.0, "BatchGetItem": 0.0, "Query": 1.0, "total": 5.0}
    assert row["failed"] == {"503": 3}


def test_summary_without_a_successful_save_has_no_per_save_figures():
    row = summary(Level(32, failed=Counter({"503": 5}), seconds=2.0), Counter({"TransactWriteItems": 40}))
    assert (row["saves"], row["saves_per_s"], row["transact_per_save"]) == (0, 0.0, None)
    assert row["reads_per_save"]["total"] is None and row["p50_ms"] is None


def test_recorded_operations_counts_dynamodb_targets_only_even_when_lines_interleave():
    def line(target: str | None) -> str:
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        if target:
            headers["X-Amz-Target"] = target
        return json.dumps({"headers": headers, "method": "POST", "url": "http://127.0.0.1/", "body": "e30="})

    whole = [line("DynamoDB_20120810.GetItem"), line("DynamoDB_20120810.TransactWriteItems"), line(None),
             line("AmazonSQS.SendMessage"), line("DynamoDB_20120810.GetItem")]
    torn = whole[0][:40] + whole[1] + "\n" + whole[0][40:]  # a long entry flushed in two pieces around another
    recording = "\n".join([torn, *whole[2:]]) + "\n"
    assert recorded_operations(recording) == Counter({"GetItem": 2, "TransactWriteItems": 1})
