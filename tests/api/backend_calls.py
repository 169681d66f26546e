"""Watch or steer the AWS calls the code under test makes, at botocore's one entry point (every
client's ``_make_api_call``), never at Cairn's own functions: ``recorded()`` lists them,
``intercepted(fn)`` lets ``fn(call, client, operation, params)`` decide each (``call`` makes the
real one)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import botocore.client

Call = Callable[[Any, str, dict], Any]


@contextlib.contextmanager
def intercepted(fn: Callable[[Call, Any, str, dict], Any]) -> Iterator[None]:
    """Inside the block every AWS call goes through ``fn``."""
    real = botocore.client.BaseClient._make_api_call

    def hook(self, operation, params):
        return fn(real, self, operation, params)

    botocore.client.BaseClient._make_api_call = hook
    try:
        yield
    finally:
        botocore.client.BaseClient._make_api_call = real


@contextlib.contextmanager
def recorded() -> Iterator[list[tuple[str, str, dict]]]:
    """Every AWS call made inside the block: ``[(service, operation, params)]``."""
    seen: list[tuple[str, str, dict]] = []

    def record(call, client, operation, params):
        seen.append((client.meta.service_model.service_name, operation, params))
        return call(client, operation, params)

    with intercepted(record):
        yield seen
