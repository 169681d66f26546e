"""Contract fuzzing: schemathesis generates requests from openapi.json and sends them to a local
stack of their own, checking every answer against the document.

Checks: no 5xx, every status and media type and header declared, every body matching its schema,
invalid input rejected with a 4xx. ``use_after_free`` is not run: a tombstoned memory stays
readable by design. The seed is fixed and every operation that takes input gets at least
``EXAMPLES`` generated requests, counted from schemathesis's own event report (a time budget
cannot cut them silently: the run has none). An operation with no input (``GET /v1/health``) has
one request to make.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .harness import ROOT, LocalStack

TOKEN = "cairn_fuzz_dev_token_0123456789abcdef"
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_headers_conformance", "response_schema_conformance", "negative_data_rejection")
EXAMPLES = 50
SEED = 20261201
WALL_S = 900  # a hang fails the test long before CI's own limit


def _cases_per_operation(events: Path) -> Counter[str]:
    """Requests schemathesis generated and checked, per operation (``"GET /v1/banks"``)."""
    counts: Counter[str] = Counter()
    with events.open(encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if finished and finished.get("recorder"):
                counts[finished["recorder"]["label"]] += len(finished["recorder"].get("cases") or {})
    return counts


def _takes_input(op: dict) -> bool:
    return bool(op.get("parameters") or op.get("requestBody"))


@pytest.fixture(scope="module")
def fuzz_stack(tmp_path_factory):
    base = tmp_path_factory.mktemp("cairn-fuzz")
    s = LocalStack(base / "state", TOKEN, base / "stack.log").start("--no-persist")
    yield s
    assert s.stop() == 0, (base / "stack.log").read_text()[-3000:]


def test_schemathesis_finds_nothing(fuzz_stack, tmp_path):
    schemathesis = Path(sys.executable).with_name("schemathesis")
    reports = tmp_path / "reports"
    cmd = [str(schemathesis), "--config-file", str(ROOT / "schemathesis.toml"),
           # the committed document (test_openapi proves the served one equals it): loaded from its
           # URL, schemathesis leaves that one operation out
           "run", str(ROOT / "openapi.json"), "--url", fuzz_stack.base_url,
           "-H", f"Authorization: Bearer {TOKEN}", "--checks", ",".join(CHECKS),
           "--phases", "examples,fuzzing", "-n", str(EXAMPLES), "--seed", str(SEED),
           "--continue-on-failure", "--no-shrink", "--report", "json,ndjson", "--report-dir", str(reports),
           # no example database: the seed alone decides the run (no replay of an earlier run's
           # examples), and keeping Hypothesis's best-examples front costs a third of the run
           "--generation-database", "none", "--request-timeout", "60"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=WALL_S)
    report = json.loads(next(reports.glob("json-*.json")).read_text())
    counts = _cases_per_operation(next(reports.glob("ndjson-*.ndjson")))
    # artifacts/, not build/: `make package` may empty build/ while the suite runs (CI runs both at once)
    (ROOT / "artifacts").mkdir(exist_ok=True)
    summary = {"seed": SEED, "running_time_s": round(report["running_time"], 1),
               "test_cases": report["test_cases"], "per_operation": dict(sorted(counts.items()))}
    (ROOT / "artifacts" / "fuzz-summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    failures = done.stdout.split("= FAILURES =", 1)[-1].split("= WARNINGS =", 1)[0]
    assert report["failures"] == [] and report["errors"] == [], failures[-12000:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    doc = json.loads((ROOT / "openapi.json").read_text())
    operations = {f"{m.upper()} {p}": op for p, ops in doc["paths"].items() for m, op in ops.items()}
    assert set(counts) == set(operations), "every operation is fuzzed"
    thin = {name: counts[name] for name, op in operations.items() if _takes_input(op) and counts[name] < EXAMPLES}
    assert thin == {}, f"operations with fewer than {EXAMPLES} generated requests"
