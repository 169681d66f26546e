"""Unit tests: pure modules only, so no AWS SDK, no moto and no fake storage of our own.

While a module of tests/unit is imported and while its tests run, importing boto3, botocore or
moto raises ImportError (``ForbidAws``), directly or through the module under test. When this
process already loaded them (the whole suite, after tests/api), a unit module's own
``import boto3`` still fails at collection, and ``test_layers.py`` imports every unit module in a
fresh interpreter to catch what comes in through an already-loaded module.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

FORBIDDEN = ("boto3", "botocore", "moto")
UNIT_DIR = Path(__file__).resolve().parent


def forbidden(name: str) -> bool:
    """True for a module of the AWS SDK or moto (``"botocore.config"``, ``"moto"``)."""
    return name.split(".", 1)[0] in FORBIDDEN


class ForbidAws(importlib.abc.MetaPathFinder):
    """A meta path finder that refuses every forbidden module (ImportError naming it)."""

    def find_spec(self, fullname, path=None, target=None):
        if forbidden(fullname):
            raise ImportError(f"tests/unit tests pure modules: importing {fullname!r} is not allowed here "
                              "(a test that needs AWS or moto belongs in tests/api)")
        return None


@contextlib.contextmanager
def no_aws(hide_loaded: bool = False) -> Iterator[None]:
    """Refuse forbidden imports inside the block. ``hide_loaded`` also takes the already-loaded
    forbidden modules out of ``sys.modules`` for the block (so a plain ``import boto3`` is refused
    too) and puts them back after; only for single-threaded moments such as collection."""
    finder = ForbidAws()
    hidden = {k: sys.modules.pop(k) for k in [k for k in sys.modules if forbidden(k)]} if hide_loaded else {}
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules.update(hidden)


def _in_unit(path) -> bool:
    return UNIT_DIR in Path(str(path)).resolve().parents


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    if isinstance(collector, pytest.Module) and _in_unit(collector.path):
        with no_aws(hide_loaded=True):
            yield
    else:
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _in_unit(item.path):
        with no_aws():
            yield
    else:
        yield
