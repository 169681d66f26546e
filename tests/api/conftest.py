"""Shared fixtures: an in-process moto backend with the template's resources, an admin token,
and Chalice's test client over the real app."""

from __future__ import annotations

import contextlib
import functools
import os
from urllib.parse import urlsplit

import pytest

# tests send bursts of hundreds of requests from one token: the per-token rate limit is off
# unless a test turns it on (monkeypatch.setenv("CAIRN_RATE_REQUESTS_PER_MINUTE", ...))
os.environ.setdefault("CAIRN_RATE_REQUESTS_PER_MINUTE", "0")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
    os.environ.pop(var, None)

from moto import mock_aws  # noqa: E402 - after the fake credentials above, so no client sees real ones

from infra.local import motolock  # noqa: E402 - same reason
from infra.local.resources import create_resources  # noqa: E402 - same reason

motolock.install()

STACK = "cairn-test"


@pytest.fixture
def aws(monkeypatch):
    """A fresh in-process moto backend with every template resource; yields the env names."""
    with mock_aws():
        names = create_resources(STACK)
        for k, v in names.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("CAIRN_STAGE", "test")
        # some tests seed more banks than an org's default quota; quota tests set their own limits
        monkeypatch.setenv("CAIRN_QUOTA_BANKS_PER_ORG", "100000")
        from chalicelib import tuning
        from chalicelib.storage import secret
        from chalicelib.usage import limits, meter
        limits.forget_cached()  # a former test's per-org overrides, cached in this process
        secret.forget_cached()  # a former backend's service secret
        meter.forget_leases()  # a former test's org tokens taken ahead
        tuning.forget_cached()  # a former test's tuning, its problem and config versions
        yield names


@pytest.fixture
def app(aws):
    """The Chalice app object (imported after the backend exists)."""
    from app import app as chalice_app
    return chalice_app


@functools.cache
def _contract():
    from chalicelib.api.openapi import document
    from infra.local.contract import ResponseContract
    return ResponseContract(document())


@contextlib.contextmanager
def _environment_as_is(_variables):
    yield


@pytest.fixture(autouse=True)
def _environ_kept():
    """A test must leave ``os.environ`` the process's own mapping: a copy put in its place keeps
    that test's variables (and hides later ``monkeypatch`` changes) for every later test."""
    real = os.environ
    yield
    assert os.environ is real, "os.environ was replaced by a copy during this test"


@pytest.fixture
def client(app, monkeypatch):
    """chalice.test.Client over the real app. Every response it gets is checked against the
    OpenAPI document, and a test that got one breaking it fails (``CAIRN_CONTRACT=0`` skips the
    check, to see a test's own failure first)."""
    from chalice.test import Client
    violations: list[str] = []
    with Client(app) as c:
        # chalice swaps os.environ for a patched copy around each request and puts back the one
        # it found: requests from several threads leave a request's copy as os.environ for the
        # rest of the process. The stage's variables are set once here instead.
        scoped = c.http._config.scope(c.http._config.chalice_stage, "api_handler")
        for k, v in scoped.environment_variables.items():
            monkeypatch.setenv(k, v)
        c.http._patched_env_vars = _environment_as_is
        if os.environ.get("CAIRN_CONTRACT") != "0":
            send = c.http.request

            def request(method, path, headers=None, body=b""):
                resp = send(method, path, headers=headers, body=body)
                route = urlsplit(path).path
                for problem in _contract().check(method, route, resp.status_code, resp.headers, resp.body):
                    violations.append(f"{method} {route} -> {resp.status_code}: {problem}")
                return resp

            c.http.request = request
        yield c
    assert not violations, "responses break openapi.json:\n" + "\n".join(violations[:20])


def mint(org="default", kind="person", user_id="admin", permissions=None, **kw):
    """Mint a token directly through the service (the CLI's path); returns the secret."""
    from chalicelib.auth.principal import PERMISSIONS
    from chalicelib.auth.tokens import MintRequest
    from chalicelib.auth.tokens import mint as do_mint
    req = MintRequest(kind=kind, user_id=None if kind == "api_key" else user_id,
                      permissions=list(PERMISSIONS) if permissions is None else permissions, **kw)
    return do_mint(org, req, created_by="test").token


@pytest.fixture
def token(aws):
    """An admin person token of org ``default`` with every permission."""
    return mint()


@pytest.fixture
def api(client, token):
    """A small JSON client: ``api.post(path, json)`` returns ``(status, body)``."""
    return Api(client, token)


class Api:
    """Thin helper over chalice's test client that sends a bearer token and decodes JSON."""

    def __init__(self, client, token):
        self.client, self.token = client, token

    def call(self, method, path, body=None, token=None, headers=None, raw=None):
        import json as _json
        h = {"Authorization": f"Bearer {token or self.token}"}
        if body is not None or raw is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        data = raw if raw is not None else (_json.dumps(body) if body is not None else None)
        resp = getattr(self.client.http, method.lower())(path, headers=h, body=data)
        try:
            decoded = _json.loads(resp.body) if resp.body else None
        except ValueError:
            decoded = resp.body
        return resp.status_code, decoded

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.call("PUT", path, body, **kw)

    def patch(self, path, body=None, **kw):
        return self.call("PATCH", path, body, **kw)

    def delete(self, path, **kw):
        return self.call("DELETE", path, **kw)


@pytest.fixture
def cache(tmp_path, aws):
    """A recall index cache of the test's own, active for the test (one container)."""
    from chalicelib.search import index
    c = index.IndexCache(str(tmp_path / "cache"))
    with index.using(c):
        yield c
