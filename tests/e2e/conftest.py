"""End-to-end fixtures: the local stack started as ``make run`` starts it, driven over HTTP."""

from __future__ import annotations

import os

import pytest
import requests

from .harness import LocalStack

# the stacks inherit CAIRN_* from this process: tests send bursts from one token, so the per-token
# rate limit is off unless a test's stack turns it on
os.environ.setdefault("CAIRN_RATE_REQUESTS_PER_MINUTE", "0")

DEV_TOKEN = "cairn_e2e_dev_token_0123456789abcdef"
CONTRACT_LOG = "contract.log"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A console browser test skipped for want of a browser carries the run's closing alarm
    (printed by the repository's conftest.py, from the reports, under xdist too)."""
    from .console_support import browser_skip_alarm
    report = yield
    alarm = browser_skip_alarm(report)
    if alarm:
        report.user_properties.append(("alarm", alarm))
    return report


def pytest_collection_modifyitems(items):
    for item in items:
        if "/tests/e2e/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="package")
def stack(tmp_path_factory):
    """The running local stack (free ports, a temp state dir, a fixed CAIRN_DEV_TOKEN), shared by
    the end-to-end tests a process runs and stopped after the last of them (not idling on while
    the same worker goes on with the other layers)."""
    base = tmp_path_factory.mktemp("cairn-e2e")
    s = LocalStack(base / "state", DEV_TOKEN, base / "stack.log",
                   env={"CAIRN_CONTRACT_LOG": str(base / CONTRACT_LOG)}).start()
    yield s
    assert s.stop() == 0, (base / "stack.log").read_text()[-3000:]


@pytest.fixture(autouse=True)
def _responses_keep_the_document(request):
    """A test on the shared stack fails when a response it got broke openapi.json (the
    launcher's test mode appends each violation to the contract log)."""
    if "stack" not in request.fixturenames:
        yield
        return
    log = request.getfixturevalue("stack").state_dir.parent / CONTRACT_LOG
    start = log.stat().st_size if log.exists() else 0
    yield
    if log.exists():
        with log.open(encoding="utf-8") as f:
            f.seek(start)
            broken = f.read().strip()
        assert not broken, f"responses break openapi.json:\n{broken[:4000]}"


class Http:
    """``requests`` with the base URL and a bearer token: ``http.post(path, json=...)``."""

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url, self.token = base_url, token
        self.session = requests.Session()

    def request(self, method: str, path: str, token: str | None = "default", **kw) -> requests.Response:
        headers = dict(kw.pop("headers", {}) or {})
        tok = self.token if token == "default" else token
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        return self.session.request(method, self.base_url + path, headers=headers, timeout=60, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def put(self, path, **kw):
        return self.request("PUT", path, **kw)

    def patch(self, path, **kw):
        return self.request("PATCH", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


@pytest.fixture
def http(stack):
    """An HTTP client for the shared stack with the dev admin token."""
    return Http(stack.base_url, stack.token)
