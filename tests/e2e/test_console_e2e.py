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
    TIMEOUT_MS,
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
VIEWS = ("banks", "bank", "memory", "rules", "recall", "conflicts", "spaces", "space", "entry", "structured", "tokens",
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
    bank = unique("0console-")  # sorts first: on the banks list's first page whatever else the stack holds
    lines = [{"text": f"Memory number {i:02d} about {'tea' if i % 3 == 0 else 'coffee'} brewing.",
              "tags": ["drinks", "even" if i % 2 == 0 else "odd"], "entities": [f"ent{i % 4}"],
              "corroboration": i % 5, "updated_at": 1_780_000_000_000 + i * 60_000} for i in range(30)]
    report = ok(http.post(f"/v1/banks/{bank}/import", data="\n".join(json.dumps(x) for x in lines),
                          headers={"Content-Type": "application/x-ndjson"}))
    assert report["imported"] == 30, report
    by_text = {m["text"]: m["id"] for m in ok(http.get(f"/v1/banks/{bank}/memories?limit=50"))["memories"]}
    ids = [by_text[x["text"]] for x in lines]
    retired = ids[1]
    ok(http.post(f"/v1/banks/{bank}/memories/{retired}/supersede", json={"superseded_by": ids[2]}))
    ok(http.put(f"/v1/banks/{bank}/rules/style", json={"content": "Answer in plain English.\n\n# Tone\nBe brief."}))
    # over the default 6000-byte rule budget: the preview shows a truncation marker
    ok(http.put(f"/v1/banks/{bank}/rules/zz-runbook", json={"content": "Check the kettle before brewing. " * 220}))
    team = TeamSeed(http)
    entry = team.draft("Use Postgres for jobs", "We store the job queue in Postgres.\nContact ops@example.com.\n")
    ok(http.post("/v1/api/memories", json={"name": "prefers-tea", "description": "Drink preference",
                                           "type": "user", "content": "The user prefers green tea.",
                                           "scope": "global"}), 200, 201)
    return {"http": http, "bank": bank, "ids": ids, "retired": retired, "team": team, "entry": entry}


@pytest.fixture(scope="module")
def signed_in(browser, site):
    """Signed-in pages kept for the module's pass, one per (token, bypass_csp): a test navigates
    its page by fragment instead of starting a browser context and signing in again."""
    pages: dict[tuple[str, bool], tuple] = {}
    yield pages
    for ctx, _page, _problems in pages.values():
        ctx.close()


@pytest.fixture
def open_page(browser, site, stack, signed_in):
    """``open_page(fragment, token=..., bypass_csp=False, fresh=False)``: a page signed in with
    ``token`` (default: the stack's admin) showing ``#/<fragment>``: a new context (fresh
    sessionStorage) that signs in when ``fresh`` or the first time, else the pass's page for that
    token, moved to the fragment. Any page error or CSP violation during the test fails it."""
    fresh_contexts, used = [], []

    def open_(fragment="banks", token=None, bypass_csp=False, fresh=False):
        token = token or stack.token
        key = (token, bypass_csp)
        if fresh or key not in signed_in:
            ctx = browser.new_context(bypass_csp=bypass_csp, viewport={"width": 1280, "height": 900})
            ctx.set_default_timeout(TIMEOUT_MS)
            page, problems = ctx.new_page(), []
            page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
            page.on("console", lambda m: problems.append(f"console: {m.text}")
                    if m.type == "error" and "Content Security Policy" in m.text else None)
            page.goto(f"{site}/console#/{fragment}")
            sign_in(page, token)
            if fresh:
                fresh_contexts.append(ctx)
            else:
                signed_in[key] = (ctx, page, problems)
            used.append(problems)
            return page
        _ctx, page, problems = signed_in[key]
        used.append(problems)
        page.evaluate("""f => { document.getElementById("main").dataset.view = "loading";
            if (location.hash === f) dispatchEvent(new HashChangeEvent("hashchange")); else location.hash = f; }""",
                      "#/" + fragment)
        wait_view(page)
        return page

    yield open_
    for c in fresh_contexts:
        c.close()
    found = [p for problems in used for p in problems]
    for problems in used:
        problems.clear()
    assert not found, found


def sign_in(page, token):
    page.get_by_label("Token").fill(token)
    page.get_by_label("Token").press("Enter")
    page.wait_for_selector("#signout")
    wait_view(page)


def wait_view(page, name=None):
    """Wait until the router has rendered a view (``name``, when given)."""
    rendered = '#main[data-view]:not([data-view="loading"]):not([data-view="signin"])'
    page.wait_for_selector(f'#main[data-view="{name}"]' if name else rendered)


def go(page, fragment, view):
    page.evaluate("f => { location.hash = f }", "#/" + fragment)
    wait_view(page, view)


def shot(page, site, name):
    """A full-page screenshot to ``artifacts/console/<name>.png`` (the direct pass only: the proxy
    pass renders the same pages); its path, or None."""
    if "/api" in site:
        return None
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# --- sign in -----------------------------------------------------------------------------------


def test_sign_in_shows_who_you_are_keeps_the_token_in_session_storage_only_and_signs_out(open_page, stack):
    page = open_page("banks", fresh=True)
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
    for typed, says in (("   ", "Paste a token first."), ("cairn_tëst€", "only printable ASCII characters")):
        page.get_by_label("Token").fill(typed)
        page.get_by_label("Token").press("Enter")
        expect(page.get_by_role("alert")).to_contain_text(says)
        assert page.evaluate("sessionStorage.getItem('cairn.token')") is None


# --- banks -------------------------------------------------------------------------------------


def test_banks_list_counts_and_the_memory_table_paginates_and_filters(open_page, seeded, site):
    http, bank = seeded["http"], seeded["bank"]
    live = ok(http.get(f"/v1/banks/{bank}"))["bank"]["memories"]  # 29 seeded live; the other pass may add some
    page = open_page("banks")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=bank, exact=True))
    expect(row.get_by_role("cell").nth(2)).to_have_text(str(live))
    row.get_by_role("link", name=bank, exact=True).click()
    wait_view(page, "bank")
    table = page.locator("table").first
    expect(table.locator("thead")).to_have_text(re.compile("Text.*Tags.*Entities.*Corroboration.*Pinned.*Updated"))
    expect(table.locator("tbody tr")).to_have_count(25)
    expect(page.locator(".pageinfo")).to_contain_text(f"Page 1 · {live} in all")
    shot(page, site, "bank-table")
    page.get_by_role("button", name="Next page").click()
    expect(page.locator(".pageinfo")).to_contain_text("Page 2")
    expect(page.locator("table tbody tr")).to_have_count(live - 25)
    page.get_by_role("button", name="Previous page").click()
    expect(page.locator("table tbody tr")).to_have_count(25)

    page.get_by_label("Tag", exact=True).select_option("odd")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(".pageinfo")).to_contain_text("14 in all")  # 15 odd, one retired
    page.get_by_label("Tag", exact=True).select_option("")
    page.get_by_label("Text contains").fill("TEA")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table tbody tr")).to_have_count(10)  # a text filter's matches are not counted:
    expect(page.locator(".pageinfo")).not_to_contain_text("in all")  # the page says no total
    expect(page.locator("table tbody tr").first).to_contain_text("tea")
    page.get_by_label("Text contains").fill("")
    page.get_by_label("Show retired (superseded or forgotten)").check()
    page.get_by_role("button", name="Filter").click()
    everything = ok(http.get(f"/v1/banks/{bank}/memories?include_superseded=true&limit=1"))["total"]
    expect(page.locator(".pageinfo")).to_contain_text(f"{everything} in all")
    page.get_by_label("Text contains").fill("number 01 ")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table tbody tr")).to_have_count(1)
    expect(page.locator("table tbody tr")).to_contain_text("(retired)")


def test_memory_history_timeline_edit_and_pin_with_errors_shown(open_page, seeded, site):
    http, bank = seeded["http"], seeded["bank"]
    saved = ok(http.post(f"/v1/banks/{bank}/memories", json={"text": unique("Kettle model ") + " is K1."}), 201)
    mid = saved["memory"]["id"]
    ok(http.patch(f"/v1/banks/{bank}/memories/{mid}", json={"tags": ["kitchen"]}))
    ok(http.patch(f"/v1/banks/{bank}/memories/{mid}", json={"entities": ["kettle"]}))
    page = open_page(f"banks/{bank}/memories/{mid}")
    wait_view(page, "memory")
    revs = page.locator("ol.timeline > li")
    expect(revs).to_have_count(3)
    history = ok(http.get(f"/v1/banks/{bank}/memories/{mid}/history"))["revisions"]
    shown = [r.inner_text() for r in revs.all()]
    for text, rev in zip(shown, reversed(history), strict=True):  # newest first
        assert rev["op"] in text and f"seq {rev['seq']}" in text
    expect(revs.first).to_contain_text("changed: entities")  # what each revision changed
    expect(revs.nth(1)).to_contain_text("changed: tags")
    shot(page, site, "memory-history")

    new_text = unique("Kettle model is K2, ") + "bought in May."
    page.get_by_label("Text", exact=True).fill(new_text)
    page.get_by_role("button", name="Save changes").click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("dd.memtext")).to_have_text(new_text)
    assert ok(http.get(f"/v1/banks/{bank}/memories/{mid}"))["memory"]["text"] == new_text
    expect(page.locator("ol.timeline > li")).to_have_count(4)

    page.get_by_role("button", name="Pin", exact=True).click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("dd.pinned")).to_have_text("yes")
    assert ok(http.get(f"/v1/banks/{bank}/memories/{mid}"))["memory"]["pinned"] is True
    expect(page.get_by_role("button", name="Unpin")).to_be_visible()

    taken = ok(http.get(f"/v1/banks/{bank}/memories/{seeded['ids'][0]}"))["memory"]["text"]
    page.get_by_label("Text", exact=True).fill(taken)
    page.get_by_role("button", name="Save changes").click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("alert")).to_contain_text("Save failed")
    expect(page.get_by_role("alert")).to_contain_text("duplicate_text")
    assert ok(http.get(f"/v1/banks/{bank}/memories/{mid}"))["memory"]["text"] == new_text

    # a token that may only read sees the memory and no action
    reader = mint(http, unique("reader-"), ["memory:read"])["token"]
    ro = open_page(f"banks/{bank}/memories/{mid}", token=reader)
    wait_view(ro, "memory")
    expect(ro.locator(".notice.info")).to_contain_text("no memory:write")
    expect(ro.get_by_role("button", name="Unpin")).to_have_count(0)

    successor = ok(http.get(f"/v1/banks/{bank}/memories/{seeded['ids'][0]}"))["memory"]["text"]

    def supersede():  # found by words of its text, never a pasted id
        page.get_by_label("Find the memory that replaces it").fill("memory number 00 about tea")
        page.get_by_role("button", name="Find", exact=True).click()
        page.get_by_role("radio", name=successor).check()
        page.get_by_role("button", name="Supersede", exact=True).click()
        page.get_by_role("button", name="Confirm").click()

    supersede()  # refused while pinned: the server's reason is shown
    expect(page.get_by_role("alert")).to_contain_text("Supersede failed: A pinned memory cannot be superseded")
    assert ok(http.get(f"/v1/banks/{bank}/memories/{mid}"))["memory"].get("superseded_by") is None
    page.get_by_role("button", name="Unpin").click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("dd.pinned")).to_have_text("no")
    supersede()
    expect(page.locator("dd.status")).to_have_text(f"superseded by {seeded['ids'][0]}")
    assert ok(http.get(f"/v1/banks/{bank}/memories/{mid}"))["memory"]["superseded_by"] == seeded["ids"][0]


def test_create_a_bank_and_a_memory_and_reinforce_it_with_errors_shown(open_page, seeded, site):
    http = seeded["http"]
    page = open_page("banks")
    wait_view(page, "banks")
    page.get_by_label("Bank name").fill("Bad Name!")
    page.get_by_role("button", name="Create bank").click()
    expect(page.get_by_role("alert")).to_contain_text("Create failed")
    expect(page.get_by_role("alert")).to_contain_text("(invalid_name)")
    name = unique("0made-")
    page.get_by_label("Bank name").fill(name)
    page.get_by_label("Description").fill("made in the console")
    page.get_by_role("button", name="Create bank").click()
    wait_view(page, "bank")
    expect(page.locator("main h2")).to_have_text(f"Bank {name}")
    assert ok(http.get(f"/v1/banks/{name}"))["bank"]["description"] == "made in the console"

    text = unique("The console saved this memory ") + " about kettles."
    page.get_by_label("Memory text").fill("   ")
    page.get_by_role("button", name="Save memory").click()
    expect(page.get_by_role("alert")).to_contain_text("Save failed")
    assert ok(http.get(f"/v1/banks/{name}/memories"))["memories"] == []  # nothing written
    page.get_by_label("Memory text").fill(text)
    page.get_by_label("Memory tags").fill("kitchen, console")
    page.get_by_label("Memory entities").fill("kettle")
    page.get_by_role("button", name="Save memory").click()
    expect(page.locator(".notice.info").filter(has_text="Saved:")).to_contain_text(text)
    expect(page.locator("table tbody tr")).to_have_count(1)
    expect(page.locator("table tbody tr")).to_contain_text(text)
    expect(page.locator(".counts")).to_contain_text("1 memories")
    [saved] = ok(http.get(f"/v1/banks/{name}/memories"))["memories"]
    assert (saved["text"], saved["tags"], saved["entities"]) == (text, ["kitchen", "console"], ["kettle"])
    shot(page, site, "bank-created")
    page.get_by_label("Memory text").fill(text)  # the same sentence again reinforces it
    page.get_by_role("button", name="Save memory").click()
    expect(page.locator(".notice.info").filter(has_text="Already stored")).to_contain_text("corroboration 1")
    assert ok(http.get(f"/v1/banks/{name}/memories/{saved['id']}"))["memory"]["corroboration"] == 1
    page.get_by_role("link", name=text).first.click()
    wait_view(page, "memory")

    # a token that may only read is offered neither form
    reader = mint(http, unique("reader-"), ["memory:read"])["token"]
    ro = open_page(f"banks/{name}", token=reader)
    wait_view(ro, "bank")
    expect(ro.get_by_role("form", name="New memory")).to_have_count(0)
    go(ro, "banks", "banks")
    expect(ro.get_by_role("form", name="New bank")).to_have_count(0)


def test_supersede_finds_the_replacement_by_words_or_by_id(open_page, seeded):
    http, bank = seeded["http"], unique("0jug-")  # a small bank: every save is checked for related memories
    mark = unique("jug")
    old = ok(http.post(f"/v1/banks/{bank}/memories", json={"text": f"Jug capacity {mark} is one litre."}), 201)
    new_text = unique("Jug capacity ") + " is two litres since the upgrade."
    new = ok(http.post(f"/v1/banks/{bank}/memories", json={"text": new_text}), 201)["memory"]
    assert new["conflicts_with"] == [old["memory"]["id"]], new  # another value: a linked conflict
    page = open_page(f"banks/{bank}/memories/{old['memory']['id']}")
    wait_view(page, "memory")
    find = page.get_by_label("Find the memory that replaces it")
    find.fill(mark)  # its words find only itself (never offered) and the later statement linked to it
    page.get_by_role("button", name="Find", exact=True).click()
    expect(page.get_by_role("radio")).to_have_count(1)
    expect(page.get_by_role("radio", name=new_text)).to_have_count(1)
    find.fill(unique("nothing"))
    page.get_by_role("button", name="Find", exact=True).click()
    expect(page.locator(".candidates")).to_contain_text("No other live memory matches.")
    find.fill(new["id"])  # a pasted id finds it too
    page.get_by_role("button", name="Find", exact=True).click()
    expect(page.get_by_role("radio")).to_have_count(1)
    find.fill("jug upgrade")
    page.get_by_role("button", name="Find", exact=True).click()
    page.get_by_role("radio", name=new_text).check()
    page.get_by_role("button", name="Supersede", exact=True).click()
    expect(page.locator(".confirm")).to_contain_text(new_text)
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("dd.status")).to_have_text(f"superseded by {new['id']}")
    assert ok(http.get(f"/v1/banks/{bank}/memories/{old['memory']['id']}"))["memory"]["superseded_by"] == new["id"]


def test_the_conflicts_view_lists_an_open_conflict_and_keeping_one_side_retires_the_other(open_page, seeded):
    http = seeded["http"]
    bank = unique("0conflicts-")
    old_text = "Heron's public launch is planned for June 15, 2026."
    new_text = "Heron's public launch moved to July 20, 2026 because of the Stripe certification delay."
    old = ok(http.post(f"/v1/banks/{bank}/memories", json={"text": old_text, "entities": ["heron"]}), 201)["memory"]
    saved = ok(http.post(f"/v1/banks/{bank}/memories", json={"text": new_text, "entities": ["heron"]}), 201)
    assert [r["id"] for r in saved["related"]] == [old["id"]], saved
    page = open_page(f"banks/{bank}/conflicts")
    wait_view(page, "conflicts")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=new_text))
    expect(row).to_contain_text(old_text)
    row.get_by_role("button", name=f"Keep “{new_text[:40]}…”").click()
    expect(page.locator(".confirm")).to_contain_text(f"retire “{old_text}”")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("main .notice.info")).to_contain_text("No open conflict.")
    assert ok(http.get(f"/v1/banks/{bank}/memories/{old['id']}"))["memory"]["superseded_by"] == saved["memory"]["id"]


def test_rules_view_shows_the_budget_and_saves_an_edit(open_page, seeded, site):
    http, bank = seeded["http"], seeded["bank"]
    page = open_page(f"banks/{bank}/rules")
    wait_view(page, "rules")
    budget = ok(http.get(f"/v1/banks/{bank}/rules"))["budget"]
    expect(page.locator(".budget").first).to_contain_text(f"{budget['used_bytes']} of {budget['limit_bytes']} bytes")
    expect(page.locator(".budget").first).to_contain_text("Over budget")
    shot(page, site, "rules-budget")
    content = unique("Answer in plain English. Rev ")
    page.get_by_label("Markdown of style").fill(content)
    page.get_by_role("form", name="Rule style").get_by_role("button", name="Save rule").click()
    # the field holds what was typed before the save lands: wait for the PUT's answer
    with page.expect_response(lambda r: r.request.method == "PUT" and r.url.endswith("/rules/style")) as saved:
        page.get_by_role("button", name="Confirm").click()
    assert saved.value.status == 200, saved.value.text()
    expect(page.get_by_label("Markdown of style")).to_have_value(content)
    assert ok(http.get(f"/v1/banks/{bank}/rules/style"))["rule"]["content"] == content


def test_bank_settings_show_the_effective_defaults_and_save_with_errors_shown(open_page, seeded, site):
    http = seeded["http"]
    bank = unique("settings-")
    ok(http.post("/v1/banks", json={"name": bank}), 201)
    d = ok(http.get(f"/v1/banks/{bank}"))["bank"]["defaults"]
    floor_default = "on" if d["ambient_floor"] else "off"
    page = open_page(f"banks/{bank}")
    wait_view(page, "bank")
    summary = page.locator("details.settings summary")
    expect(summary).to_have_text(f"Settings: on conflict flag · match threshold {d['match_threshold']} (default) · "
                                 f"ambient floor {floor_default} (default) · feed not stated")
    summary.click()
    form = page.get_by_role("form", name="Bank settings")
    expect(form.get_by_label("Match threshold")).to_have_attribute("placeholder", f"default: {d['match_threshold']}")
    expect(form.get_by_label("Ambient floor")).to_contain_text(f"Default ({floor_default})")

    def save(status):
        with page.expect_response(lambda r: r.request.method == "PATCH" and r.url.endswith(f"/v1/banks/{bank}")) as r:
            form.get_by_role("button", name="Save settings").click()
        assert r.value.status == status, r.value.text()

    form.get_by_label("Match threshold").fill("1.5")  # the API refuses it, says why, and writes nothing
    save(400)
    expect(form.get_by_role("alert")).to_contain_text("Save failed")
    expect(form.get_by_role("alert")).to_contain_text("validation_error")
    assert ok(http.get(f"/v1/banks/{bank}"))["bank"]["settings"]["match_threshold"] is None

    form.get_by_label("On conflict").select_option("supersede")
    form.get_by_label("Match threshold").fill("0.5")
    form.get_by_label("Ambient floor").select_option("false")
    form.get_by_label("Fed by").select_option("tools")
    save(200)
    expect(summary).to_have_text("Settings: on conflict supersede · match threshold 0.5 · ambient floor off · "
                                 "fed by tools")
    assert ok(http.get(f"/v1/banks/{bank}"))["bank"]["settings"] == {
        "on_conflict": "supersede", "match_threshold": 0.5, "ambient_floor": False, "feed": "tools"}
    shot(page, site, "bank-settings")

    form.get_by_label("Match threshold").fill("")  # empty and "Default" give the setting back to the service
    form.get_by_label("Ambient floor").select_option("")
    form.get_by_label("Fed by").select_option("")
    save(200)
    expect(summary).to_contain_text(f"match threshold {d['match_threshold']} (default)")
    assert ok(http.get(f"/v1/banks/{bank}"))["bank"]["settings"] == {
        "on_conflict": "supersede", "match_threshold": None, "ambient_floor": None, "feed": None}

    reader = mint(http, unique("reader-"), ["memory:read"])["token"]  # sees the settings, cannot change them
    ro = open_page(f"banks/{bank}", token=reader)
    wait_view(ro, "bank")
    ro.locator("details.settings summary").click()
    expect(ro.get_by_label("On conflict")).to_be_disabled()
    expect(ro.get_by_role("button", name="Save settings")).to_have_count(0)


def test_recall_bars_add_up_to_the_score_and_preview_shows_the_exact_injection(open_page, seeded, site):
    http, bank = seeded["http"], seeded["bank"]
    page = open_page(f"banks/{bank}/recall")
    wait_view(page, "recall")
    page.get_by_label("Query").fill("tea brewing")
    with page.expect_response(lambda r: r.url.endswith("/recall")) as answer:
        page.get_by_role("button", name="Recall").click()
    assert answer.value.status == 200, answer.value.text()
    hits = page.locator("ol.ranked > li")
    expect(hits.first).to_be_visible()
    api = ok(http.post(f"/v1/banks/{bank}/recall", json={"query": "tea brewing", "limit": 10}))["memories"]
    assert hits.count() == len(api) > 0
    rendered = answer.value.json()["memories"]  # what the page drew
    assert [h["memory"]["id"] for h in rendered] == [h["memory"]["id"] for h in api]
    for li, hit in zip(hits.all(), rendered, strict=True):
        assert li.get_by_role("link").inner_text() == hit["memory"]["text"]
        meters = li.locator("meter")
        # a bar for every signal the response carries (time and neighbour too), in its order
        assert [m.get_attribute("data-signal") for m in meters.all()] == list(hit["signals"]) == list(
            hit["contributions"])
        assert {"time", "neighbour"} <= set(hit["signals"])
        parts = [float(m.get_attribute("data-contribution")) for m in meters.all()]
        score = hit["score"]
        assert sum(parts) == pytest.approx(score, rel=1e-9)  # the bars add up to the score
        for m, part in zip(meters.all(), parts, strict=True):
            name = m.get_attribute("data-signal")
            assert part == hit["contributions"][name]
            assert float(m.get_attribute("value")) == pytest.approx(abs(part))
            assert li.get_by_label(name, exact=True).count() == 1  # each bar is labelled
        expect(li.locator(".sum")).to_contain_text(f"= score {score:.3f}")
        assert li.locator(".score").inner_text().endswith(f"{score:.3f}")
    page.get_by_role("button", name="Preview injection").click()
    pre = page.locator("pre.injection").first
    expect(pre).to_be_visible()
    p = ok(http.post(f"/v1/banks/{bank}/preview", json={"query": "tea brewing"}))
    assert pre.text_content() == p["system_prompt_section"]
    assert page.locator("pre.injection").nth(1).text_content() == p["message"]
    for i, part in enumerate(("rules", "memories")):
        used, limit = p["budget"][part]["used_bytes"], p["budget"][part]["limit_bytes"]
        expect(page.locator(".preview .budget").nth(i)).to_contain_text(f"{used} of {limit} bytes")
    expect(pre.locator("mark.marker").first).to_contain_text("[rule truncated")
    shot(page, site, "recall-preview")


# --- team review -------------------------------------------------------------------------------


def _accept(page):
    page.get_by_role("button", name="Accept", exact=True).click()
    page.get_by_role("button", name="Confirm").click()


def test_team_entry_reviewed_and_accepted_by_a_second_person(open_page, seeded, site):
    team = seeded["team"]
    text = "We store the job queue in Postgres.\nContact ops@example.com.\n"
    eid = team.draft(unique("Job queue "), text)
    page = open_page(f"spaces/{team.space}/entries/{eid}", token=team.bob["token"])
    wait_view(page, "entry")
    entry = ok(team.as_(team.bob).get(f"/api/v1/context/memory/entries/{eid}"))
    expect(page.locator("pre.entry-text")).to_have_text(entry["text"])
    expect(page.locator("pre.diff ins").first).to_have_text("We store the job queue in Postgres.")
    expect(page.locator("ul.dlp")).to_contain_text("email")
    expect(page.locator("table").last).to_contain_text(team.alice["user_id"])
    expect(page.locator("code.sha")).to_have_text(entry["documentSha256"])
    shot(page, site, "entry-review")
    _accept(page)
    expect(page.locator(".messages")).to_contain_text("Accepted")
    expect(page.locator("dd.status")).to_have_text("accepted")
    assert ok(team.as_(team.bob).get(f"/api/v1/context/memory/entries/{eid}"))["status"] == "accepted"

    # the space lists it by status
    go(page, f"spaces/{team.space}", "space")
    expect(page.locator("table", has=page.locator("caption", has_text="accepted"))).to_contain_text("Job queue")


def test_accept_after_the_text_changed_shows_the_new_diff_and_accepts_the_new_hash(open_page, seeded):
    team = seeded["team"]
    eid = team.draft(unique("Caching "), "Cache the user list for 60 seconds.\n")
    page = open_page(f"spaces/{team.space}/entries/{eid}", token=team.bob["token"])
    wait_view(page, "entry")
    expect(page.locator("pre.entry-text")).to_contain_text("60 seconds")
    team.append(eid, "Invalidate it on every write.\n")  # alice edits while bob reads
    _accept(page)
    expect(page.locator(".messages")).to_contain_text("The text changed since you opened it")
    expect(page.locator("pre.entry-text")).to_contain_text("Invalidate it on every write.")
    expect(page.locator("pre.diff ins").last).to_have_text("Invalidate it on every write.")
    expect(page.locator("dd.status")).to_have_text("draft")
    _accept(page)
    expect(page.locator(".messages")).to_contain_text("Accepted")
    accepted = ok(team.as_(team.bob).get(f"/api/v1/context/memory/entries/{eid}/accepted"))
    assert "Invalidate it on every write." in accepted["text"]


def test_the_author_accepting_her_own_entry_is_explained(open_page, seeded):
    team = seeded["team"]
    eid = team.draft(unique("Retries "), "Retry three times.\n")
    page = open_page(f"spaces/{team.space}/entries/{eid}", token=team.alice["token"])
    wait_view(page, "entry")
    _accept(page)
    expect(page.get_by_role("alert")).to_contain_text("context.memory.self_accept")
    expect(page.locator(".explain")).to_contain_text("Separation of duties")
    expect(page.locator("dd.status")).to_have_text("draft")


def test_a_space_page_is_titled_by_its_name_for_a_member_too(open_page, seeded):
    team = seeded["team"]
    name = ok(team.http.get(f"/api/v1/context/spaces/{team.space}"))["name"]
    for who in (team.bob["token"], None):  # a member (no context:admin), then the admin
        page = open_page(f"spaces/{team.space}", token=who)
        wait_view(page, "space")
        expect(page.locator("main h2")).to_have_text(f"Space {name}")
        assert page.title() == f"Space {name} · Cairn console"


# --- tokens ------------------------------------------------------------------------------------


def test_mint_shows_the_secret_once_and_revoke_stops_it(open_page, stack, site):
    page = open_page("tokens")
    wait_view(page, "tokens")
    label = unique("console-test-")
    page.get_by_label("Kind").select_option("person")
    page.get_by_label("User id").fill(unique("dana-"))
    page.get_by_label("Label").fill(label)
    page.get_by_role("button", name="Mint token").click()
    secret = page.get_by_label("Secret")
    expect(secret).to_be_visible()
    value = secret.input_value()
    assert value and value not in page.url
    me = ok(Http(stack.base_url, value).get("/v1/me"))
    row = page.get_by_role("row").filter(has_text=label)
    expect(row).to_contain_text("active")
    shot(page, site, "tokens-minted")
    go(page, "banks", "banks")
    go(page, "tokens", "tokens")
    expect(page.get_by_label("Secret")).to_have_count(0)  # shown once
    assert value not in page.content()
    page.get_by_role("button", name=f"Revoke {me['token_id']}").click()
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("row").filter(has_text=label)).to_contain_text("revoked")
    assert Http(stack.base_url, value).get("/v1/me").status_code == 401


def test_the_token_form_offers_every_permission_the_token_holds(open_page, stack):
    me = ok(Http(stack.base_url, stack.token).get("/v1/me"))
    assert "admin.usage" in me["permissions"]
    page = open_page("tokens")
    wait_view(page, "tokens")
    boxes = page.get_by_role("group", name="Permissions").get_by_role("checkbox")
    assert sorted(b.get_attribute("value") for b in boxes.all()) == sorted(me["permissions"])
    label = unique("usage-reader-")
    page.get_by_label("Kind").select_option("api_key")
    page.get_by_label("Label").fill(label)
    page.get_by_label("admin.usage", exact=True).check()
    page.get_by_role("button", name="Mint token").click()
    secret = page.get_by_label("Secret")
    expect(secret).to_be_visible()
    minted = ok(Http(stack.base_url, secret.input_value()).get("/v1/me"))
    assert minted["permissions"] == ["admin.usage", "memory:read"]


# --- audit -------------------------------------------------------------------------------------


def test_audit_lists_newest_first_and_pages_to_older_events(open_page, seeded, stack):
    http = seeded["http"]
    minted = [mint(http, None, [], kind="api_key", label=unique("audit-order-"))["token_id"] for _ in range(55)]
    everything, cursor = [], None  # the API's listing, oldest first
    while True:
        page_ = ok(http.get("/v1/audit", params={"action": "token.mint", "limit": 500, "cursor": cursor}))
        everything += page_["events"]
        cursor = page_["next_cursor"]
        if not cursor:
            break
    newest = [e["target"] for e in reversed(everything)][:100]
    assert newest[:55] == minted[::-1]
    page = open_page("audit")
    wait_view(page, "audit")
    page.get_by_label("Action").fill("token.mint")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("tbody tr")
    expect(rows.first).to_contain_text(minted[-1])
    expect(rows).to_have_count(50)
    page.get_by_role("button", name="Older events").click()
    expect(rows).to_have_count(min(100, len(everything)))
    shown = [r.get_by_role("cell").nth(3).inner_text() for r in rows.all()]
    assert shown == newest  # newest first, page after page, none twice
    times = [r.get_by_role("cell").nth(0).inner_text() for r in rows.all()]
    assert times == sorted(times, reverse=True)


# --- who may see what --------------------------------------------------------------------------


def test_a_review_only_person_lands_on_team_spaces_and_sees_only_what_they_may_use(open_page, seeded):
    team = seeded["team"]
    page = open_page("", token=team.bob["token"], fresh=True)  # the console's bare link: signs in, a view shows
    landed = (page.locator("#main").get_attribute("data-view"), page.evaluate("location.hash"),
              page.locator("#nav a").all_inner_texts(), page.locator("main .notice.error").all_inner_texts())
    assert landed == ("spaces", "#/spaces", ["Team spaces"], [])
    go(page, "audit", "audit")  # a view it may not use, reached by its link: what it needs, no error
    expect(page.locator("main .notice.info")).to_contain_text("needs admin.memories")
    expect(page.locator("main .notice.error")).to_have_count(0)
    page.get_by_role("main").get_by_role("link", name="Team spaces").click()
    wait_view(page, "spaces")

    # a token confined to one bank: banks only, landing there
    confined = mint(seeded["http"], None, ["memory:read"], kind="api_key", banks=[seeded["bank"]])["token"]
    page = open_page("", token=confined, fresh=True)
    wait_view(page, "banks")
    assert page.locator("#nav a").all_inner_texts() == ["Banks"]
    expect(page.locator("main .notice.error")).to_have_count(0)


# --- every view --------------------------------------------------------------------------------


def _fragments(seeded):
    bank, team = seeded["bank"], seeded["team"]
    return {"banks": "banks", "bank": f"banks/{bank}", "memory": f"banks/{bank}/memories/{seeded['ids'][0]}",
            "rules": f"banks/{bank}/rules", "recall": f"banks/{bank}/recall",
            "conflicts": f"banks/{bank}/conflicts", "spaces": "spaces",
            "space": f"spaces/{team.space}", "entry": f"spaces/{team.space}/entries/{seeded['entry']}",
            "structured": "structured", "tokens": "tokens", "audit": "audit", "status": "status"}


def test_every_fragment_is_a_shareable_link_with_a_screenshot(open_page, seeded, site, stack):
    frags = _fragments(seeded)
    assert set(frags) == set(VIEWS)
    page = open_page("banks")
    for view, frag in frags.items():
        page.goto("about:blank")
        page.goto(f"{site}/console#/{frag}")  # a fresh load of the link: the tab's session still signs it in
        wait_view(page, view)
        expect(page.locator("main h2")).to_be_visible()
        errors = page.locator("main .notice.error")
        assert errors.count() == 0, (view, errors.all_inner_texts())
        path = shot(page, site, view)
        assert path is None or path.stat().st_size > 1000
    # the status view agrees with the API
    status = ok(Http(stack.base_url, stack.token).get("/v1/status"))
    mine = next(b for b in status["banks"] if b["name"] == seeded["bank"])
    row = page.get_by_role("row").filter(has=page.get_by_role("cell", name=seeded["bank"], exact=True))
    expect(row.get_by_role("cell").nth(1)).to_have_text(str(mine["seq"]))
    expect(row.get_by_role("cell").nth(2)).to_have_text(str(mine["memories"]))
    cover = mine["vectors"]
    expect(row.get_by_role("cell").nth(3)).to_have_text(f"{cover['with_vector']} of {cover['live']} ({cover['model']})")
    expect(page.locator(".versions")).to_contain_text(f"Config version {status['config_version']}")
    # usage per bank as a chart: one bar per bank, its value the bank's requests of the last 24 hours
    usage = ok(Http(stack.base_url, stack.token).get("/v1/usage?group_by=bank&granularity=hour"))
    bank = next(g for g in usage["groups"] if g["key"] == seeded["bank"])
    bar = page.locator(".usage-row").filter(has=page.get_by_text(seeded["bank"], exact=True)).locator("meter")
    assert 0 < int(float(bar.get_attribute("value") or 0)) <= bank["totals"]["requests"]  # the page loaded first
    # the audit view filters
    go(page, "audit", "audit")
    page.get_by_label("Action").fill("token.mint")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr").first).to_contain_text("token.mint")
    # the structured view shows the seeded memory
    go(page, "structured", "structured")
    expect(page.get_by_role("cell", name="prefers_tea")).to_be_visible()
    if "/api" not in site:
        for view in VIEWS:
            assert (ARTIFACTS / f"{view}.png").exists()


BROKEN_HEADINGS = """() => {
    // words of visible table headings laid out over more than one line (broken mid-word)
    const broken = [];
    for (const th of document.querySelectorAll("main th")) {
        const box = th.getBoundingClientRect();
        if (box.width <= 1 || box.height <= 1) continue;  // visually hidden (the narrow layout)
        const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            for (const m of n.data.matchAll(/\\S+/g)) {
                const r = document.createRange();
                r.setStart(n, m.index);
                r.setEnd(n, m.index + m[0].length);
                if (new Set([...r.getClientRects()].map((q) => Math.round(q.top))).size > 1) broken.push(m[0]);
            }
        }
    }
    return broken;
}"""


SCROLL_WIDTH = """w => [document.documentElement.scrollWidth,  // and what sticks out, to say why
    [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > w).slice(0, 5)
        .map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}px`)]"""


def _fill_views(page, view):
    """What a view shows only after an action: ranked memories, supersede candidates."""
    if view == "recall":
        page.get_by_label("Query").fill("tea brewing")
        page.get_by_role("button", name="Recall").click()
        expect(page.locator("ol.ranked > li").first).to_be_visible()
    find = page.get_by_label("Find the memory that replaces it")
    if view == "memory" and find.count():
        find.fill("coffee brewing")
        page.get_by_role("button", name="Find", exact=True).click()
        expect(page.get_by_role("radio").first).to_be_visible()


@pytest.mark.parametrize("width", [420, 800, 1280])
def test_every_view_fits_the_width_and_no_table_heading_breaks_mid_word(browser, site, stack, seeded, width):
    """At 420 px no view scrolls sideways (``scrollWidth`` <= 420, screenshots
    ``artifacts/console/narrow-<view>.png``); at every width no table heading's word is split
    over two lines."""
    if "/api" in site and width != 420:
        pytest.skip("the pages are the same through the proxy")
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{site}/console")
        page.wait_for_selector('#main[data-view="signin"]')
        wide = {"signin": page.evaluate(SCROLL_WIDTH, width)}
        sign_in(page, stack.token)
        broken = {}
        for view, frag in _fragments(seeded).items():
            go(page, frag, view)
            _fill_views(page, view)
            wide[view] = page.evaluate(SCROLL_WIDTH, width)
            broken[view] = page.evaluate(BROKEN_HEADINGS)
            if width == 420:
                shot(page, site, f"narrow-{view}")
        overflowing = {v: w for v, w in wide.items() if w[0] > width}
        split = {v: words for v, words in broken.items() if words}
        assert not overflowing and not split, {"wider than the window": overflowing, "headings split": split}
    finally:
        ctx.close()


def test_a_malformed_fragment_or_the_skip_link_never_breaks_the_view(open_page):
    """A fragment with a broken %-escape shows "Not found" (no script error, no stale view);
    "Skip to content" moves the focus to the view and leaves the fragment (the route) alone."""
    page = open_page("banks")
    go(page, "banks/%E0%A4%A", "notfound")
    expect(page.locator("main .notice.error")).to_contain_text("No view for #/banks/%E0%A4%A")
    go(page, "banks", "banks")
    page.locator("a.skip").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    assert page.evaluate("location.hash") == "#/banks"
    assert page.locator("#main").get_attribute("data-view") == "banks"


# --- stored XSS --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def xss(stack, seeded):
    """Payloads that set ``window.__xss`` if ever parsed as HTML, in every kind of stored string the
    console shows: memory text, tag, entity, rule, entry title and text, structured memory, token
    label, space name."""
    http, team = seeded["http"], seeded["team"]
    bank = unique("0xss-")
    mem = ok(http.post(f"/v1/banks/{bank}/memories", json={
        "text": f"Payload {XSS} here.", "tags": [XSS], "entities": [XSS_SCRIPT]}), 201)["memory"]["id"]
    rule = f"{XSS}\n{XSS_SCRIPT}\n\"><svg onload=window.__xss=1>"
    ok(http.put(f"/v1/banks/{bank}/rules/evil", json={"content": rule}))
    eid = team.draft(XSS, f"Body {XSS}\n{XSS_SCRIPT}\n")
    ok(http.post("/v1/api/memories", json={"name": "xss-probe", "description": XSS, "type": "user",
                                           "content": XSS_SCRIPT, "scope": "global"}), 200, 201)
    mint(http, unique("x-"), ["memory:read"], label=XSS)
    return {"bank": bank, "memory": mem, "space": team.space, "entry": eid}


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["with-csp", "csp-bypassed"])
def test_stored_xss_shows_as_text_and_never_runs(open_page, xss, bypass_csp):
    bank = xss["bank"]
    page = open_page(f"banks/{bank}", bypass_csp=bypass_csp)
    wait_view(page, "bank")
    visits = [(f"banks/{bank}", "bank"), (f"banks/{bank}/memories/{xss['memory']}", "memory"),
              (f"banks/{bank}/rules", "rules"), (f"banks/{bank}/recall", "recall"), ("spaces", "spaces"),
              (f"spaces/{xss['space']}", "space"), (f"spaces/{xss['space']}/entries/{xss['entry']}", "entry"),
              ("structured", "structured"), ("tokens", "tokens"), ("audit", "audit")]
    for frag, view in visits:
        go(page, frag, view)
        if view == "recall":
            page.get_by_label("Query").fill("payload here")
            page.get_by_role("button", name="Recall").click()
            expect(page.locator("ol.ranked > li").first).to_contain_text(XSS)
            page.get_by_role("button", name="Preview injection").click()
            escaped = XSS_SCRIPT.replace("<", "&lt;").replace(">", "&gt;")  # rules are data in the injection
            expect(page.locator("pre.injection").first).to_contain_text(escaped)
        if view == "rules":
            expect(page.get_by_label("Markdown of evil")).to_have_value(re.compile(re.escape(XSS)))
        elif view in ("bank", "memory", "space", "entry", "structured", "tokens"):
            assert XSS in page.locator("main").inner_text(), view  # the characters, shown as text
        assert page.evaluate("typeof window.__xss") == "undefined", view
        assert page.locator("main img, main script, main svg").count() == 0, view
    assert page.evaluate("typeof window.__xss") == "undefined"


# --- keyboard, accessibility, first load -------------------------------------------------------


def _tab_to(page, js_test, limit=400):
    """Press Tab until ``js_test(document.activeElement)`` holds; fails after ``limit`` presses."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"(el => {js_test})(document.activeElement)"):
            return
    raise AssertionError(f"never reached by Tab: {js_test}")


def test_keyboard_alone_signs_in_opens_a_memory_and_pins_it(browser, site, stack, seeded):
    http = seeded["http"]
    bank = unique("0kbd-")
    text = unique("Keyboard memory ")
    mid = ok(http.post(f"/v1/banks/{bank}/memories", json={"text": text}), 201)["memory"]["id"]
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        page.goto(f"{site}/console")
        page.wait_for_selector('#main[data-view="signin"]')
        assert page.evaluate("document.activeElement.name") == "token"
        page.keyboard.type(stack.token)
        page.keyboard.press("Enter")
        wait_view(page, "banks")
        _tab_to(page, f"el.tagName === 'A' && el.textContent === {json.dumps(bank)}")
        page.keyboard.press("Enter")
        wait_view(page, "bank")
        _tab_to(page, f"el.tagName === 'A' && el.textContent === {json.dumps(text)}")
        page.keyboard.press("Enter")
        wait_view(page, "memory")
        _tab_to(page, "el.tagName === 'BUTTON' && el.textContent === 'Pin'")
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.textContent") == "Confirm"
        page.keyboard.press("Enter")
        expect(page.locator("dd.pinned")).to_have_text("yes")
        assert ok(http.get(f"/v1/banks/{bank}/memories/{mid}"))["memory"]["pinned"] is True
    finally:
        ctx.close()


def test_axe_finds_no_serious_or_critical_violation_on_any_view(browser, site, stack, seeded):
    if "/api" in site:
        pytest.skip("the pages are the same through the proxy; axe runs on the direct pass")
    ctx = browser.new_context(bypass_csp=True)  # axe is injected: the page's CSP would block it
    try:
        page = ctx.new_page()
        page.goto(f"{site}/console")
        page.wait_for_selector('#main[data-view="signin"]')
        found = {"signin": _axe(page)}
        sign_in(page, stack.token)
        for width in (1280, 420):  # the wide layout and the narrow one (tables as stacked cards)
            page.set_viewport_size({"width": width, "height": 900})
            for view, frag in _fragments(seeded).items():
                go(page, frag, view)
                _fill_views(page, view)
                found[f"{view}@{width}"] = _axe(page)
        bad = {view: v for view, v in found.items() if v}
        assert not bad, json.dumps(bad, indent=1)[:4000]
    finally:
        ctx.close()


def _axe(page):
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ["violations"]});
        return r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
            .map(v => `${v.impact} ${v.id}: ${v.help} @ `
                 + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", "));
    }""")


def test_first_load_is_small_and_fast(browser, site):
    """First load of the page on the local stack (keep-alive): every byte transferred, asserted
    under 200 KB; ``loadEventEnd`` of 5 loads recorded in
    ``artifacts/console/first-load.json`` (a measurement, not an assertion)."""
    if "/api" in site:
        pytest.skip("measured on the stack itself, not through the test proxy")
    timings, sizes = [], []
    ctx = browser.new_context()  # one context: its connections are kept alive, as a person's browser keeps them
    try:
        for i in range(6):
            page = ctx.new_page()  # no-cache and no validators: every load transfers every file again
            page.goto(f"{site}/console", wait_until="load")
            page.wait_for_selector('#main[data-view="signin"]')
            nav = page.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];"
                                " return {load: n.loadEventEnd, size: n.transferSize}; })()")
            res = page.evaluate("performance.getEntriesByType('resource').map(r => r.transferSize)")
            if i:  # the first is a warm-up
                timings.append(nav["load"])
                sizes.append(nav["size"] + sum(res))
            page.close()
    finally:
        ctx.close()
    timings.sort()
    figures = {"median_load_ms": round(timings[len(timings) // 2], 1), "max_load_ms": round(timings[-1], 1),
               "transferred_bytes": max(sizes), "runs": len(timings)}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "first-load.json").write_text(json.dumps(figures, indent=1))
    print(f"console first load: {figures}")
    assert 0 < figures["transferred_bytes"] < 200 * 1024, figures
