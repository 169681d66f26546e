"""In-process backend for the benchmark: moto with the template's resources (like tests/conftest)."""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

STACK = "cairn-bench"


def fake_aws_env() -> None:
    """Fake credentials and no endpoint overrides, so botocore talks to in-process moto."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        os.environ.pop(var, None)


@contextlib.contextmanager
def backend() -> Iterator[dict[str, str]]:
    """A fresh moto backend with every template resource; the CAIRN_* names set in os.environ."""
    fake_aws_env()
    from moto import mock_aws

    from infra.local import motolock
    from infra.local.resources import create_resources
    motolock.install()
    with mock_aws():
        names = create_resources(STACK)
        old = {k: os.environ.get(k) for k in names}
        os.environ.update(names)
        os.environ["CAIRN_STAGE"] = "bench"
        try:
            yield names
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class CallCounter:
    """Counts AWS API calls per service/operation through botocore's event hooks
    (``before-call.*.*`` on every client session boto3 and pynamodb create), and the items each
    Query or Scan returned (``after-call.*.*``, as ``<service>:<operation>:items``). Safe to
    count from several threads at once (a ``Counter`` increment is not atomic)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.on = False
        self.lock = threading.Lock()

    def _hook(self, model=None, **_kw) -> None:
        if self.on and model is not None:
            with self.lock:
                self.calls[f"{model.service_model.service_name}:{model.name}"] += 1

    def _after(self, model=None, parsed=None, **_kw) -> None:
        # items a Query or Scan returned: the read cost DynamoDB bills for (read units scale with it)
        if self.on and model is not None and isinstance(parsed, dict) and "Count" in parsed:
            with self.lock:
                self.calls[f"{model.service_model.service_name}:{model.name}:items"] += int(parsed["Count"])

    def install(self) -> None:
        """Register the hook on every botocore session created from now on (boto3's and
        pynamodb's each make their own); call before any client exists."""
        import botocore.session

        original = botocore.session.Session.__init__
        hook, after = self._hook, self._after

        def init(session, *args, **kwargs):
            original(session, *args, **kwargs)
            session.register("before-call.*.*", hook)
            session.register("after-call.*.*", after)

        botocore.session.Session.__init__ = init

    @contextlib.contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.calls = Counter()
        self.on = True
        try:
            yield self.calls
        finally:
            self.on = False


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values`` (nearest-rank)."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fast_moto_transactions() -> None:
    """Bench only: stop moto from deep-copying whole tables for every item of a transaction
    (its rollback backup, O(table size) per item). Safe here because the
    benchmark writes from one thread and no transaction may fail: a cancelled transaction
    raises ``RuntimeError`` and ends the run, since nothing could roll it back."""
    import copy as _copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    class _Copy:
        @staticmethod
        def deepcopy(obj, *args, **kwargs):
            if isinstance(obj, Table):
                return obj
            return _copy.deepcopy(obj, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(_copy, name)

    # setattr: moto's module global and method are replaced on purpose (mypy forbids assigning them)
    setattr(models, "copy", _Copy())  # noqa: B010 - see the comment above
    original = models.DynamoDBBackend.transact_write_items

    def guarded(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            raise RuntimeError(f"a transaction failed under the no-backup bench patch: {exc}") from exc

    setattr(models.DynamoDBBackend, "transact_write_items", guarded)  # noqa: B010 - see above


class Timer:
    """Sums the milliseconds spent in the functions it wraps (moto's share of a step)."""

    def __init__(self) -> None:
        self.ms = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*a: Any, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.ms += (time.perf_counter() - started) * 1000
        return timed_call
