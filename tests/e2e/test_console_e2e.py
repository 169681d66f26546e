"""The web console in a real headless Chromium (Debian's package, driven by Playwright), against
the local stack: every test runs twice, once on the stack itself and once through a proxy that
serves it under ``/api`` (API Gateway's stage prefix). Data is seeded through the API."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import Http
from .console_support import (
    ARTIFACTS,
    AXE,
    PrefixProxy,
    TeamSeed,
    browser_or_skip,
    expect,
    mint,
    ok,
    unique,
)

XSS = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=1</script>"
VIEWS = ("banks", "bank", "memory", "rules", "recall", "spaces", "space", "entry", "structured", "tokens",
         "audit", "status")


@pytest.fixture(scope="module")
def browser():
    pw, browser = browser_or_skip()
    yield browser
    browser.close()
    pw.stop()


@pytest.fixture(scope="module", params=["direct", "proxy"])
def site(request, stack):
    """The console's base URL: the stack itself, or the stack under ``/api`` through a proxy."""
    if request.param == "direct":
        yield stack.base_url
    else:
        with PrefixProxy(stack.base_url) as proxy:
            yield proxy.base_url


@pytest.fixture(scope="module")
def seeded(stack):
    """A bank of 30 memories (one retired), rules, a team space with a draft and structured memory."""
    http = Http(stack.base_url, stack.token)
    bank = unique("console-")
    ids = []
    for i in range(30):
        text = f"Memory number {i:02d} about {'tea' if i % 3 == 0 else 'coffee'} brewing."
        body = {"text": text, "tags": ["drinks", "even" if i % 2 == 0 else "odd"], "entities": [f"ent{i % 4}"]}
        ids.append(ok(http.post(f"/v1/banks/{bank}/memories", json=body), 201)["memory"]["id"])
    retired = ids[1]
    ok(http.post(f"/v1/banks/{bank}/memories/{retired}/supersede", json={"superseded_by": ids[2]}))
    ok(http.put(f"/v1/banks/{bank}/rules/style", json={"content": "Answer in plain English.\n\n# Tone\nBe brief."}))
    team = TeamSeed(http)
    entry = team.draft("Use Postgres for jobs", "We store the job queue in Postgres.\nContact ops@example.com.\n")
    ok(http.post("/v1/api/memories", json={"name": "prefers-tea", "description": "Drink preference",
                                           "type": "user", "content": "The user prefers green tea.",
                                           "scope": "global"}), 200, 201)
    return {"http": http, "bank": bank, "ids": ids, "retired": retired, "team": team, "entry": entry}


@pytest.fixture
def open_page(browser, site, stack):
    """``open_page(fragment, token=..., bypass_csp=False)``: a fresh context (fresh sessionStorage)
    signed in at ``#/<fragment>``. Any page error or CSP violation fails the test (unless the test
    expects the CSP to block something)."""
    contexts, problems = [], []

    def open_(fragment="banks", token=None, bypass_csp=False, expect_csp_block=False):
        ctx = browser.new_context(bypass_csp=bypass_csp, viewport={"width": 1280, "height": 900})
        contexts.append(ctx)
        page = ctx.new_page()
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        if not expect_csp_block:
            page.on("console", lambda m: problems.append(f"console: {m.text}")
                    if m.type == "error" and "Content Security Policy" in m.text else None)
        page.goto(f"{site}/console#/{fragment}")
        sign_in(page, token or stack.token)
        return page

    yield open_
    for c in contexts:
        c.close()
    assert not problems, problems


def sign_in(page, token):
    page.get_by_label("Token").fill(token)
    page.get_by_label("Token").press("Enter")
    page.wait_for_selector("#signout")
    wait_view(page)


def wait_view(page, name=None):
    """Wait until the router has rendered a view (``name``, when given)."""
    sel = f'#main[data-view="{name}"]' if name else '#main[data-view]:not([data-view="loading"]):not([data-view="signin"])'
    page.wait_for_selector(sel)


def go(page, fragment, view):
    page.evaluate("f => { location.hash = f }", "#/" + fragment)
    wait_view(page, view)


def shot(page, site, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tag = "proxy-" if "/api" in site else ""
    path = ARTIFACTS / f"{tag}{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# --- sign in -----------------------------------------------------------------------------------


def test_sign_in_shows_who_you_are_keeps_the_token_in_session_storage_only_and_signs_out(open_page, stack):
    page = open_page("banks")
    me = ok(Http(stack.base_url, stack.token).get("/v1/me"))
    who = page.locator("#who").inner_text()
    assert (me["user_id"] or me["token_id"]) in who and me["kind"] in who and me["org_id"] in who
    assert page.evaluate("sessionStorage.getItem('cairn.token')") == stack.token
    assert stack.token not in page.url
    assert page.context.cookies() == []
    assert page.evaluate("localStorage.length") == 0
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_selector('#main[data-view="signin"]')
    assert page.evaluate("sessionStorage.getItem('cairn.token')") is None
    page.get_by_label("Token").fill("cairn_not_a_real_token_0000000000000000")
    page.get_by_label("Token").press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("(unauthorized)")
    assert page.evaluate("sessionStorage.getItem('cairn.token')") is None
