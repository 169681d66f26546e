// The console: sign-in, the navigation and a router over URL fragments (#/banks/<bank>...).
import {ApiError, errorText, get, session, token} from "./api.js";
import {clear, h, link, notice} from "./dom.js";
import * as banks from "./banks.js";
import * as team from "./team.js";
import * as admin from "./admin.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");

const ROUTES = [
  [/^banks$/, banks.list, "banks"],
  [/^banks\/([^/]+)$/, banks.bank, "bank"],
  [/^banks\/([^/]+)\/memories\/([^/]+)$/, banks.memory, "memory"],
  [/^banks\/([^/]+)\/rules$/, banks.rules, "rules"],
  [/^banks\/([^/]+)\/recall$/, banks.recall, "recall"],
  [/^spaces$/, team.spaces, "spaces"],
  [/^spaces\/([^/]+)$/, team.space, "space"],
  [/^spaces\/([^/]+)\/entries\/([^/]+)$/, team.entry, "entry"],
  [/^structured$/, admin.structured, "structured"],
  [/^tokens$/, admin.tokens, "tokens"],
  [/^audit$/, admin.audit, "audit"],
  [/^status$/, admin.status, "status"],
];

const SECTIONS = [["banks", "Banks"], ["spaces", "Team spaces"], ["structured", "Structured"],
  ["tokens", "Tokens"], ["audit", "Audit"], ["status", "Status"]];

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
  clear(nav).append(h("ul", null, SECTIONS.map(([frag, label]) => h("li", null, link([frag], label)))));
  nav.hidden = false;
}

let generation = 0; // only the newest render may fill the page

async function route() {
  if (!session.me) return;
  const mine = ++generation;
  const frag = fragment();
  if (!frag) {
    location.replace("#/banks");
    return;
  }
  const parts = frag.split("?")[0];
  for (const [re, view, name] of ROUTES) {
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
      await view(host, ...args);
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
  clear(main).append(h("h2", null, "Not found"), notice("error", `No view for #/${frag}.`), link(["banks"], "Back to banks"));
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
