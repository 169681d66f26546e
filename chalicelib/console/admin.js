// Structured memory, tokens, audit and status.
import {can, del, errorText, get, orgWide, post, qs, seg, session} from "./api.js";
import {append, clear, confirmAction, field, h, notice, table, when} from "./dom.js";

export async function structured(host) {
  const scope = h("select", {name: "scope"}, ["global", "user", "workstream"].map((s) => h("option", {value: s}, s)));
  const scopeId = h("input", {name: "scope_id"});
  const type = h("select", {name: "type"}, h("option", {value: ""}, "Any type"),
    ["feedback", "general", "reference", "user"].map((s) => h("option", {value: s}, s)));
  const form = h("form", {class: "filters", "aria-label": "Choose a scope"}, field("Scope", scope),
    field("Scope id", scopeId, "a user or workstream id; empty for global"), field("Type", type), h("button", {type: "submit"}, "Show"));
  const out = h("div");
  append(host, [h("h2", null, "Structured memory"), form, out]);
  const load = async () => {
    clear(out);
    try {
      const r = await get("v1/api/memories" + qs({scope: scope.value, scope_id: scopeId.value.trim(), type: type.value}));
      out.append(table(`${r.total} memories in scope ${scope.value}${scopeId.value ? " " + scopeId.value : ""}`,
        ["Name", "Type", "Description", "Content", "Updated", ""],
        r.memories.map((m) => [m.name, m.type, m.description, h("div", {class: "content"}, m.content), m.updated,
          h("button", {type: "button", onclick: (ev) => confirmAction(ev.target.parentElement, `Delete ${m.name}?`, async () => {
            try { await del("v1/api/memories/" + seg(m.name) + qs({scope: m.scope, scope_id: m.scope_id})); await load(); }
            catch (e) { out.append(notice("error", errorText(e))); }
          })}, "Delete")])));
    } catch (e) {
      out.append(notice("error", errorText(e)));
    }
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  await load();
}

export async function tokens(host) {
  append(host, [h("h2", null, "Tokens")]);
  if (!can("admin.tokens")) {
    host.append(notice("info", "Your token may not manage tokens (no admin.tokens)."));
    return;
  }
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  const kind = h("select", {name: "kind"}, ["person", "api_key", "service"].map((k) => h("option", {value: k}, k)));
  const user = h("input", {name: "user_id"});
  const label = h("input", {name: "label"});
  const banks = h("input", {name: "banks"});
  // a token grants only permissions it holds: offer exactly those (GET v1/me), whatever the service adds
  const perms = session.me.permissions.map((p) => h("input", {type: "checkbox", name: "perm", value: p,
    id: "perm-" + p.replace(/[^a-z]/g, "-"), checked: p === "memory:read"}));
  const form = h("form", {class: "mint", "aria-label": "Mint a token"}, h("h3", null, "Mint a token"),
    field("Kind", kind), field("User id", user, "for a person or a service"), field("Label", label),
    field("Banks", banks, "comma-separated allow-list; empty: every bank"),
    h("fieldset", null, h("legend", null, "Permissions"),
      perms.map((c) => h("span", {class: "check"}, c, h("label", {for: c.id}, c.value)))),
    h("button", {type: "submit"}, "Mint token"));
  const list = h("div");
  append(host, [msg, form, list]);
  const load = async () => {
    clear(list);
    const r = await get("v1/api/admin/tokens");
    list.append(table("Tokens of the org", ["Token id", "Kind", "User", "Label", "Permissions", "Created", "Last used", "State", ""],
      r.tokens.map((t) => [h("code", null, t.token_id), t.kind || "", t.user_id || "", t.label || "", (t.permissions || []).join(" "),
        when(t.created_at), when(t.last_used_at), t.revoked_at ? `revoked ${when(t.revoked_at)}` : "active",
        t.revoked_at ? "" : h("button", {type: "button", "aria-label": `Revoke ${t.token_id}`, onclick: (ev) => confirmAction(ev.target.parentElement,
          `Revoke ${t.token_id}? Every request with it fails from now on.`, async () => {
            try { await del("v1/api/admin/tokens/" + seg(t.token_id)); clear(msg); msg.append(notice("info", `Revoked ${t.token_id}.`)); await load(); }
            catch (e) { msg.append(notice("error", errorText(e))); }
          })}, "Revoke")])));
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clear(msg);
    const body = {kind: kind.value, permissions: perms.filter((c) => c.checked).map((c) => c.value)};
    if (user.value.trim()) body.user_id = user.value.trim();
    if (label.value.trim()) body.label = label.value.trim();
    const bl = banks.value.split(",").map((x) => x.trim()).filter(Boolean);
    if (bl.length) body.banks = bl;
    try {
      const t = await post("v1/api/admin/tokens", body);
      const secret = h("input", {id: "minted-secret", name: "secret", readOnly: true, value: t.token, class: "secret"});
      msg.append(h("div", {class: "notice info minted", role: "status"},
        h("p", null, `Minted ${t.token_id}. Copy the secret now: it is shown once and never again.`),
        field("Secret", secret),
        h("button", {type: "button", onclick: () => { secret.select(); navigator.clipboard && navigator.clipboard.writeText(t.token).catch(() => {}); }}, "Copy")));
      await load();
    } catch (e) {
      msg.append(notice("error", `Mint failed: ${errorText(e)}`));
    }
  });
  await load();
}

const HOUR = 3_600_000;
const AUDIT_PAGE = 50;
const WINDOW_CAP = 1000;  // events read from one window of time before it is narrowed instead

// Every event of `filter` in [since, until) (until null: no end), oldest first as the API lists
// them; null when there are more than WINDOW_CAP.
async function eventsIn(filter, since, until) {
  const out = [];
  let cursor = null;
  do {
    if (out.length >= WINDOW_CAP) return null;
    const r = await get("v1/audit" + qs({...filter, since, until, limit: 500, cursor}));
    out.push(...r.events);
    cursor = r.next_cursor || null;
  } while (cursor);
  return out;
}

// The newest `n` events of `filter` older than the event `before` (its id, `<at>#<hex>`; null:
// the newest of all), newest first, and whether older ones may remain. The API lists oldest
// first within a time window, so this looks back through windows that grow until n are found.
async function newestEvents(filter, before, n) {
  let until = before ? Number(before.slice(0, 13)) + 1 : null;  // null: no end, whatever the clocks say
  const top = until ?? Date.now();
  let span = HOUR;
  const found = [];
  for (;;) {
    const since = Math.max(0, (until ?? top) - span);
    const got = await eventsIn(filter, since, until);
    if (got === null && span > 1) { span = Math.ceil(span / 8); continue; }  // too many: a narrower window
    found.push(...(got || []).filter((e) => !before || e.id < before).reverse());
    if (found.length >= n || since === 0) return {events: found.slice(0, n), more: found.length > n || since > 0};
    until = since;
    span *= 4;
  }
}

export async function audit(host) {
  const action = h("input", {name: "action"});
  const actor = h("input", {name: "actor"});
  const target = h("input", {name: "target"});
  const form = h("form", {class: "filters", "aria-label": "Filter the audit log"}, field("Action", action), field("Actor", actor),
    field("Target", target), h("button", {type: "submit"}, "Filter"));
  const out = h("div");
  const more = h("button", {type: "button", hidden: true}, "Older events");
  append(host, [h("h2", null, "Audit"), form, out, more]);
  let oldest = null;
  const load = async (reset) => {
    if (reset) { clear(out); oldest = null; }
    more.hidden = true;
    try {
      const filter = {action: action.value.trim(), actor: actor.value.trim(), target: target.value.trim()};
      const r = await newestEvents(filter, oldest, AUDIT_PAGE);
      out.append(table("Events, newest first", ["At", "Action", "Actor", "Target", "Details"],
        r.events.map((e) => [when(e.at), e.action, e.actor, e.target || "—", h("code", null, JSON.stringify(e.details || {}))])));
      if (!r.events.length) out.append(notice("info", reset ? "No event matches." : "No older event."));
      oldest = r.events.length ? r.events[r.events.length - 1].id : oldest;
      more.hidden = !(r.more && r.events.length);
    } catch (e) {
      out.append(notice("error", errorText(e)));
    }
  };
  more.addEventListener("click", () => load(false));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(true); });
  await load(true);
}

export async function status(host) {
  append(host, [h("h2", null, "Status")]);
  if (can("admin.memories") && orgWide()) await health(host);
  if (can("admin.usage")) host.append(await usageChart());
}

// The doctor's checks and each bank's state (GET v1/doctor and v1/status: admin.memories).
async function health(host) {
  const [doctor, st] = await Promise.all([get("v1/doctor").catch((e) => e), get("v1/status").catch((e) => e)]);
  if (doctor instanceof Error) host.append(notice("error", "Doctor: " + errorText(doctor)));
  else {
    host.append(h("p", {class: doctor.ok ? "ok" : "bad"}, doctor.ok ? "Every required check passed." : "A required check failed."));
    host.append(table("Doctor checks", ["Check", "Result", "Required", "Detail", "ms"],
      doctor.checks.map((c) => [c.name, c.ok ? "ok" : "FAILED", c.required ? "yes" : "no", c.detail, String(Math.round(c.ms))])));
  }
  if (st instanceof Error) host.append(notice("error", "Status: " + errorText(st)));
  else {
    host.append(h("p", {class: "versions"}, `Config version ${st.config_version} · this org's config version ${st.org_config_version}`));
    host.append(table("Banks", ["Bank", "seq", "Memories", "Vectors", "Newest snapshot"],
      st.banks.map((b) => [b.name, String(b.seq), String(b.memories),
        `${b.vectors.with_vector} of ${b.vectors.live} (${b.vectors.model})`,
        b.snapshot ? `seq ${b.snapshot.seq} at ${when(b.snapshot.at)} (${b.snapshot.key})` : "none"])));
  }
}

// Usage per bank over the last 24 hours (GET /v1/usage, admin.usage): one bar per bank, scaled
// to the busiest, with the figures beside it.
async function usageChart() {
  const box = h("section", {class: "usage", "aria-label": "Usage per bank"}, h("h3", null, "Usage per bank, last 24 hours"));
  let rep;
  try {
    rep = await get("v1/usage" + qs({group_by: "bank", granularity: "hour"}));
  } catch (err) {
    box.append(notice("error", "Usage: " + errorText(err)));
    return box;
  }
  if (!rep.groups.length) {
    box.append(h("p", null, "No usage recorded in the last 24 hours."));
    return box;
  }
  const top = Math.max(1, ...rep.groups.map((g) => g.totals.requests));
  for (const g of rep.groups) {
    const t = g.totals;
    const id = "u" + Math.random().toString(36).slice(2);
    box.append(h("div", {class: "usage-row"},
      h("label", {for: id}, g.key),
      h("meter", {id, min: 0, max: top, value: t.requests, title: `${t.requests} requests`}),
      h("span", {class: "figures"}, `${t.requests} requests · ${t.recalls} recalls · ${t.previews} previews · ` +
        `${t.saved} saved · ${t.injected_tokens} tokens injected · ${t.model_input_tokens + t.model_output_tokens} ` +
        `model tokens ($${t.model_cost_usd})`)));
  }
  return box;
}
