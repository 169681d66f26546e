// The public API with the user's token (sessionStorage only: never a URL, never a cookie).
// Every path is relative to the page, so the console works under a stage prefix.

const KEY = "cairn.token";

// Who is signed in (GET v1/me), set by the app.
export const session = {me: null};

export function can(permission) {
  return !!(session.me && session.me.permissions.includes(permission));
}

// A token without a bank allow-list: only such a token reaches what names no bank (team spaces,
// structured memory, tokens' minting, audit, status).
export function orgWide() {
  return !!(session.me && session.me.banks === null);
}

export class ApiError extends Error {
  constructor(status, body) {
    const msg = body && typeof body === "object" && body.error ? body.error : `HTTP ${status}`;
    super(msg);
    this.status = status;
    this.code = body && typeof body === "object" ? body.code || "" : "";
    this.details = body && typeof body === "object" ? body.details || null : null;
  }
}

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "" && v !== false) p.set(k, String(v));
  const s = p.toString();
  return s ? "?" + s : "";
}

export function seg(s) {
  return encodeURIComponent(s);
}

export async function api(method, path, body) {
  if (path.startsWith("/")) throw new Error("API paths are relative");
  const headers = {Accept: "application/json"};
  const t = token.get();
  if (t) headers.Authorization = "Bearer " + t;
  const init = {method, headers, credentials: "omit", cache: "no-store"};
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = {error: text.slice(0, 300)}; }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

export const get = (p) => api("GET", p);
export const post = (p, b) => api("POST", p, b === undefined ? {} : b);
export const put = (p, b) => api("PUT", p, b);
export const patch = (p, b) => api("PATCH", p, b);
export const del = (p) => api("DELETE", p);

// An error as a person reads it: the server's message and its stable code, verbatim.
export function errorText(err) {
  if (err instanceof ApiError) return `${err.message} (${err.code || "HTTP " + err.status})`;
  return String(err && err.message ? err.message : err);
}
