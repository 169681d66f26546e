"""``GET /v1/health`` (no token, no backend call) and ``GET /v1/me`` (the calling token, never
its secret)."""

from __future__ import annotations

import botocore.client
import pytest

from chalicelib.auth.tokens import revoke, token_id_for
from tests.api.conftest import mint
from tests.api.state import assert_unchanged, dump


@pytest.fixture
def aws_calls(monkeypatch):
    """Every AWS API call made (boto3's clients and pynamodb's alike go through
    ``BaseClient._make_api_call``), as ``[operation name]``."""
    calls: list[str] = []
    real = botocore.client.BaseClient._make_api_call

    def spy(self, operation_name, api_params):
        calls.append(operation_name)
        return real(self, operation_name, api_params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", spy)
    return calls


@pytest.mark.parametrize("authorization", [None, "Bearer cairn_not_a_token", "Basic Zm9vOmJhcg==", "garbage"])
def test_health_answers_without_a_token_and_calls_no_backend(client, aws_calls, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    resp = client.http.get("/v1/health?verbose=1", headers=headers)  # query parameters are ignored
    assert resp.status_code == 200
    assert resp.json_body == {"status": "ok"}
    assert resp.headers["Cache-Control"] == "no-store"
    assert len(resp.headers.get("X-Request-Id", "")) >= 16
    assert aws_calls == []


def test_the_spy_sees_backend_calls(client, token, aws_calls):
    """The health test above can fail: an authenticated route's token read is seen."""
    assert client.http.get("/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert "GetItem" in aws_calls


def test_health_with_a_revoked_token_still_answers(client, aws_calls):
    secret = mint()
    revoke("default", token_id_for(secret), actor="test")
    aws_calls.clear()
    resp = client.http.get("/v1/health", headers={"Authorization": f"Bearer {secret}"})
    assert (resp.status_code, resp.json_body, aws_calls) == (200, {"status": "ok"}, [])


def test_health_other_methods_are_405_and_write_nothing(client):
    before = dump()
    for method in ("post", "put", "delete", "patch"):
        resp = getattr(client.http, method)("/v1/health", body=b"{}")
        assert resp.status_code == 405 and resp.json_body["code"] == "method_not_allowed"
    assert_unchanged(before)


def test_a_public_route_takes_no_permission_body_or_bank():
    from chalice import Blueprint
    from pydantic import BaseModel

    from chalicelib.api.http import endpoint
    bp = Blueprint("x")
    for kw in ({"permission": "memory:read"}, {"body": BaseModel}, {"bank_scoped": True}):
        with pytest.raises(ValueError, match="public route"):
            endpoint(bp, "/x", ["GET"], public=True, **kw)


def test_me_shows_the_calling_token(api):
    secret = mint(user_id="u7", permissions=["memory:write", "memory:read"], banks=["main", "notes"],
                  expires_at=4_102_444_800_000)
    s, b = api.get("/v1/me", token=secret)
    assert s == 200
    assert b == {"token_id": token_id_for(secret), "org_id": "default", "kind": "person", "user_id": "u7",
                 "permissions": ["memory:read", "memory:write"], "banks": ["main", "notes"],
                 "expires_at": 4_102_444_800_000}
    assert secret not in str(b) and secret[6:] not in str(b)


def test_me_needs_no_permission_any_kind(api):
    key = mint(kind="api_key", permissions=[], org="acme")
    s, b = api.get("/v1/me", token=key)
    assert s == 200
    assert (b["org_id"], b["kind"], b["user_id"], b["permissions"], b["banks"], b["expires_at"]) == (
        "acme", "api_key", None, [], None, None)
    s, b = api.get("/v1/me")  # the admin fixture token: every permission
    assert s == 200 and b["user_id"] == "admin" and "admin.tokens" in b["permissions"]


def test_me_refuses_a_missing_revoked_or_expired_token(client, api):
    before = dump()
    assert client.http.get("/v1/me").status_code == 401
    assert client.http.get("/v1/me", headers={"Authorization": "Bearer cairn_unknown"}).status_code == 401
    assert_unchanged(before)
    revoked = mint()
    revoke("default", token_id_for(revoked), actor="test")
    s, e = api.get("/v1/me", token=revoked)
    assert (s, e["code"]) == (401, "unauthorized")
    from chalicelib.storage.tables import TokenModel
    expired = mint()
    TokenModel(token_id_for(expired)).update(actions=[TokenModel.expires_at.set(1)])
    s, e = api.get("/v1/me", token=expired)
    assert (s, e["code"]) == (401, "unauthorized")
