"""``GET /v1/doctor`` and ``cli doctor``: an end-to-end self-test (the bank worker's doctor).

``{ok, checks: [{name, ok, required, detail, ms}]}``; ``ok`` is true only when every REQUIRED
check passed. Required: ``configuration`` (the ``CAIRN_*`` settings and the team-memory caps
validate; the detail names each bad variable), ``dynamodb_writable`` (put, read back, delete one extraction-table row),
``s3_writable`` (put, read back, delete one object), ``round_trip`` (save the caller org's probe
memory in a bank of the system org that no token can reach, ``probe-<digest of the org>``, and
recall it: a run reinforces that org's one probe, so doctor leaves nothing a user can see, and
two orgs' doctors never meet). Advisory (reported, never failing ``ok``): ``tuning`` (the
configured memory tuning validates; when it does not, the last good one is running and the detail
names the file or variable, the key and the problem), ``queue_reachable`` and ``model_reachable``,
each bounded by a 3 s timeout, and ``extraction_quota`` (the caller's org: its model tokens of the
UTC day against its limit; failing while jobs are deferred to the next day, naming how many and
until when). A degraded state is named, never a bare
"up".

The shared infrastructure (table, bucket, queue and model endpoint names, the account id in
them, the queue's depth, a backend's error text) is the operator's: ``cli doctor``, run with the
deployment's credentials, shows it (``operator=True``). An org admin's ``GET /v1/doctor`` gets the
same checks with details that name none of it: what was done, or the error's code.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from typing import TypedDict

import boto3
from botocore.config import Config

from .errors import ConfigError
from .settings import get_settings
from .storage import blobs, probe

PROBE_TIMEOUT_S = 3.0
PROBE_ORG = "_system"  # no token belongs to it: nothing the doctor writes is visible to a user
PROBE_BANK = "doctor-probe"  # the operator's probe (cli doctor names no org)
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


class Failed(Exception):
    """A check's failure: its message for the operator, ``public`` for an org admin."""

    def __init__(self, detail: str, public: str | None = None) -> None:
        super().__init__(detail)
        self.public = detail if public is None else public


# what an org admin reads of a check that passed and whose detail names shared infrastructure
_PUBLIC_OK = {"dynamodb_writable": "put, get and delete of a probe row", "s3_writable":
              "put, get and delete of a probe object", "queue_reachable": "reachable",
              "model_reachable": "the extraction backend is reachable"}


def _reason(exc: Exception) -> str:
    """An error's code (a backend's, e.g. ``NoSuchBucket``) or type: never its text."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
    return str(code) if code else type(exc).__name__


def _check(name: str, required: bool, fn: Callable[[], str], operator: bool) -> Check:
    started = time.perf_counter()
    try:
        detail, ok = fn(), True
        if not operator:
            detail = _PUBLIC_OK.get(name, detail)
    except Failed as exc:
        detail, ok = (str(exc) if operator else exc.public), False
    except ConfigError as exc:  # our own message: the variable and the problem, never a value or resource
        detail, ok = str(exc), False
    except Exception as exc:  # noqa: BLE001 - a failed check is reported, not raised
        ok = False
        detail = (f"{type(exc).__name__}: {str(exc)[:500]}" if operator
                  else f"failed ({_reason(exc)}); the operator's cli doctor names the cause")
    return {"name": name, "ok": ok, "required": required, "detail": detail,
            "ms": round((time.perf_counter() - started) * 1000, 1)}


def probe_bank(org_id: str | None) -> str:
    """The system org's bank holding ``org_id``'s doctor probe (``PROBE_BANK`` for none)."""
    return PROBE_BANK if org_id is None else "probe-" + hashlib.sha256(org_id.encode()).hexdigest()[:24]


def _configuration() -> str:
    from .team.limits import get_limits
    get_settings()
    get_limits()
    return "CAIRN_* settings and KEYSTONE_CONTEXT_MEMORY_* caps are valid"


def _tuning() -> str:
    from .tuning import current_tuning, tuning_problem
    try:
        current_tuning()  # read now: what a cold container would run, whatever this one cached
    except ConfigError as exc:
        raise Failed(f"{exc}; the last good tuning is running") from None
    if tuning_problem() is not None:
        raise Failed("the configured memory tuning is valid again, but the last good one runs until a reload "
                     "(POST /v1/reload)")
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


def _round_trip(actor: str, org_id: str | None) -> Callable[[], str]:
    def run() -> str:
        from .banks import service
        from .banks.records import SaveRequest
        from .search.recall import recall
        # One fixed probe per org in the system org: a run reinforces it (corroboration +1) instead
        # of leaving a bank, a trash entry or a memory anywhere a user can see.
        bank = probe_bank(org_id)
        probe = service.save_memory(PROBE_ORG, bank, SaveRequest(text=PROBE_TEXT), actor=actor).memory
        saved = probe.public() if probe is not None else {}
        result = recall(PROBE_ORG, [bank], PROBE_QUERY, limit=5)
        hit = next((h.memory for h in result.hits if h.memory.id == saved["id"]), None)
        if hit is None:
            raise Failed(f"the saved memory was not found by recall ({result.retrieval})")
        # the org's own doctor running at the same moment may have reinforced it again
        if hit.corroboration < saved["corroboration"]:
            raise Failed("recall served a stale copy of the saved memory")
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
        raise Failed(f"{extractor.name}: {detail}", f"{extractor.name}: unreachable")
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
            raise Failed(f"{waiting} extraction jobs of {len(pointers)} sessions deferred until "
                               f"{until[:4]}-{until[4:6]}-{until[6:]} (UTC); {day}")
        return f"no extraction job deferred; {day}" + (" (over: the next turns will be deferred)" if over else "")

    return run


def run_checks(actor: str, org_id: str | None = None, *, operator: bool = False) -> DoctorReport:
    """Run every check (see the module doc) and return ``{ok, checks}``; with ``org_id``, the
    round trip uses that org's probe and the org's ``extraction_quota`` is added (advisory: fails
    while jobs are deferred past its daily quota). ``operator``: details name the shared
    infrastructure (``cli doctor``); otherwise they never do (``GET /v1/doctor``)."""
    def check(name: str, required: bool, fn: Callable[[], str]) -> Check:
        return _check(name, required, fn, operator)
    checks = [
        check("configuration", True, _configuration),
        check("tuning", False, _tuning),
        check("dynamodb_writable", True, _dynamodb),
        check("s3_writable", True, _s3),
        check("round_trip", True, _round_trip(actor, org_id)),
        check("queue_reachable", False, _queue),
        check("model_reachable", False, _model),
        *([check("extraction_quota", False, _extraction_quota(org_id))] if org_id is not None else []),
    ]
    return {"ok": all(c["ok"] for c in checks if c["required"]), "checks": checks}
