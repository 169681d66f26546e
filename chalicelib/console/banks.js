// Memory banks: the list, a bank's memories, one memory (history and actions), rules, recall.
import {can, del, errorText, get, patch, post, put, qs, seg} from "./api.js";
import {append, clear, confirmAction, field, h, link, notice, rerender, table, when} from "./dom.js";

const PAGE = 25;
const B = (bank) => "v1/banks/" + seg(bank);
const splitList = (s) => s.split(",").map((x) => x.trim()).filter(Boolean);
const ID = /^fp[0-9a-f]{16}$/;  // a memory id, pasted whole

// Create a bank (201) or find it exists (200): the new bank opens; an existing one is named.
function newBankForm() {
  const name = h("input", {name: "name", required: true, autocomplete: "off", spellcheck: "false"});
  const description = h("input", {name: "description"});
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  const form = h("form", {class: "create", "aria-label": "New bank"}, h("h3", null, "New bank"),
    field("Bank name", name, "lower-case letters, digits, - and _"), field("Description", description, "optional"),
    h("button", {type: "submit"}, "Create bank"), msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clear(msg);
    const body = {name: name.value.trim()};
    if (description.value.trim()) body.description = description.value.trim();
    try {
      const r = await post("v1/banks", body);
      if (r.created) location.hash = "#/banks/" + seg(r.bank.name);
      else msg.append(notice("info", "Bank ", link(["banks", r.bank.name], r.bank.name), " exists already."));
    } catch (e) {
      msg.append(notice("error", `Create failed: ${errorText(e)}`));
    }
  });
  return form;
}

export async function list(host) {
  append(host, [h("h2", null, "Banks"), can("memory:write") ? newBankForm() : null]);
  const box = h("div");
  host.append(box);
  let cursor = null;
  const load = async () => {
    const page = await get("v1/banks" + qs({limit: 50, cursor}));
    const rows = page.banks.map((b) => [link(["banks", b.name], b.name), b.description || "", String(b.memories),
      String(b.pinned), String(b.rules)]);
    box.append(table("Banks and their counts", ["Bank", "Description", "Memories", "Pinned", "Rules"], rows));
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
  };
  const more = h("button", {type: "button", hidden: true, onclick: () => load().catch((e) => box.append(notice("error", errorText(e))))}, "More banks");
  host.append(more);
  await load();
}

function bankNav(bank, current) {
  const items = [["", "Memories"], ["conflicts", "Conflicts"], ["rules", "Rules"], ["recall", "Recall and preview"]];
  return h("nav", {class: "subnav", "aria-label": "Bank " + bank},
    h("ul", null, items.map(([frag, label]) => h("li", null,
      frag === current ? h("span", {"aria-current": "page"}, label) : link(frag ? ["banks", bank, frag] : ["banks", bank], label)))));
}

function chips(items) {
  return h("span", {class: "chips"}, (items || []).map((t) => h("span", {class: "chip"}, t)));
}

function countsText(info) {
  return `${info.memories} memories · ${info.pinned} pinned · ${info.rules} rules` +
    (info.description ? ` · ${info.description}` : "");
}

// A listing's total: a number, or what the API gives instead (null when it did not count).
function totalText(total) {
  if (total === null || total === undefined) return "";
  return typeof total === "number" ? ` · ${total} in all` : ` · ${total}`;
}

// Save a memory: 201 a new one, 200 when the sentence was stored already (reinforced).
function newMemoryForm(name, saved) {
  const text = h("textarea", {name: "text", rows: 2, required: true});
  const tags = h("input", {name: "tags"});
  const ents = h("input", {name: "entities"});
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  const form = h("form", {class: "create", "aria-label": "New memory"}, h("h3", null, "New memory"),
    field("Memory text", text, "one self-contained sentence"), field("Memory tags", tags, "comma-separated"),
    field("Memory entities", ents, "comma-separated"), h("button", {type: "submit"}, "Save memory"), msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clear(msg);
    try {
      const r = await post(B(name) + "/memories", {text: text.value, tags: splitList(tags.value), entities: splitList(ents.value)});
      const ref = link(["banks", name, "memories", r.memory.id], r.memory.text);
      msg.append(r.created ? notice("info", "Saved: ", ref)
        : notice("info", "Already stored, so reinforced (corroboration ", String(r.memory.corroboration), "): ", ref));
      for (const input of [text, tags, ents]) input.value = "";
      await saved();
    } catch (e) {
      msg.append(notice("error", `Save failed: ${errorText(e)}`));
    }
  });
  return form;
}

// A setting left null stands for the service's default, which the bank names (defaults).
function settingsText(s, d) {
  const t = s.match_threshold === null || s.match_threshold === undefined ? `${d.match_threshold} (default)` : String(s.match_threshold);
  const f = s.ambient_floor === null || s.ambient_floor === undefined ? `${d.ambient_floor ? "on" : "off"} (default)` : s.ambient_floor ? "on" : "off";
  const fed = s.feed ? `fed by ${s.feed}` : "feed not stated";
  return `Settings: on conflict ${s.on_conflict} · match threshold ${t} · ambient floor ${f} · ${fed}`;
}

// A bank's settings (PATCH v1/banks/{bank}): "Default" and an empty threshold send null. The API
// validates (the form does not), so its message is the one shown.
function settingsForm(name, info) {
  const d = info.defaults || {};
  const conflict = h("select", {name: "on_conflict"}, h("option", {value: "flag"}, "flag: keep both, linked"),
    h("option", {value: "supersede"}, "supersede: retire the older one"));
  const threshold = h("input", {name: "match_threshold", inputmode: "decimal", autocomplete: "off",
    placeholder: `default: ${d.match_threshold}`});
  const floor = h("select", {name: "ambient_floor"}, h("option", {value: ""}, `Default (${d.ambient_floor ? "on" : "off"})`),
    h("option", {value: "true"}, "On"), h("option", {value: "false"}, "Off"));
  const feed = h("select", {name: "feed"}, h("option", {value: ""}, "Not stated"),
    h("option", {value: "hooks"}, "hooks: every turn is handed over automatically"),
    h("option", {value: "tools"}, "tools: only the model's own save calls"),
    h("option", {value: "both"}, "both"));
  const summary = h("summary", null, "");
  const show = (s) => {
    conflict.value = s.on_conflict;
    threshold.value = s.match_threshold === null || s.match_threshold === undefined ? "" : String(s.match_threshold);
    floor.value = s.ambient_floor === null || s.ambient_floor === undefined ? "" : String(s.ambient_floor);
    feed.value = s.feed || "";
    summary.textContent = settingsText(s, d);
  };
  const writable = can("memory:write");
  for (const c of [conflict, threshold, floor, feed]) c.disabled = !writable;
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  const form = h("form", {class: "create", "aria-label": "Bank settings", novalidate: true},
    field("On conflict", conflict, "when a save finds a live memory that says otherwise"),
    field("Match threshold", threshold, `0 to 1: recall returns no hit that matches less; empty: the default, now ${d.match_threshold}`),
    field("Ambient floor", floor, "the hook pads fewer than 3 matches with the bank's top pinned and corroborated memories"),
    field("Fed by", feed, "how the bank gets its memories: the injected section tells the model whether to save"),
    writable ? h("button", {type: "submit"}, "Save settings") : null, msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clear(msg);
    const t = threshold.value.trim();
    const settings = {on_conflict: conflict.value, match_threshold: t === "" ? null : Number.isNaN(Number(t)) ? t : Number(t),
      ambient_floor: floor.value === "" ? null : floor.value === "true", feed: feed.value || null};
    try {
      show((await patch(B(name), {settings})).bank.settings);
      msg.append(notice("info", "Settings saved."));
    } catch (e) {
      msg.append(notice("error", `Save failed: ${errorText(e)}`));
    }
  });
  show(info.settings || {on_conflict: "flag"});
  return h("details", {class: "settings"}, summary, form);
}

export async function bank(host, name) {
  const info = (await get(B(name))).bank;
  const counts = h("p", {class: "counts"}, countsText(info));
  append(host, [h("h2", null, "Bank ", h("q", null, name)), bankNav(name, ""), counts, settingsForm(name, info)]);
  const tags = await get(B(name) + "/tags").catch(() => ({tags: []}));
  const tag = h("select", {name: "tag"}, h("option", {value: ""}, "Any tag"),
    (tags.tags || []).map((t) => h("option", {value: t.tag}, `${t.tag} (${t.count})`)));
  const text = h("input", {name: "q", type: "search", placeholder: "words in the text"});
  const retired = h("input", {name: "retired", type: "checkbox"});
  const form = h("form", {class: "filters", "aria-label": "Filter memories"},
    field("Tag", tag), field("Text contains", text),
    h("div", {class: "field check"}, retired, h("label", {for: "retired-box"}, "Show retired (superseded or forgotten)")),
    h("button", {type: "submit"}, "Filter"));
  retired.id = "retired-box";
  const out = h("div", {class: "results"});
  const pager = h("div", {class: "pager"});
  append(host, [form, out, pager]);
  if (can("memory:write")) {
    host.insertBefore(newMemoryForm(name, async () => {
      cursors.length = 1;
      index = 0;
      await load();
      counts.textContent = countsText((await get(B(name))).bank);
    }), form);
  }
  const cursors = [null];
  let index = 0;
  const load = async () => {
    clear(out);
    clear(pager);
    let page;
    try {
      page = await get(B(name) + "/memories" + qs({limit: PAGE, cursor: cursors[index], tag: tag.value,
        q: text.value.trim(), include_superseded: retired.checked ? "true" : ""}));
    } catch (e) {
      out.append(notice("error", errorText(e)));
      return;
    }
    const rows = page.memories.map((m) => [
      h("span", {class: m.invalid_at || m.superseded_by ? "retired" : ""}, link(["banks", name, "memories", m.id], m.text),
        m.invalid_at || m.superseded_by ? h("small", null, " (retired)") : null),
      chips(m.tags), chips(m.entities), String(m.corroboration), m.pinned ? "yes" : "no", when(m.updated_at)]);
    out.append(table(`Memories of ${name}`, ["Text", "Tags", "Entities", "Corroboration", "Pinned", "Updated"], rows));
    if (!rows.length) out.append(notice("info", "No memory matches."));
    if (page.damaged && page.damaged.length) out.append(notice("error", `${page.damaged.length} stored records could not be read.`));
    cursors[index + 1] = page.next_cursor || null;
    append(pager, [
      h("button", {type: "button", disabled: index === 0, onclick: () => { index -= 1; load(); }}, "Previous page"),
      h("span", {class: "pageinfo"}, ` Page ${index + 1}${totalText(page.total)} `),
      h("button", {type: "button", disabled: !page.next_cursor, onclick: () => { index += 1; load(); }}, "Next page")]);
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    cursors.length = 1;
    index = 0;
    load();
  });
  await load();
}

function memoryFacts(m) {
  return h("dl", {class: "facts"},
    h("dt", null, "Text"), h("dd", {class: "memtext"}, m.text),
    h("dt", null, "Tags"), h("dd", null, chips(m.tags)),
    h("dt", null, "Entities"), h("dd", null, chips(m.entities)),
    h("dt", null, "Corroboration"), h("dd", null, String(m.corroboration)),
    h("dt", null, "Pinned"), h("dd", {class: "pinned"}, m.pinned ? "yes" : "no"),
    h("dt", null, "Confidence"), h("dd", null, m.confidence),
    h("dt", null, "Status"), h("dd", {class: "status"}, m.superseded_by ? `superseded by ${m.superseded_by}` : m.invalid_at ? "forgotten" : "live"),
    h("dt", null, "Revision"), h("dd", null, String(m.revision)),
    m.dates ? [h("dt", null, "Dates stated"), h("dd", {class: "dates"}, m.dates.map((d) => h("span", {class: "chip"},
      `${d.text}: ${when(d.start).slice(0, 10)} to ${when(d.end - 1).slice(0, 10)}`)))] : null,
    h("dt", null, "Updated"), h("dd", null, when(m.updated_at)));
}

export async function memory(host, bankName, id) {
  const path = B(bankName) + "/memories/" + seg(id);
  const [{memory: m}, hist] = await Promise.all([get(path), get(path + "/history")]);
  const live = !m.invalid_at && !m.superseded_by;
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  const reload = rerender();
  const act = (label, question, call) => h("button", {type: "button", onclick: () => confirmAction(actions, question, async () => {
    clear(msg);
    try {
      await call();
      reload();
    } catch (e) {
      msg.append(notice("error", `${label} failed: ${errorText(e)}`));
    }
  })}, label);
  const actions = h("div", {class: "actions"});
  append(host, [h("h2", null, "Memory ", h("code", null, id)), bankNav(bankName, "memory"),
    h("p", null, link(["banks", bankName], "← back to " + bankName)), memoryFacts(m), msg, actions]);
  if (can("memory:write") && live) {
    const text = h("textarea", {name: "text", rows: 3, value: m.text});
    const tags = h("input", {name: "tags", value: (m.tags || []).join(", ")});
    const ents = h("input", {name: "entities", value: (m.entities || []).join(", ")});
    const edit = h("form", {class: "edit", "aria-label": "Edit memory"}, h("h3", null, "Edit"),
      field("Text", text), field("Tags", tags, "comma-separated"), field("Entities", ents, "comma-separated"),
      h("button", {type: "submit"}, "Save changes"));
    edit.addEventListener("submit", (ev) => {
      ev.preventDefault();
      confirmAction(edit, "Save these changes to the memory?", async () => {
        clear(msg);
        try {
          await patch(path, {text: text.value, tags: splitList(tags.value), entities: splitList(ents.value)});
          reload();
        } catch (e) {
          msg.append(notice("error", `Save failed: ${errorText(e)}`));
        }
      });
    });
    const sup = supersedeForm(bankName, m, (successor) => confirmAction(sup,
      `Mark this memory superseded by “${successor.text}”?`, async () => {
        clear(msg);
        try { await post(path + "/supersede", {superseded_by: successor.id}); reload(); }
        catch (e) { msg.append(notice("error", `Supersede failed: ${errorText(e)}`)); }
      }));
    append(actions, [
      act(m.pinned ? "Unpin" : "Pin", m.pinned ? "Unpin this memory?" : "Pin this memory (always recalled first)?",
        () => post(path + "/pin", {pinned: !m.pinned})),
      " ",
      act("Forget", "Forget this memory? It stops being recalled; its history stays.", () => del(path)),
      edit, sup]);
  } else if (!live) {
    actions.append(notice("info", "This memory is retired: it is no longer recalled."));
  } else {
    actions.append(notice("info", "Your token may read this bank but not change it (no memory:write)."));
  }
  host.append(h("h3", null, "History"));
  const FIELDS = ["text", "tags", "entities", "pinned", "corroboration", "superseded_by", "invalid_at"];
  const changed = (r, prev) => prev ? FIELDS.filter((f) => JSON.stringify(r[f]) !== JSON.stringify(prev[f])) : [];
  const items = hist.revisions.map((r, i) => h("li", {class: "rev"},
    h("div", {class: "revhead"}, h("strong", null, r.op), ` · seq ${r.seq} · revision ${r.revision} · ${when(r.updated_at)}`,
      i ? h("span", {class: "changed"}, ` · changed: ${changed(r, hist.revisions[i - 1]).join(", ") || "nothing"}`) : null),
    h("div", {class: "revtext"}, r.text),
    r.tags && r.tags.length ? h("div", null, "tags: ", chips(r.tags)) : null,
    r.entities && r.entities.length ? h("div", null, "entities: ", chips(r.entities)) : null,
    r.pinned ? h("div", null, "pinned") : null)).reverse();
  host.append(h("ol", {class: "timeline", reversed: true, "aria-label": "Revisions, newest first"}, items));
  if (hist.damaged && hist.damaged.length) host.append(notice("error", `${hist.damaged.length} revisions could not be read.`));
}

// The live memories of the bank that could replace `m`: the one a pasted id names, or the best
// recalled for the words.
async function successors(bankName, m, words) {
  let found;
  if (ID.test(words)) {
    const one = await get(B(bankName) + "/memories/" + seg(words)).then((r) => r.memory, () => null);
    found = one && !one.invalid_at && !one.superseded_by ? [one] : [];
  } else {
    found = (await post(B(bankName) + "/recall", {query: words, limit: 10})).memories.map((x) => x.memory);
  }
  return found.filter((x) => x.id !== m.id);
}

// Supersede: find the replacement by its words, pick it, confirm (`chosen(memory)`).
function supersedeForm(bankName, m, chosen) {
  const words = h("input", {name: "successor-q", type: "search", autocomplete: "off"});
  const found = h("div", {class: "candidates", "aria-live": "polite"});
  const form = h("form", {class: "supersede", "aria-label": "Supersede memory"}, h("h3", null, "Supersede"),
    h("div", {class: "filters"}, field("Find the memory that replaces it", words, "words of its text, or its id"),
      h("button", {type: "submit", name: "find"}, "Find")), found);
  let picks = [];
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clear(found);
    if (!words.value.trim()) return found.append(notice("info", "Type words of the replacing memory first."));
    try { picks = await successors(bankName, m, words.value.trim()); }
    catch (e) { return found.append(notice("error", errorText(e))); }
    if (!picks.length) return found.append(notice("info", "No other live memory matches."));
    const boxes = picks.map((x, i) => h("input", {type: "radio", name: "successor", value: x.id, id: `successor-${i}`}));
    append(found, [h("fieldset", null, h("legend", null, "Replaced by"), picks.map((x, i) => h("div", {class: "field check"},
      boxes[i], h("label", {for: boxes[i].id}, x.text, " ", h("small", null, x.id))))),
    h("button", {type: "button", name: "supersede", onclick: () => {
      const i = boxes.findIndex((b) => b.checked);
      if (i < 0) found.append(notice("info", "Choose the memory that replaces this one."));
      else chosen(picks[i]);
    }}, "Supersede")]);
  });
  return form;
}

// Open conflicts: memories linked as stating the same thing with another value, newer first. A
// person resolves one by keeping one side: the other is superseded by it (restorable).
export async function conflicts(host, bankName) {
  append(host, [h("h2", null, "Conflicts in ", h("q", null, bankName)), bankNav(bankName, "conflicts"),
    h("p", null, "Memories that state the same thing about the same subject with another value. Recall ranks " +
      "the newer statement first; keep one side to retire the other (superseded, restorable).")]);
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  const out = h("div", {class: "results"});
  const pager = h("div", {class: "pager"});
  append(host, [msg, out, pager]);
  const reload = rerender();
  const writable = can("memory:write");
  const keep = (cell, winner, loser) => h("button", {type: "button", name: "keep", onclick: () => confirmAction(cell,
    `Keep “${winner.text}” and retire “${loser.text}”?`, async () => {
      try { await post(B(bankName) + "/memories/" + seg(loser.id) + "/supersede", {superseded_by: winner.id}); reload(); }
      catch (e) { msg.append(notice("error", `Resolve failed: ${errorText(e)}`)); }
    })}, `Keep “${winner.text.slice(0, 40)}${winner.text.length > 40 ? "…" : ""}”`);
  const cursors = [null];
  let index = 0;
  const load = async () => {
    clear(out);
    clear(pager);
    const page = await get(B(bankName) + "/conflicts" + qs({limit: PAGE, cursor: cursors[index]}));
    const rows = [];
    for (const c of page.conflicts) {
      for (const e of c.earlier) {
        const cell = h("div", {class: "resolve"});
        if (writable) append(cell, [keep(cell, c.memory, e), " ", keep(cell, e, c.memory)]);
        rows.push([
          h("span", null, link(["banks", bankName, "memories", c.memory.id], c.memory.text), h("small", null, ` (${when(c.memory.created_at)})`)),
          h("span", null, link(["banks", bankName, "memories", e.id], e.text), h("small", null, ` (${when(e.created_at)})`)),
          cell]);
      }
    }
    out.append(table(`Open conflicts of ${bankName}`, ["Newer statement", "Earlier statement", "Resolve"], rows));
    if (!rows.length) out.append(notice("info", "No open conflict."));
    cursors[index + 1] = page.next_cursor || null;
    append(pager, [
      h("button", {type: "button", disabled: index === 0, onclick: () => { index -= 1; load(); }}, "Previous page"),
      h("span", {class: "pageinfo"}, ` Page ${index + 1} `),
      h("button", {type: "button", disabled: !page.next_cursor, onclick: () => { index += 1; load(); }}, "Next page")]);
  };
  await load();
}

function budgetLine(label, b) {
  const pct = b.limit_bytes ? Math.round((100 * b.used_bytes) / b.limit_bytes) : 0;
  const id = "m" + Math.random().toString(36).slice(2);
  return h("div", {class: "budget"}, h("label", {for: id}, `${label}: ${b.used_bytes} of ${b.limit_bytes} bytes (${pct}%)`),
    h("meter", {id, min: 0, max: Math.max(1, b.limit_bytes), value: Math.min(b.used_bytes, Math.max(1, b.limit_bytes)),
      high: Math.max(1, b.limit_bytes) * 0.9}),
    b.truncated ? h("strong", {class: "warn"}, " Over budget: a rule is cut or omitted in the injection.") : null);
}

export async function rules(host, bankName) {
  const data = await get(B(bankName) + "/rules");
  append(host, [h("h2", null, "Rules of ", h("q", null, bankName)), bankNav(bankName, "rules"),
    budgetLine("Rules use of the injection budget", data.budget)]);
  const msg = h("div", {class: "messages", "aria-live": "polite"});
  host.append(msg);
  const reload = rerender();
  const writable = can("memory:write");
  for (const r of data.rules) {
    const area = h("textarea", {name: "content", rows: 8, value: r.content, readOnly: !writable});
    const form = h("form", {class: "rule", "aria-label": "Rule " + r.name},
      h("h3", null, r.name), h("p", {class: "meta"}, `${new TextEncoder().encode(r.content).length} bytes · updated ${when(r.updated_at)}`),
      field(`Markdown of ${r.name}`, area));
    if (writable) {
      append(form, [h("button", {type: "submit"}, "Save rule"), " ",
        h("button", {type: "button", onclick: () => confirmAction(form, `Delete rule ${r.name}?`, async () => {
          try { await del(B(bankName) + "/rules/" + seg(r.name)); reload(); } catch (e) { msg.append(notice("error", errorText(e))); }
        })}, "Delete rule")]);
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        confirmAction(form, `Save rule ${r.name}?`, async () => {
          try { await put(B(bankName) + "/rules/" + seg(r.name), {content: area.value}); reload(); }
          catch (e) { msg.append(notice("error", `Save failed: ${errorText(e)}`)); }
        });
      });
    }
    host.append(form);
  }
  if (!data.rules.length) host.append(notice("info", "This bank has no rules."));
  if (writable) {
    const nm = h("input", {name: "name"});
    const area = h("textarea", {name: "content", rows: 6});
    const form = h("form", {class: "rule new", "aria-label": "New rule"}, h("h3", null, "New rule"),
      field("Rule name", nm), field("Markdown", area), h("button", {type: "submit"}, "Create rule"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      confirmAction(form, `Create rule ${nm.value}?`, async () => {
        try { await put(B(bankName) + "/rules/" + seg(nm.value.trim()), {content: area.value}); reload(); }
        catch (e) { msg.append(notice("error", `Create failed: ${errorText(e)}`)); }
      });
    });
    host.append(form);
  }
}

// A signed share of a score, as read: "+1.234", "−0.280".
const signed = (v) => (v < 0 ? "−" : "+") + Math.abs(v).toFixed(3);

// One hit's score drawn as bars, one per signal the response carries, each its share of the score
// (`contributions`, summing to it; recency's is what it takes away), on the scale `max` of all hits.
function scoreBars(x, i, max) {
  const parts = Object.entries(x.contributions);
  return h("div", {class: "signals"}, parts.map(([s, c]) => {
    const id = `sig-${i}-${s}`;
    const raw = x.signals[s];
    return h("div", {class: "signal" + (c < 0 ? " neg" : "")}, h("label", {for: id}, s),
      h("meter", {id, min: 0, max, value: Math.abs(c), "data-signal": s, "data-contribution": String(c),
        title: `${s} = ${raw}: ${signed(c)} to the score`}),
      h("span", {class: "num"}, signed(c)));
  }), h("p", {class: "sum"}, `Sum of the parts: ${parts.reduce((a, [, c]) => a + c, 0).toFixed(3)} = score ${x.score.toFixed(3)}`));
}

// The injection text, exact; the truncation markers highlighted (as <mark>, text unchanged).
function injectionText(text) {
  const pre = h("pre", {class: "injection"});
  const re = /\[rule truncated:[^\]]*\]|\[omitted: over the injection budget\]/g;
  let at = 0;
  for (const m of text.matchAll(re)) {
    pre.append(text.slice(at, m.index), h("mark", {class: "marker"}, m[0]));
    at = m.index + m[0].length;
  }
  pre.append(text.slice(at));
  return pre;
}

export async function recall(host, bankName) {
  const q = h("input", {name: "query", type: "search", required: true});
  const limit = h("input", {name: "limit", type: "number", min: 1, max: 50, value: "10"});
  const form = h("form", {class: "recall", "aria-label": "Recall"}, field("Query", q), field("Results", limit),
    h("button", {type: "submit", name: "recall"}, "Recall"), " ",
    h("button", {type: "button", name: "preview", onclick: () => runPreview()}, "Preview injection"));
  const hits = h("section", {class: "hits", "aria-label": "Ranked memories"});
  const prev = h("section", {class: "preview", "aria-label": "Injection preview"});
  append(host, [h("h2", null, "Recall and preview in ", h("q", null, bankName)), bankNav(bankName, "recall"), form, hits, prev]);
  const runRecall = async () => {
    clear(hits);
    try {
      const r = await post(B(bankName) + "/recall", {query: q.value, limit: Number(limit.value) || 10});
      const max = Math.max(1e-9, ...r.memories.flatMap((x) => Object.values(x.contributions).map(Math.abs)));
      hits.append(h("h3", null, `Ranked memories (${r.memories.length}, retrieval ${r.retrieval})`));
      hits.append(h("ol", {class: "ranked"}, r.memories.map((x, i) => h("li", {class: "hit"},
        h("div", {class: "hithead"}, link(["banks", bankName, "memories", x.memory.id], x.memory.text), h("span", {class: "score"}, ` score ${x.score.toFixed(3)}`)),
        scoreBars(x, i, max)))));
      if (!r.memories.length) hits.append(notice("info", "No memory matched."));
    } catch (e) {
      hits.append(notice("error", errorText(e)));
    }
  };
  const runPreview = async () => {
    clear(prev);
    try {
      const p = await post(B(bankName) + "/preview", {query: q.value});
      append(prev, [h("h3", null, "What the model would get"),
        budgetLine("Rules", p.budget.rules), budgetLine("Memories", p.budget.memories),
        p.rules_truncated ? notice("error", "Rules are over the budget: the markers below show what the model does not see.") : null,
        h("h4", null, "Appended to the system prompt"), injectionText(p.system_prompt_section),
        h("h4", null, "Memory message"), p.message ? injectionText(p.message) : h("p", null, "No memory is injected."),
        h("p", {class: "meta"}, `${p.memories.length} memories, ${p.rules} rules, retrieval ${p.retrieval}`)]);
    } catch (e) {
      prev.append(notice("error", errorText(e)));
    }
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); runRecall(); });
}
