// Building the page: elements and text nodes only. Stored data is always set as text
// (textContent, text nodes, attribute values), never parsed as HTML.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value" || k === "checked" || k === "disabled" || k === "readOnly") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// "#/banks/" + name, each segment encoded: stored names never reach the URL unescaped.
export function link(segments, label, attrs) {
  return h("a", {href: "#/" + segments.map(encodeURIComponent).join("/"), ...(attrs || {})}, label);
}

export function when(ms) {
  if (ms === null || ms === undefined || ms === "") return "—";
  const d = typeof ms === "number" ? new Date(ms) : new Date(ms);
  return isNaN(d) ? String(ms) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

let fieldSeq = 0;

// A labelled control: <label for=id>text</label> + the control.
export function field(label, control, hint) {
  const id = control.id || "f" + (++fieldSeq);
  control.id = id;
  return h("div", {class: "field"}, h("label", {for: id}, label), control, hint ? h("small", null, hint) : null);
}

// A table from column headings and rows of cells. Each cell names its column (data-label): a
// narrow screen shows the rows as stacked cards, the heading beside each value (console.css).
export function table(caption, headings, rows) {
  return h("table", null, h("caption", null, caption),
    h("thead", null, h("tr", null, headings.map((t) => h("th", {scope: "col"}, t)))),
    h("tbody", null, rows.map((cells) => h("tr", null, cells.map((c, i) => h("td", {"data-label": headings[i] || null}, c))))));
}

// A message area: errors read {error, code} of the API verbatim.
export function notice(kind, ...text) {
  return h("p", {class: "notice " + kind, role: kind === "error" ? "alert" : "status"}, ...text);
}

// Ask before an action: an inline dialog with Confirm (focused) and Cancel.
export function confirmAction(host, question, action) {
  const box = h("div", {class: "confirm", role: "alertdialog", "aria-label": question});
  const yes = h("button", {type: "button", onclick: async () => { box.remove(); await action(); }}, "Confirm");
  const no = h("button", {type: "button", onclick: () => box.remove()}, "Cancel");
  append(box, [h("p", null, question), yes, " ", no]);
  host.querySelectorAll(".confirm").forEach((b) => b.remove());
  host.append(box);
  yes.focus();
}

// A function that renders the current view again (after a change), unless the user has moved
// to another view meanwhile.
export function rerender() {
  const here = location.hash;
  return () => {
    if (location.hash === here) window.dispatchEvent(new HashChangeEvent("hashchange"));
  };
}
