"""``GET /v1/doctor``: an end-to-end self-test (the bank worker's doctor).

``{ok, checks: [{name, ok, required, detail, ms}]}``; ``ok`` is true only when every REQUIRED
check passed. Required: ``configuration`` (the ``CAIRN_*`` settings and the team-memory caps
validate; the detail names each bad variable), ``dynamodb_writable`` (put, read back, delete one extraction-table row),
``s3_writable`` (put, read back, delete one object), ``round_trip`` (save the probe memory in the
system org's ``doctor-probe`` bank, which no token can reach, and recall it: a run reinforces the
one probe, so doctor leaves nothing a user can see). Advisory (reported, never failing ``ok``): ``tuning`` (the
configured memory tuning validates; when it does not, the last good one is running and the detail
names the file or variable, the key and the problem), ``queue_reachable`` and ``model_reachable``,
each bounded by a 3 s timeout, and ``extraction_quota`` (the caller's org: its model tokens of the
UTC day against its limit; failing while jobs are deferred to the next day, naming how many and
until when). A degraded state is named, never a bare
"up".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TypedDict

import boto3
from botocore.config import Config

from .settings import get_settings
from .storage import blobs, probe

PROBE_TIMEOUT_S = 3.0
PROBE_ORG = "_system"  # no token belongs to it: nothing the doctor writes is visible to a user
PROBE_BANK = "doctor-probe"
PROBE_TEXT = "Cairn doctor probe: the round trip works."
PROBE_QUERY = "doctor probe round trip"


class Check(TypedDict):
    """One check's result: ``detail`` says what was done or what failed; ``ms`` its duration."""

    name: str
    ok: bool
    required: bool
    detail: str
    ms: float


class DoctorReport(TypedDict):
    """``{ok, checks}``: ``ok`` is true only when every required check passed."""

    ok: bool
    checks: list[Check]


def _check(name: str, required: bool, fn: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail, ok = fn(), True
    except Exception as exc:  # noqa: BLE001 - a failed check is reported, not raised
        detail, ok = f"{type(exc).__name__}: {str(exc)[:500]}", False
    return {"name": name, "ok": ok, "required": required, "detail": detail,
            "ms": round((time.perf_counter() - started) * 1000, 1)}


def _configuration() -> str:
    from .team.limits import get_limits
    get_settings()
    get_limits()
    return "CAIRN_* settings and KEYSTONE_CONTEXT_MEMORY_* caps are valid"


def _tuning() -> str:
    from .tuning import tuning_problem
    problem = tuning_problem()
    if problem is not None:
        raise RuntimeError(f"{problem}; the last good tuning is running")
    return "the configured memory tuning is valid and running"


def _dynamodb() -> str:
    return f"put, get and delete on {probe.dynamodb_round_trip()}"


def _s3() -> str:
    key = f".doctor/{uuid.uuid4().hex}"
    blobs.put_bytes(key, b"probe")
    if blobs.get_bytes(key) != b"probe":
        raise RuntimeError("the object read back differs")
    blobs.delete(key)
    return f"put, get and delete in bucket {blobs.bucket()}"


def _round_trip(actor: str) -> Callable[[], str]:
    def run() -> str:
        from .banks import service
        from .banks.records import SaveRequest
        from .search.recall import recall
        # One fixed probe in the system org: a run reinforces it (corroboration +1) instead of
        # leaving a bank, a trash entry or a memory anywhere a user can see.
        probe = service.save_memory(PROBE_ORG, PROBE_BANK, SaveRequest(text=PROBE_TEXT), actor=actor).memory
        saved = probe.public() if probe is not None else {}
        result = recall(PROBE_ORG, [PROBE_BANK], PROBE_QUERY, limit=5)
        hit = next((h.memory for h in result.hits if h.memory.id == saved["id"]), None)
        if hit is None:
            raise RuntimeError(f"the saved memory was not found by recall ({result.retrieval})")
        if hit.corroboration != saved["corroboration"]:
            raise RuntimeError("recall served a stale copy of the saved memory")
        return f"saved (corroboration {saved['corroboration']}) and found by recall ({result.retrieval})"

    return run


def _queue() -> str:
    url = get_settings().queue_url
    if not url:
        return "no queue configured: extraction runs inline"
    client = boto3.client("sqs", region_name=get_settings().region,
                          config=Config(connect_timeout=PROBE_TIMEOUT_S, read_timeout=PROBE_TIMEOUT_S,
                                        retries={"max_attempts": 1}))
    attrs = client.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    return f"reachable, ~{attrs.get('ApproximateNumberOfMessages', '?')} messages waiting"


def _model() -> str:
    from .extraction.models import get_extractor
    extractor = get_extractor()
    ok, detail = extractor.probe(PROBE_TIMEOUT_S)
    if not ok:
        raise RuntimeError(f"{extractor.name}: {detail}")
    return f"{extractor.name}: {detail}"


def _extraction_quota(org_id: str) -> Callable[[], str]:
    def run() -> str:
        from .extraction import store as x_store
        from .usage import extraction as usage_x
        over, used, top = usage_x.over_quota(org_id)
        day = f"{used} of {top} model tokens used today" if top else "no daily limit"
        pointers = usage_x.org_pointers(org_id)
        waiting = sum(len(x_store.parked(org_id, p.session_key.partition("#")[2])) for p in pointers)
        if waiting:
            until = min(p.day for p in pointers)
            raise RuntimeError(f"{waiting} extraction jobs of {len(pointers)} sessions deferred until "
                               f"{until[:4]}-{until[4:6]}-{until[6:]} (UTC); {day}")
        return f"no extraction job deferred; {day}" + (" (over: the next turns will be deferred)" if over else "")

    return run


def run_checks(actor: str, org_id: str | None = None) -> DoctorReport:
    """Run every check (see the module doc) and return ``{ok, checks}``; with ``org_id``, also the
    org's ``extraction_quota`` (advisory: fails while jobs are deferred past its daily quota)."""
    checks = [
        _check("configuration", True, _configuration),
        _check("tuning", False, _tuning),
        _check("dynamodb_writable", True, _dynamodb),
        _check("s3_writable", True, _s3),
        _check("round_trip", True, _round_trip(actor)),
        _check("queue_reachable", False, _queue),
        _check("model_reachable", False, _model),
        *([_check("extraction_quota", False, _extraction_quota(org_id))] if org_id is not None else []),
    ]
    return {"ok": all(c["ok"] for c in checks if c["required"]), "checks": checks}
