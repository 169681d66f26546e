"""The token admin API: mint, list, revoke; secrets shown once and stored
only as SHA-256 digests; grants bounded by the grantor; audited."""

import hashlib

from tests.api.conftest import mint
from tests.api.state import dump

T = "/v1/api/admin/tokens"


def test_mint_shape_and_secret_shown_once(api):
    s, b = api.post(T, {"user_id": "u_42", "kind": "person", "permissions": ["memory:write", "memory:read"],
                        "label": "laptop", "expires_at": 4_102_444_800_000, "banks": ["main", "notes"]})
    assert s == 201, b
    assert set(b) >= {"token", "token_id", "kind", "user_id", "permissions", "label", "expires_at", "banks"}
    assert (b["kind"], b["user_id"], b["label"], b["expires_at"]) == ("person", "u_42", "laptop", 4_102_444_800_000)
    assert b["permissions"] == ["memory:read", "memory:write"] and b["banks"] == ["main", "notes"]
    secret = b["token"]
    assert secret.startswith("cairn_") and len(secret) >= 40
    # only the SHA-256 is stored: the secret appears nowhere in the backend
    data = dump()
    everything = "\n".join(i for items in data["ddb"].values() for i in items)
    assert secret not in everything and secret[6:] not in everything
    assert hashlib.sha256(secret.encode()).hexdigest() in everything
    # the new token works, within its grant
    s, _ = api.post("/v1/banks/main/memories", {"text": "minted token writes"}, token=secret)
    assert s == 201
    s, e = api.post("/v1/banks/other/memories", {"text": "minted token writes"}, token=secret)
    assert (s, e["code"]) == (403, "forbidden")
    # never shown again
    s, listing = api.get(T)
    flat = str(listing)
    assert secret not in flat and hashlib.sha256(secret.encode()).hexdigest() not in flat
    s, r = api.delete(f"{T}/{b['token_id']}")
    assert secret not in str(r)


def test_api_key_and_service_kinds(api):
    s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"]})
    assert s == 201 and b["user_id"] is None and b["banks"] is None and b["expires_at"] is None
    s, e = api.post(T, {"kind": "api_key", "user_id": "u1"})
    assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", "user_id")
    s, b = api.post(T, {"kind": "service", "user_id": "svc", "permissions": ["service"]})
    assert s == 201 and b["permissions"] == ["service"]
    s, e = api.post(T, {"kind": "api_key", "permissions": ["memory:fly"]})
    assert (s, e["code"], e["details"]["field"]) == (400, "validation_error", "permissions")


def test_list_has_last_used_never_secrets(api):
    _s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"], "label": "ci"})
    _s, listing = api.get(T)
    row = next(t for t in listing["tokens"] if t["token_id"] == b["token_id"])
    assert row["last_used_at"] is None and row["label"] == "ci"
    for t in listing["tokens"]:
        assert "token" not in t and "digest" not in t
    assert api.get("/v1/banks", token=b["token"])[0] == 200
    _s, listing = api.get(T)
    row = next(t for t in listing["tokens"] if t["token_id"] == b["token_id"])
    assert isinstance(row["last_used_at"], int) and row["last_used_at"] >= row["created_at"]
    # only the caller's org
    mint(org="acme", user_id="o")
    _s, listing = api.get(T)
    assert all(t["token_id"] for t in listing["tokens"]) and len(listing["tokens"]) == 2


def test_revoke_fails_at_once(api):
    s, b = api.post(T, {"kind": "person", "user_id": "u", "permissions": ["memory:read"]})
    tok = b["token"]
    assert api.get("/v1/banks", token=tok)[0] == 200
    s, r = api.delete(f"{T}/{b['token_id']}")
    assert s == 200 and r["token"]["revoked_at"]
    s, e = api.get("/v1/banks", token=tok)
    assert (s, e["code"]) == (401, "unauthorized")
    s, again = api.delete(f"{T}/{b['token_id']}")  # idempotent: the same revoked token
    assert s == 200 and again["token"]["revoked_at"] == r["token"]["revoked_at"]
    s, e = api.delete(f"{T}/tok_unknown")
    assert (s, e["code"]) == (404, "not_found")


def test_expired_token_is_401(api):
    s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"], "expires_at": 4_102_444_800_000})
    assert api.get("/v1/banks", token=b["token"])[0] == 200
    from chalicelib.storage.tables import TokenModel
    TokenModel.get(b["token_id"]).update(actions=[TokenModel.expires_at.set(1)])  # the expiry passes
    s, e = api.get("/v1/banks", token=b["token"])
    assert (s, e["code"]) == (401, "unauthorized")


def test_cannot_grant_what_you_lack(api):
    granter = mint(user_id="g", permissions=["admin.tokens", "memory:read"])
    s, e = api.post(T, {"kind": "api_key", "permissions": ["memory:read", "memory:write"]}, token=granter)
    assert (s, e["code"]) == (403, "forbidden") and e["details"]["permissions"] == ["memory:write"]
    s, _b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"]}, token=granter)
    assert s == 201


def test_cannot_widen_bank_allow_list(api):
    scoped = mint(user_id="g", permissions=["admin.tokens", "memory:read"], banks=["main"])
    snap = dump()
    for body in ({"kind": "api_key", "permissions": ["memory:read"]},
                 {"kind": "api_key", "permissions": ["memory:read"], "banks": ["main", "secret"]}):
        s, e = api.post(T, body, token=scoped)
        assert (s, e["code"]) == (403, "forbidden"), body
    from tests.api.state import assert_unchanged
    assert_unchanged(snap)
    s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"], "banks": ["main"]}, token=scoped)
    assert s == 201 and b["banks"] == ["main"]


def test_admin_tokens_required(api):
    plain = mint(user_id="p", permissions=["memory:read", "memory:write", "admin.memories"])
    for method, path in (("post", T), ("get", T), ("delete", f"{T}/tok_x")):
        s, e = getattr(api, method)(path, *([{"kind": "api_key"}] if method == "post" else []), token=plain)
        assert (s, e["code"]) == (403, "forbidden")


def test_mint_and_revoke_are_audited(api):
    _s, b = api.post(T, {"kind": "api_key", "permissions": ["memory:read"], "label": "audited"})
    api.delete(f"{T}/{b['token_id']}")
    from chalicelib.storage.tables import AuditModel
    events = {e.action: e for e in AuditModel.query("default") if e.target == b["token_id"]}
    assert set(events) == {"token.mint", "token.revoke"}
    assert events["token.mint"].actor == "person:admin" and events["token.revoke"].actor == "person:admin"
    everything = str([e.attribute_values for e in AuditModel.query("default")])
    assert b["token"] not in everything


def test_fixed_token_value_once_revoked_cannot_be_minted_again(aws):
    """The local stack's CAIRN_DEV_TOKEN path: re-minting a live fixed value is a no-op, a revoked
    one is refused instead of being handed out as if it worked."""
    import pytest

    from chalicelib.auth import tokens
    from chalicelib.errors import Conflict

    req = tokens.MintRequest(kind="person", user_id="dev", permissions=["memory:read"])
    first = tokens.mint("default", req, created_by="test", token="fixed-dev-token")
    again = tokens.mint("default", req, created_by="test", token="fixed-dev-token")
    assert again.token_id == first.token_id
    tokens.revoke("default", first.token_id, actor="test")
    with pytest.raises(Conflict):
        tokens.mint("default", req, created_by="test", token="fixed-dev-token")


def test_unknown_route_names_the_real_path(api):
    status, body = api.get("/v1/nothing/here")
    assert status == 404 and body["code"] == "not_found"
    assert "/v1/nothing/here" in body["error"]


def test_last_used_at_is_written_at_most_once_per_interval(api, monkeypatch):
    """Every request reads its token once; ``last_used_at`` is written on the first use and then
    only when ``token_touch_interval_s`` (60 s) has passed, so warm turns within a minute write
    nothing to the tokens table."""
    from chalicelib import clock
    from chalicelib.auth import store
    from chalicelib.auth.tokens import token_id_for
    from tests.api.test_search_freshness import CallCounter
    now = [1_900_000_000_000]
    monkeypatch.setattr(clock, "now_ms", lambda: now[0])
    secret = mint(permissions=["memory:read"])
    counter = CallCounter().install()
    try:
        def calls(op):
            return sum(c == (f"dynamodb.{op}", "cairn-test-tokens") for c in counter.calls)

        assert api.get("/v1/banks", token=secret)[0] == 200  # first use: written
        assert (calls("GetItem"), calls("UpdateItem")) == (1, 1)
        for step in (1_000, 58_999):  # within the interval: read, never written
            now[0] += step
            assert api.get("/v1/banks", token=secret)[0] == 200
        assert (calls("GetItem"), calls("UpdateItem")) == (3, 1)
        now[0] += 1  # 60 s since the last write
        assert api.get("/v1/banks", token=secret)[0] == 200
        assert (calls("GetItem"), calls("UpdateItem")) == (4, 2)
    finally:
        counter.uninstall()
    assert store.get(token_id_for(secret)).last_used_at == now[0]
