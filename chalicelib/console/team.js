// Team memory: spaces, a space's entries by status, and an entry's review page.
import {ApiError, can, errorText, get, post, qs, seg} from "./api.js";
import {append, clear, confirmAction, field, h, link, notice, table, when} from "./dom.js";

const CTX = "api/v1/context";
const STATUSES = ["draft", "accepted", "superseded", "archived"];

export async function spaces(host) {
  append(host, [h("h2", null, "Team spaces")]);
  const page = await get(CTX + "/spaces" + qs({limit: 100}));
  host.append(table("Spaces you can read", ["Space", "Kind", "Classification", "DLP policy", "Entries"],
    page.spaces.map((s) => [link(["spaces", s.id], s.name || s.id), s.kind, s.classification, s.dlp_policy || "—", String(s.entries)])));
  if (!page.spaces.length) host.append(notice("info", "No team space is visible to this token."));
}

// The space `id` as the caller sees it, or null: read directly with context:admin, else found among
// the spaces the caller may read (a member may list them, not read one by id).
async function spaceInfo(id) {
  if (can("context:admin")) return get(CTX + "/spaces/" + seg(id)).catch(() => null);
  let cursor = null;
  do {
    const page = await get(CTX + "/spaces" + qs({limit: 100, cursor}));
    const found = page.spaces.find((s) => s.id === id);
    if (found) return found;
    cursor = page.next_cursor || null;
  } while (cursor);
  return null;
}

export async function space(host, id) {
  const info = await spaceInfo(id).catch(() => null);
  const title = (info && info.name) || id;
  const status = h("select", {name: "status"}, h("option", {value: ""}, "Any status"),
    STATUSES.map((s) => h("option", {value: s}, s)));
  const q = h("input", {name: "q", type: "search"});
  const form = h("form", {class: "filters", "aria-label": "Filter entries"}, field("Status", status), field("Search", q),
    h("button", {type: "submit"}, "Filter"));
  const out = h("div");
  append(host, [h("h2", null, "Space ", h("q", null, title)), h("p", null, link(["spaces"], "← all spaces")), form, out]);
  const load = async () => {
    clear(out);
    try {
      const page = await get(CTX + "/memory/entries" + qs({spaceId: id, status: status.value, q: q.value.trim(), limit: 100}));
      const groups = STATUSES.map((s) => [s, page.entries.filter((e) => e.status === s)]).filter(([, es]) => es.length);
      for (const [s, es] of groups) {
        out.append(table(`${s} (${es.length})`, ["Title", "Kind", "Created by", "Updated", "Revision"],
          es.map((e) => [link(["spaces", id, "entries", e.id], e.title || "(untitled)"), e.kind, e.createdBy, when(e.updatedAt), String(e.revision)])));
      }
      if (!groups.length) out.append(notice("info", "No entry matches."));
    } catch (e) {
      out.append(notice("error", errorText(e)));
    }
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  await load();
}

// A line diff (jsdiff, vendored) of the last accepted text against the current one.
function diffView(before, after) {
  const pre = h("pre", {class: "diff", "aria-label": "Changes since the last accepted revision"});
  const parts = globalThis.Diff ? globalThis.Diff.diffLines(before, after) : [{value: after, added: true}];
  for (const p of parts) {
    const tag = p.added ? "ins" : p.removed ? "del" : "span";
    // one element a line, so each changed line carries its own + or - mark
    for (const line of p.value.replace(/\n$/, "").split("\n")) pre.append(h(tag, null, line));
  }
  return pre;
}

const EXPLAIN = {
  "context.memory.self_accept": "Separation of duties: the person who created this entry, or edited it recently, cannot accept it. Another member of the space must review and accept it.",
  "context.person_required": "Separation of duties: only a person (a person token) may accept an entry, never an API key or a service.",
  "dlp_blocked": "The text holds what looks like a secret: remove it before it can be accepted.",
  "invalid_transition": "The entry's status does not allow this now (it may have been accepted or archived meanwhile).",
  "forbidden": "Your token lacks the right to do this in this space.",
};

export async function entry(host, spaceId, id) {
  const base = CTX + "/memory/entries/" + seg(id);
  const banner = h("div", {class: "messages", "aria-live": "assertive"});
  const body = h("div");
  append(host, [h("h2", null, "Entry review"), h("p", null, link(["spaces", spaceId], "← back to the space")), banner, body]);
  let seen = null; // the documentSha256 the reviewer is looking at

  const render = async () => {
    const [e, accepted, hist] = await Promise.all([
      get(base),
      get(base + "/accepted").catch((err) => { if (err instanceof ApiError && err.status === 404) return null; throw err; }),
      get(base + "/history")]);
    seen = e.documentSha256;
    clear(body);
    append(body, [
      h("h3", {class: "entry-title"}, e.title || "(untitled)"),
      h("dl", {class: "facts"},
        h("dt", null, "Status"), h("dd", {class: "status"}, e.status),
        h("dt", null, "Kind"), h("dd", null, e.kind),
        h("dt", null, "Created by"), h("dd", null, e.createdBy),
        h("dt", null, "Accepted"), h("dd", null, e.acceptedBy ? `revision ${e.revision} by ${e.acceptedBy} at ${e.acceptedAt}` : "never"),
        h("dt", null, "Document SHA-256"), h("dd", null, h("code", {class: "sha"}, e.documentSha256))),
      h("h4", null, "Text"), h("pre", {class: "entry-text"}, e.text),
      h("h4", null, accepted ? `Diff against accepted revision ${accepted.revision}` : "Diff (never accepted: everything is new)"),
      diffView(accepted ? accepted.text : "", e.text),
      h("h4", null, "DLP findings"),
      e.dlpFindings.length ? h("ul", {class: "dlp"}, e.dlpFindings.map((f) => h("li", null, f)))
        : h("p", {class: "dlp none"}, "None found."),
      h("h4", null, "Edit log"),
      table("Who changed what", ["When", "Type", "Action", "Author", "Details"],
        hist.events.map((ev) => [ev.at || "—", ev.type, ev.action, ev.author || "—",
          ev.details ? JSON.stringify(ev.details) : ev.bytes !== undefined ? `${ev.bytes} bytes` : ""])),
    ]);
    const actions = h("div", {class: "actions"});
    if (e.status === "draft" || e.status === "accepted") {
      actions.append(h("button", {type: "button", name: "accept", onclick: () => confirmAction(actions,
        "Accept exactly the text shown above?", () => accept())}, "Accept"), " ");
      actions.append(h("button", {type: "button", name: "archive", onclick: () => confirmAction(actions,
        "Archive this entry? It leaves retrieval.", () => simple("archive", () => post(base + "/archive"))) }, "Archive"), " ");
      const by = h("input", {name: "supersededBy"});
      const sup = h("form", {class: "supersede", "aria-label": "Supersede entry"}, field("Superseded by (entry id)", by),
        h("button", {type: "submit"}, "Supersede"));
      sup.addEventListener("submit", (ev) => {
        ev.preventDefault();
        confirmAction(sup, `Mark this entry superseded by ${by.value}?`, () =>
          simple("supersede", () => post(base + "/supersede", {supersededBy: by.value.trim()})));
      });
      actions.append(sup);
    }
    body.append(actions);
  };

  const failure = (what, err) => {
    const why = err instanceof ApiError ? EXPLAIN[err.code] : null;
    banner.append(notice("error", `${what} failed: ${errorText(err)}`), why ? h("p", {class: "explain"}, why) : null);
  };
  const simple = async (what, call) => {
    clear(banner);
    try { await call(); await render(); banner.append(notice("info", `Done: ${what}.`)); }
    catch (err) { failure(what, err); }
  };
  const accept = async () => {
    clear(banner);
    try {
      await post(base + "/accept", {documentSha256: seen});
      await render();
      banner.append(notice("info", "Accepted: this exact text is now what agents retrieve."));
    } catch (err) {
      if (err instanceof ApiError && err.code === "document_changed") {
        await render();
        banner.append(notice("error", "The text changed since you opened it. Nothing was accepted: review the new text and diff below, then accept again."));
        return;
      }
      failure("Accept", err);
    }
  };
  await render();
}
