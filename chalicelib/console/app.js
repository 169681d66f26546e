// The console: sign-in, the navigation and a router over URL fragments (#/banks/<bank>...).
import {ApiError, can, errorText, get, orgWide, session, token} from "./api.js";
import {append, clear, h, link, notice} from "./dom.js";
import * as banks from "./banks.js";
import * as team from "./team.js";
import * as admin from "./admin.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");

// Each section, what it needs (shown to a token that lacks it) and whether the signed-in token has
// it (GET v1/me): the menu lists only the sections the token may use, and the landing view is the first.
const SECTIONS = [
  {frag: "banks", label: "Banks", needs: "memory:read", may: () => can("memory:read")},
  {frag: "spaces", label: "Team spaces", needs: "a token without a bank allow-list", may: orgWide},
  {frag: "structured", label: "Structured", needs: "memory:read and no bank allow-list",
    may: () => can("memory:read") && orgWide()},
  {frag: "tokens", label: "Tokens", needs: "admin.tokens", may: () => can("admin.tokens")},
  {frag: "audit", label: "Audit", needs: "admin.memories and no bank allow-list",
    may: () => can("admin.memories") && orgWide()},
  {frag: "status", label: "Status", needs: "admin.memories or admin.usage, and no bank allow-list",
    may: () => (can("admin.memories") || can("admin.usage")) && orgWide()},
];
const SECTION = Object.fromEntries(SECTIONS.map((s) => [s.frag, s]));

// fragment pattern, view, view name, the section it belongs to
const ROUTES = [
  [/^banks$/, banks.list, "banks", "banks"],
  [/^banks\/([^/]+)$/, banks.bank, "bank", "banks"],
  [/^banks\/([^/]+)\/memories\/([^/]+)$/, banks.memory, "memory", "banks"],
  [/^banks\/([^/]+)\/rules$/, banks.rules, "rules", "banks"],
  [/^banks\/([^/]+)\/recall$/, banks.recall, "recall", "banks"],
  [/^banks\/([^/]+)\/conflicts$/, banks.conflicts, "conflicts", "banks"],
  [/^spaces$/, team.spaces, "spaces", "spaces"],
  [/^spaces\/([^/]+)$/, team.space, "space", "spaces"],
  [/^spaces\/([^/]+)\/entries\/([^/]+)$/, team.entry, "entry", "spaces"],
  [/^structured$/, admin.structured, "structured", "structured"],
  [/^tokens$/, admin.tokens, "tokens", "tokens"],
  [/^audit$/, admin.audit, "audit", "audit"],
  [/^status$/, admin.status, "status", "status"],
];

const allowed = () => SECTIONS.filter((s) => s.may());

// A view the token may not use: say what it needs and where it may go instead.
function gate(host, section) {
  const others = allowed();
  append(host, [h("h2", null, section.label),
    notice("info", `Your token may not use this view: it needs ${section.needs}.`),
    others.length ? h("p", null, "Go to ", others.map((s, i) => [i ? ", " : "", link([s.frag], s.label)]), ".") : null]);
}

// A token no section is open to (a bank-confined token without memory:read, say).
function nothingToShow(host) {
  append(host, [h("h2", null, "Nothing to show"),
    notice("info", "This token holds no permission the console's views use (it needs memory:read for banks, " +
      "or no bank allow-list for team spaces). Sign in with another token.")]);
}

function fragment() {
  return location.hash.replace(/^#\/?/, "");
}

function signInForm(message) {
  nav.hidden = true;
  clear(who);
  const input = h("input", {name: "token", id: "token", type: "password", autocomplete: "off", required: true,
    spellcheck: "false"});
  const form = h("form", {class: "signin", "aria-label": "Sign in"},
    h("h2", null, "Sign in"),
    h("p", null, "Paste a Cairn bearer token. It stays in this tab's session storage and is sent only to this API."),
    h("div", {class: "field"}, h("label", {for: "token"}, "Token"), input),
    h("button", {type: "submit"}, "Sign in"),
    message ? notice("error", message) : null);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    // a header value holds no space or non-ASCII: say so, rather than "could not reach the API"
    if (!/^[\x21-\x7e]+$/.test(t)) {
      return signInForm(t ? "A Cairn token holds only printable ASCII characters, no spaces." : "Paste a token first.");
    }
    token.set(t);
    await start();
  });
  clear(main).append(form);
  main.dataset.view = "signin";
  input.focus();
}

function signOut() {
  token.clear();
  session.me = null;
  history.replaceState(null, "", location.pathname + location.search);
  signInForm();
}

function renderWho(me) {
  clear(who).append(
    h("span", {class: "whoami"}, "Signed in as ", h("strong", null, me.user_id || me.token_id),
      ` (${me.kind}) · org ${me.org_id}`),
    " ", h("button", {type: "button", id: "signout", onclick: signOut}, "Sign out"));
  clear(nav).append(h("ul", null, allowed().map((s) => h("li", null, link([s.frag], s.label)))));
  nav.hidden = false;
}

let generation = 0; // only the newest render may fill the page

async function route() {
  if (!session.me) return;
  const mine = ++generation;
  const frag = fragment();
  if (!frag) {
    const first = allowed()[0];
    if (first) {
      location.replace("#/" + first.frag);
      return;
    }
  }
  const parts = frag.split("?")[0];
  for (const [re, view, name, section] of ROUTES.concat([[/^$/, nothingToShow, "nothing", null]])) {
    const m = parts.match(re);
    if (!m) continue;
    let args;
    try {
      args = m.slice(1).map(decodeURIComponent);
    } catch {
      break;  // a malformed %-escape (#/banks/%E0): no view holds it
    }
    main.dataset.view = "loading";
    main.setAttribute("aria-busy", "true");
    const host = h("section", {class: "view"});
    try {
      if (section && !SECTION[section].may()) gate(host, SECTION[section]);
      else await view(host, ...args);
    } catch (err) {
      host.append(notice("error", errorText(err)));
    }
    if (mine !== generation) return;  // a newer render (the user moved on, or a change re-rendered)
    clear(main).append(host);
    main.dataset.view = name;
    main.removeAttribute("aria-busy");
    const heading = main.querySelector("h2");
    if (heading) { heading.tabIndex = -1; heading.focus({preventScroll: true}); }
    document.title = (heading ? heading.textContent + " · " : "") + "Cairn console";
    return;
  }
  const home = allowed()[0];
  clear(main).append(h("h2", null, "Not found"), notice("error", `No view for #/${frag}.`),
    home ? link([home.frag], "Back to " + home.label.toLowerCase()) : null);
  main.dataset.view = "notfound";
}

async function start() {
  if (!token.get()) return signInForm();
  try {
    session.me = await get("v1/me");
  } catch (err) {
    token.clear();
    return signInForm(err instanceof ApiError ? errorText(err) : "Could not reach the API: " + errorText(err));
  }
  renderWho(session.me);
  await route();
}

// "Skip to content" moves the focus only: following its href would change the fragment, the route.
document.querySelector("a.skip").addEventListener("click", (ev) => {
  ev.preventDefault();
  main.focus();
});
window.addEventListener("hashchange", route);
start();
