"use strict";
// skein serve's page: the runs, one run (its graph, timeline, step records,
// live as it goes), the flows and a form to start one, the approvals
// waiting, and the actions (start, cancel, resume, approve, reject), all
// through the JSON API that docs/serve.md describes. Plain script, no build
// step; graph.js draws the graphs. Every text from the server goes into the
// page as text (h() never parses HTML).

// ---- DOM ------------------------------------------------------------------

// h makes an element: attrs are attributes, on* listeners and "class";
// children are nodes, strings or arrays of them (null and false are left out).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, kids);
  return el;
}

// fill replaces el's children with kids (as h() takes them).
function fill(el, ...kids) {
  el.replaceChildren();
  return append(el, kids);
}

function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k !== null && k !== undefined && k !== false && k !== "") el.append(k);
  }
  return el;
}

const main = () => document.getElementById("main");

// ---- API --------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `the server answered ${status}`);
    this.status = status;
    this.code = e.code || "";
    this.diagnostics = (body && body.diagnostics) || e.diagnostics || [];
  }
}

const session = { csrf: "", by: "", tokenRequired: false, timer: 0 };

async function call(method, path, body) {
  const opts = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (method !== "GET") {
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-Skein-CSRF"] = session.csrf;
    opts.body = JSON.stringify(body || {});
  }
  const res = await fetch(path, opts);
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401) showLogin(err.message);
    throw err;
  }
  return data;
}

const get = (path) => call("GET", path);
const post = (path, body) => call("POST", path, body);
const enc = encodeURIComponent;
const flowURL = (path) => "/flows/" + path.split("/").map(enc).join("/");

// loadSession asks the server whether this page is logged in (it answers
// that without the token); it returns false when the page must ask for
// the token first.
async function loadSession() {
  const s = await get("/api/session");
  if (s.token_required && !s.logged_in) return false;
  setSession(s);
  return true;
}

function setSession(s) {
  session.csrf = s.csrf;
  session.by = s.by || "";
  session.tokenRequired = !!s.token_required;
  document.getElementById("who").textContent = session.by ? "deciding as " + session.by : "";
  if (!session.timer) session.timer = setInterval(() => { if (!document.hidden) refreshApprovalCount(); }, 10000);
}

// ---- Formatting ---------------------------------------------------------------

const ENDED = ["succeeded", "failed", "cancelled"];
const STATUS_WORDS = {
  pending: "not reached", running: "running", waiting: "waiting", succeeded: "succeeded", failed: "failed",
  cancelled: "cancelled", skipped: "skipped", interrupted: "interrupted", unrecorded: "end not recorded",
};

// statusOf is a status as the page names it ("not_run" is a step not reached).
function statusOf(status) {
  return !status || status === "not_run" ? "pending" : status;
}

function badge(status) {
  const s = statusOf(status);
  return h("span", { class: "badge st-" + s, "data-status": s }, STATUS_WORDS[s] || s);
}

function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

function timeEl(iso) {
  return iso ? h("time", { datetime: iso, title: new Date(iso).toString() }, fmtTime(iso)) : "";
}

// ago says how long ago iso was, roughly.
function ago(iso) {
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " days ago";
}

// visible shows what a task printed as `skein logs` does on a terminal:
// control characters other than tab and newline written out as escapes
// (\x1b, \r, \u009b), marked so they read apart from the text.
function visible(text) {
  const out = [];
  let plain = "";
  for (const ch of text || "") {
    const c = ch.codePointAt(0);
    let esc = null;
    if (ch === "\r") esc = "\\r";
    else if ((c < 0x20 && ch !== "\n" && ch !== "\t") || c === 0x7f) esc = "\\x" + c.toString(16).padStart(2, "0");
    else if ((c >= 0x80 && c < 0xa0) || c === 0x2028 || c === 0x2029) esc = "\\u" + c.toString(16).padStart(4, "0");
    if (esc === null) {
      plain += ch;
      continue;
    }
    if (plain) out.push(plain);
    plain = "";
    out.push(h("span", { class: "esc" }, esc));
  }
  if (plain) out.push(plain);
  return out;
}

function outputBlock(label, text, attrs) {
  return h("div", attrs || {}, h("h3", {}, label), h("pre", { class: "out" + (text ? "" : " none") }, visible(text)));
}

function json(v) {
  return JSON.stringify(v, null, 2);
}

// position writes file:line:col, shortened to the file's name, the full
// path in its title.
function position(file, line, col) {
  if (!file) return "";
  const short = file.split("/").slice(-2).join("/");
  return h("span", { class: "mono pos", title: `${file}:${line}:${col}` }, `${short}:${line}:${col}`);
}

// ---- Dialogs and notices ------------------------------------------------------

// confirmAction asks before an action; resolves true when confirmed.
function confirmAction(title, body, okLabel, danger) {
  const dlg = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  fill(document.getElementById("confirm-body"), [body].flat().map((b) => (typeof b === "string" ? h("p", {}, b) : b)));
  const ok = document.getElementById("confirm-ok");
  ok.textContent = okLabel;
  ok.className = danger ? "danger" : "";
  dlg.returnValue = "";
  dlg.showModal();
  ok.focus();
  return new Promise((resolve) => {
    dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
  });
}

function toast(text, bad) {
  const t = h("div", { class: "toast" + (bad ? " bad" : ""), role: bad ? "alert" : "status" }, text);
  document.getElementById("toasts").append(t);
  setTimeout(() => t.remove(), bad ? 9000 : 5000);
}

// act confirms, runs do() and says how it went; resolves do()'s value, or
// null when cancelled or failed.
async function act({ title, body, ok, danger, run, done }) {
  if (!(await confirmAction(title, body, ok, danger))) return null;
  try {
    const v = await run();
    if (done) toast(done(v));
    return v;
  } catch (e) {
    toast(e.message, true);
    return null;
  }
}

function errorBox(err) {
  const kids = [h("strong", {}, err.message)];
  if (err.diagnostics && err.diagnostics.length) kids.push(diagnosticsList(err.diagnostics));
  return h("div", { class: "error-box", role: "alert" }, kids);
}

function showLogin(message) {
  if (document.querySelector(".login")) return;
  const input = h("input", { type: "password", autocomplete: "current-password", "aria-label": "Token", required: true });
  const msg = h("p", { class: "muted" }, message || "");
  const form = h("form", { class: "card login", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      setSession(await post("/api/login", { token: input.value }));
      route();
    } catch (e) {
      msg.textContent = e.message;
    }
  } },
  h("h2", {}, "This server needs its token"),
  h("p", {}, "Paste the token it was started with (its --token-file or SKEIN_SERVE_TOKEN)."),
  h("div", { class: "row" }, input, h("button", { type: "submit" }, "Log in")), msg);
  fill(main(), form);
  input.focus();
}

// ---- Typed inputs ---------------------------------------------------------------

// typedField makes the form field of a flow input or an approval field
// ({name, type, help, required, default, choices}); value() returns its
// typed value, or undefined to leave it out (its default applies), and
// throws an Error naming the field when it does not parse.
function typedField(spec, idPrefix) {
  const id = idPrefix + spec.name;
  const type = spec.type || "string";
  const has = spec.default !== undefined && spec.default !== null;
  let input, value;
  if (spec.choices && spec.choices.length) {
    input = h("select", { id, name: spec.name },
      spec.required && !has ? h("option", { value: "" }, "choose…") : null,
      spec.choices.map((c) => h("option", { value: JSON.stringify(c), selected: has && JSON.stringify(c) === JSON.stringify(spec.default) }, String(c))));
    value = () => (input.value === "" ? undefined : JSON.parse(input.value));
  } else if (type === "bool") {
    input = h("input", { id, name: spec.name, type: "checkbox", checked: has && spec.default === true });
    value = () => input.checked;
  } else if (type === "int" || type === "float") {
    input = h("input", { id, name: spec.name, type: "number", step: type === "int" ? "1" : "any", value: has ? String(spec.default) : "",
      inputmode: type === "int" ? "numeric" : "decimal" });
    value = () => {
      if (input.value === "") return undefined;
      const n = Number(input.value);
      if (!Number.isFinite(n) || (type === "int" && !Number.isInteger(n))) throw new Error(`${spec.name} must be ${type === "int" ? "a whole number" : "a number"}`);
      return n;
    };
  } else if (type === "string") {
    input = h("input", { id, name: spec.name, type: "text", value: has ? spec.default : "" });
    // Left empty, text is left out: its default applies, and a required
    // field is refused as missing (not given as "").
    value = () => (input.value === "" ? undefined : input.value);
  } else {
    // list, dict, any: JSON (a plain word for any is taken as text)
    input = h("textarea", { id, name: spec.name, spellcheck: "false", placeholder: type === "list" ? '["a", "b"]' : type === "dict" ? '{"key": "value"}' : "JSON or text" },
      has ? JSON.stringify(spec.default) : "");
    value = () => {
      const t = input.value.trim();
      if (t === "") return undefined;
      try {
        const v = JSON.parse(t);
        if (type === "list" && !Array.isArray(v)) throw new Error();
        if (type === "dict" && (typeof v !== "object" || v === null || Array.isArray(v))) throw new Error();
        return v;
      } catch {
        if (type === "any") return t;
        throw new Error(`${spec.name} must be a JSON ${type === "list" ? "list, like [\"a\", \"b\"]" : "object, like {\"key\": \"value\"}"}`);
      }
    };
  }
  const label = h("label", { class: "field", for: id },
    h("span", {}, spec.name, " ", h("small", { class: "muted" }, spec.choices && spec.choices.length ? "a choice" : typeWords(type), spec.required ? ", required" : "")),
    input,
    spec.help ? h("div", { class: "help" }, spec.help) : null,
    has && type !== "bool" ? h("div", { class: "help" }, "Default: ", h("code", {}, JSON.stringify(spec.default))) : null);
  return { el: label, value, name: spec.name };
}

function typeWords(t) {
  return { string: "text", int: "whole number", float: "number", bool: "yes or no", list: "list (JSON)", dict: "object (JSON)", any: "any value" }[t] || t;
}

// collect reads typed fields into an object, leaving out those left to
// their default.
function collect(fields) {
  const out = {};
  for (const f of fields) {
    const v = f.value();
    if (v !== undefined) out[f.name] = v;
  }
  return out;
}

// ---- Router -----------------------------------------------------------------------

let cleanups = [];

function onLeave(fn) {
  cleanups.push(fn);
}

function go(url, replace) {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  route();
}

// route shows the page the address names.
function route() {
  for (const fn of cleanups) fn();
  cleanups = [];
  const url = new URL(location.href);
  const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const section = parts[0] || "runs";
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("on", a.dataset.nav === section);
  let page;
  if (section === "runs" && parts.length === 1) page = runsPage(url.searchParams);
  else if (section === "runs") page = runPage(parts[1], url.searchParams);
  else if (section === "approvals") page = approvalsPage();
  else if (section === "flows" && parts.length === 1) page = flowsPage();
  else if (section === "flows") page = flowPage(parts.slice(1).join("/"));
  else page = Promise.resolve(fill(main(), h("div", { class: "empty" }, "No such page. ", h("a", { href: "/runs" }, "See the runs."))));
  Promise.resolve(page).catch((e) => {
    if (e.status !== 401) fill(main(), errorBox(e));
  });
  refreshApprovalCount();
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a");
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith("/api/")) return;
  ev.preventDefault();
  go(url.pathname + url.search);
});
window.addEventListener("popstate", route);

// poll runs fn every ms while the page is shown.
function poll(fn, ms) {
  const t = setInterval(() => {
    if (!document.hidden) fn();
  }, ms);
  onLeave(() => clearInterval(t));
}

async function refreshApprovalCount() {
  try {
    const a = await get("/api/approvals");
    const n = (a.approvals || []).length;
    const el = document.getElementById("approval-count");
    el.hidden = n === 0;
    el.textContent = String(n);
  } catch {
    // the page says what failed; the count waits for the next time
  }
}

// ---- Runs ---------------------------------------------------------------------------

const RUN_STATUSES = ["running", "waiting", "interrupted", "succeeded", "failed", "cancelled"];

async function runsPage(params) {
  const status = params.get("status") || "", flow = params.get("flow") || "", text = params.get("text") || "";
  const cursor = params.get("cursor") || "";
  const setParam = (k, v) => {
    const p = new URLSearchParams(location.search);
    if (v) p.set(k, v);
    else p.delete(k);
    p.delete("cursor");
    go("/runs" + (p.toString() ? "?" + p : ""), true);
  };
  const flowSelect = h("select", { id: "f-flow", onchange: (e) => setParam("flow", e.target.value) }, h("option", { value: "" }, "all flows"));
  if (flow) flowSelect.append(h("option", { value: flow, selected: true }, flow));
  let timer;
  const search = h("input", { id: "f-text", type: "search", value: text, placeholder: "id, flow, file or error",
    oninput: (e) => { clearTimeout(timer); timer = setTimeout(() => setParam("text", e.target.value.trim()), 350); } });
  const filters = h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
    h("label", {}, "Status", h("br"), h("select", { id: "f-status", onchange: (e) => setParam("status", e.target.value) },
      h("option", { value: "" }, "any"), RUN_STATUSES.map((s) => h("option", { value: s, selected: s === status }, STATUS_WORDS[s])))),
    h("label", {}, "Flow", h("br"), flowSelect),
    h("label", {}, "Search", h("br"), search));
  const body = h("tbody");
  const pager = h("div", { class: "pager" });
  const queueBox = cursor ? null : h("section", { id: "queue", class: "queue" });
  fill(main(), h("div", { class: "row spread" }, h("h1", {}, "Runs"), h("a", { class: "button", href: "/flows" }, "Start a run…")),
    h("p"), filters, h("div", { class: "table-wrap" }, h("table", { class: "runs-table" },
      h("thead", {}, h("tr", {}, ["Status", "Run", "Flow", "Started", "Duration", "Started by", "Trigger", "Stopped at"].map((c) => h("th", {}, c)))), body)), pager,
    queueBox);
  if (text) {
    search.focus();
    search.setSelectionRange(text.length, text.length);
  }
  get("/api/flows").then((f) => {
    const names = [...new Set((f.flows || []).map((x) => x.name).filter(Boolean))].sort();
    for (const n of names) if (n !== flow) flowSelect.append(h("option", { value: n }, n));
  }).catch(() => {});

  const q = new URLSearchParams();
  if (status) q.set("status", status);
  if (flow) q.set("flow", flow);
  if (text) q.set("text", text);
  if (cursor) q.set("cursor", cursor);
  q.set("limit", "50");
  const load = async () => {
    if (queueBox) loadQueue(queueBox).catch(() => {});
    const data = await get("/api/runs?" + q);
    const runs = data.runs || [];
    fill(body, ...runs.map(runRow));
    if (!runs.length) body.append(h("tr", {}, h("td", { colspan: 8, class: "empty" }, status || flow || text ? "No run matches." : "No runs yet. Start one from a flow.")));
    const older = new URLSearchParams(location.search);
    older.set("cursor", data.next || "");
    fill(pager, 
      cursor ? h("button", { type: "button", class: "quiet", onclick: () => history.back() }, "← Newer") : null,
      cursor ? h("a", { href: "/runs" + (status || flow || text ? "?" + new URLSearchParams({ ...(status && { status }), ...(flow && { flow }), ...(text && { text }) }) : "") }, "Newest") : null,
      data.next ? h("a", { class: "button quiet", href: "/runs?" + older }, "Older →") : null);
  };
  await load();
  if (!cursor) poll(() => load().catch(() => {}), 4000);
}

// QUEUE_BADGES maps a queue item's state to the badge of the run status
// that looks like it.
const QUEUE_BADGES = { queued: "pending", running: "running", done: "succeeded", skipped: "skipped", replaced: "cancelled", failed: "failed" };

// loadQueue shows the queue (docs/serve.md): what triggers and webhooks
// queued, newest first, each with its state, trigger and run.
async function loadQueue(box) {
  const items = (await get("/api/queue?limit=20")).queue || [];
  if (!items.length) {
    fill(box, h("h2", {}, "Queue"),
      h("p", { class: "muted" }, "Nothing queued. Flows with trigger() start here: on a schedule, or when a webhook is delivered."));
    return;
  }
  const waiting = items.filter((it) => it.state === "queued").length;
  const row = (it) => h("tr", { "data-item": String(it.n), "data-state": it.state },
    h("td", {}, h("span", { class: "badge st-" + (QUEUE_BADGES[it.state] || "pending"), title: it.error || "" }, it.state)),
    h("td", { "data-label": "Flow" }, it.flow),
    h("td", { "data-label": "Trigger" }, it.parent
      ? h("span", {}, "emitted by ", h("a", { href: "/runs/" + enc(it.parent), class: "mono" }, it.parent), " (depth " + it.depth + ")")
      : it.trigger),
    h("td", { "data-label": "Key" }, it.key || ""),
    h("td", { "data-label": "Queued" }, timeEl(it.enqueued)),
    h("td", { "data-label": "Run" }, it.run ? h("a", { href: "/runs/" + enc(it.run), class: "mono" }, it.run)
      : it.error ? h("span", { class: "muted" }, truncate(it.error, 90)) : ""));
  fill(box, h("h2", {}, "Queue"),
    h("p", { class: "muted" }, waiting ? waiting + " waiting to start" : "Nothing waiting to start."),
    h("div", { class: "table-wrap" }, h("table", { class: "runs-table queue-table" },
      h("thead", {}, h("tr", {}, ["State", "Flow", "Trigger", "Key", "Queued", "Run"].map((c) => h("th", {}, c)))),
      h("tbody", {}, items.map(row)))));
}

// childrenList is the work items a run emitted (the hopper), each
// linked to its run once it has one.
function childrenList(items) {
  return h("details", { id: "run-children", open: true },
    h("summary", {}, `Emitted ${items.length} work item${items.length === 1 ? "" : "s"}`),
    h("ul", { class: "children" }, items.map((it) => h("li", { "data-item": String(it.n), "data-state": it.state },
      h("span", { class: "badge st-" + (QUEUE_BADGES[it.state] || "pending"), title: it.error || "" }, it.state), " ",
      it.flow, " ",
      it.run ? h("a", { class: "mono", href: "/runs/" + enc(it.run) }, it.run)
        : it.error ? h("span", { class: "muted" }, truncate(it.error, 90)) : h("span", { class: "muted" }, "not started yet")))));
}

function runRow(r) {
  const at = r.at ? (r.status === "waiting" ? "waiting at " : r.status === "failed" ? "failed at " : "") + r.at : "";
  return h("tr", { "data-run": r.id },
    h("td", {}, badge(r.status)),
    h("td", { "data-label": "Run" }, h("a", { href: "/runs/" + enc(r.id), class: "mono" }, r.id)),
    h("td", { "data-label": "Flow" }, r.flow),
    h("td", { "data-label": "Started" }, timeEl(r.started)),
    h("td", { "data-label": "Took" }, fmtMs(r.duration_ms)),
    h("td", { "data-label": "By" }, r.started_by || h("span", { class: "muted" }, "command line")),
    h("td", { "data-label": "Trigger", class: "trigger" }, r.trigger || h("span", { class: "muted" }, "skein run")),
    h("td", { "data-label": "At" }, at, r.error && r.error.message ? h("div", { class: "muted" }, truncate(r.error.message, 90)) : null));
}

// ---- One run -------------------------------------------------------------------------

async function runPage(id, params) {
  const view = new RunView(id, params.get("step"));
  onLeave(() => view.close());
  await view.load();
}

// RunView is the page of one run: fetched whole, then kept current by the
// run's event stream.
class RunView {
  constructor(id, step) {
    this.id = id;
    this.step = step;
    this.live = new Map(); // attempt id -> {stdout, stderr} printed so far
    this.closed = false;
  }

  async load() {
    const t0 = performance.now();
    this.data = await get("/api/runs/" + enc(this.id));
    const t1 = performance.now();
    this.render();
    // How long the page took, read by the browser test.
    window.skeinTiming = { total: performance.now() - t0, fetch: t1 - t0, ...this.graph.timing };
    this.follow();
  }

  close() {
    this.closed = true;
    if (this.es) this.es.close();
    if (this.graph) this.graph.close();
    clearTimeout(this.refetch);
  }

  // follow opens the run's event stream while it is not over.
  follow() {
    const r = this.data.run;
    if (this.closed || this.es || ENDED.includes(r.status)) return;
    const es = new EventSource("/api/runs/" + enc(r.id) + "/events");
    this.es = es;
    es.addEventListener("output", (ev) => this.onOutput(JSON.parse(ev.data)));
    for (const kind of ["attempt", "run", "approval"]) es.addEventListener(kind, () => this.soon());
    es.addEventListener("end", () => {
      es.close();
      this.es = null;
      this.soon(0);
    });
    es.onerror = () => {
      // The server went away or closed the stream: stop, and read the run
      // once more (a stream that ended without "end" is not retried).
      es.close();
      this.es = null;
      this.soon(1000);
    };
  }

  // soon reads the run again shortly (events come in bursts).
  soon(ms = 150) {
    if (this.closed || this.pending) return;
    this.pending = true;
    this.refetch = setTimeout(async () => {
      this.pending = false;
      try {
        this.data = await get("/api/runs/" + enc(this.id));
        this.update();
        this.follow();
      } catch {
        // shown at the next read
      }
    }, ms);
  }

  onOutput(o) {
    const buf = this.live.get(o.attempt) || { stdout: "", stderr: "" };
    buf[o.stream] = (buf[o.stream] || "") + o.text;
    this.live.set(o.attempt, buf);
    const pre = document.querySelector(`[data-attempt="${o.attempt}"] [data-stream="${o.stream}"] pre`);
    if (pre) {
      append(pre, visible(o.text));
      pre.scrollTop = pre.scrollHeight;
    }
  }

  // nodeInfo is each step's status and counts, for the graph.
  nodeInfo() {
    const dur = new Map((this.data.steps || []).map((s) => [s.name, s.duration_ms]));
    const info = new Map();
    for (const n of this.data.graph.nodes) {
      info.set(n.id, { status: statusOf(n.status), visits: n.visits || 0, attempts: n.attempts || 0, duration_ms: dur.get(n.id) });
    }
    const r = this.data.run;
    if (r.status === "succeeded" || r.status === "failed") {
      const end = info.get("END");
      if (end && r.status === "succeeded") end.status = "succeeded";
    }
    return info;
  }

  render() {
    const d = this.data;
    this.headEl = h("div");
    this.approvalsEl = h("div");
    this.panel = h("aside", { class: "card panel-sticky", id: "step-panel", "aria-live": "polite" });
    const graphBox = h("div", { id: "graph" });
    this.timelineEl = h("div", { class: "timeline", id: "timeline" });
    fill(main(), this.headEl, this.approvalsEl,
      h("div", { class: "run-grid" },
        h("div", {},
          h("section", { class: "card" }, h("h2", {}, "Graph"), graphBox, legend()),
          h("section", { class: "card" }, h("h2", {}, "What ran, in order"), this.timelineEl)),
        this.panel));
    this.graph = new FlowGraph(graphBox, d.graph, { onSelect: (id) => this.select(id) });
    this.update();
  }

  // update shows this.data in the parts already drawn.
  update() {
    const d = this.data, r = d.run;
    this.head(r);
    // The decide forms are drawn again only when what waits changes (not
    // under someone typing a reason).
    const waiting = (d.approvals || []).filter((a) => a.status === "waiting");
    const key = waiting.map((a) => a.place + "#" + a.visit).join(",");
    if (key !== this.waitingKey) {
      this.waitingKey = key;
      fill(this.approvalsEl, waiting.map((a) => approvalCard({ ...a, run: r }, () => this.soon(0), true)));
    }
    this.graph.setRun(this.nodeInfo());
    this.timeline();
    this.showStep();
  }

  head(r) {
    const actions = [];
    if (r.status === "running") {
      actions.push(h("button", { type: "button", class: "danger", id: "cancel", onclick: () => act({
        title: "Cancel this run?", body: `Its running steps are stopped and its exit handler runs. The run ends cancelled.`,
        ok: "Cancel the run", danger: true, run: () => post(`/api/runs/${enc(r.id)}/cancel`),
        done: (v) => { this.soon(0); return "Cancelling " + v.run.id; } }) }, "Cancel"));
    }
    if (["failed", "cancelled", "interrupted", "waiting"].includes(r.status)) {
      actions.push(h("button", { type: "button", id: "resume", onclick: () => this.resume(null) }, "Resume"));
    }
    const err = r.error;
    const failedStep = err && (this.data.steps || []).find((s) => s.name === err.step);
    const pos = failedStep && failedStep.error && failedStep.error.file ? failedStep.error : failedStep;
    fill(this.headEl, h("section", { class: "card" },
      h("div", { class: "row spread" },
        h("div", { class: "row" }, h("h1", {}, r.flow), badge(r.status)),
        h("div", { class: "row" }, actions)),
      h("div", { class: "facts" },
        h("span", {}, "Run ", h("b", { class: "mono" }, r.id)),
        h("span", {}, "Started ", h("b", {}, timeEl(r.started))),
        h("span", {}, ENDED.includes(r.status) ? "Took " : "For ", h("b", {}, fmtMs(r.duration_ms))),
        h("span", {}, "By ", h("b", {}, r.started_by || "the command line")),
        r.trigger ? h("span", { id: "run-trigger" }, "Trigger ", h("b", {}, r.trigger)) : null,
        r.resumed_from ? h("span", {}, "Continues ", h("a", { class: "mono", href: "/runs/" + enc(r.resumed_from) }, r.resumed_from)) : null,
        r.parent ? h("span", { id: "run-parent" }, "Emitted by ", h("a", { class: "mono", href: "/runs/" + enc(r.parent) }, r.parent), ` (depth ${r.depth})`) : null,
        r.file ? h("span", { title: r.file }, "File ", h("b", { class: "mono" }, r.file.split("/").slice(-2).join("/"))) : null),
      err ? h("div", { class: "error-box", role: "alert", id: "run-error" },
        h("strong", {}, err.step && !err.message.includes(`"${err.step}"`) ? `Stopped at ${err.step}: ` : "", err.message),
        h("div", { class: "muted" }, err.code ? `(${err.code}) ` : "", pos && pos.file ? position(pos.file, pos.line, pos.col) : "",
          err.step ? [" ", h("a", { href: "?step=" + enc(err.step), onclick: (e) => { e.preventDefault(); this.select(err.step); } }, "show the step")] : "")) : null,
      r.status === "waiting" && !(this.data.approvals || []).some((a) => a.status === "waiting")
        ? h("div", { class: "note" }, `Waiting at ${r.at || "a step"}.`) : null,
      r.children && r.children.length ? childrenList(r.children) : null,
      r.inputs && Object.keys(r.inputs).length ? h("details", {}, h("summary", {}, "Inputs"), h("pre", {}, json(r.inputs))) : null,
      r.result && r.result.output !== undefined && r.result.output !== null ? h("details", {}, h("summary", {}, "Output"), h("pre", {}, json(r.result.output))) : null));
  }

  resume(from) {
    const r = this.data.run;
    const inPlace = r.status === "interrupted" || r.status === "waiting";
    return act({
      title: from ? `Run again from ${from}?` : "Resume this run?",
      body: [from ? `${from} and every step that completed after it run again; what completed before it is kept.` : "Steps that completed are kept; the run goes on from where it stopped.",
        inPlace ? "The run continues under its own id." : "A new run continues this one; this one stays as it is."],
      ok: from ? "Run again from " + from : "Resume",
      run: () => post(`/api/runs/${enc(r.id)}/resume`, from ? { from } : {}),
      done: (v) => {
        if (v.run.id !== r.id) go("/runs/" + enc(v.run.id));
        else this.soon(0);
        return v.run.id !== r.id ? `Resumed as ${v.run.id}` : "Resumed";
      },
    });
  }

  timeline() {
    const at = this.data.attempts || [];
    const t0 = new Date(this.data.run.started).getTime();
    const t1 = Math.max(t0 + 1, ...at.map((a) => (a.ended ? new Date(a.ended) : Date.now()) - 0));
    const span = t1 - t0;
    if (!at.length) {
      fill(this.timelineEl, h("p", { class: "muted" }, ENDED.includes(this.data.run.status)
        ? "Nothing ran that is recorded step by step (functions and routers are computed, not recorded)." : "Nothing has started yet."));
      return;
    }
    const rows = at.map((a) => {
      const s = new Date(a.started).getTime() - t0;
      const e = (a.ended ? new Date(a.ended).getTime() : Date.now()) - t0;
      const bar = h("div", { class: "tl-bar" });
      bar.style.left = (100 * s) / span + "%";
      bar.style.width = Math.max(0.3, (100 * (e - s)) / span) + "%";
      return h("div", { class: "tl-row" + (a.step === this.step ? " sel" : ""), "data-step": a.step, role: "button", tabindex: 0,
        title: `${attemptPlace(a)}: ${STATUS_WORDS[a.status] || a.status}, visit ${a.visit}, attempt ${a.attempt}`,
        onclick: () => this.select(a.step, true), onkeydown: (ev) => { if (ev.key === "Enter") this.select(a.step, true); } },
      h("div", { class: "tl-name" }, attemptPlace(a), a.attempt > 1 ? h("span", { class: "muted" }, ` (try ${a.attempt})`) : null),
      h("div", { class: "tl-track st-" + a.status }, bar),
      h("div", { class: "tl-dur" }, a.ended ? fmtMs(a.duration_ms) : STATUS_WORDS[a.status] || a.status));
    });
    fill(this.timelineEl, ...rows);
  }

  select(id, center) {
    this.step = id;
    const u = new URL(location.href);
    u.searchParams.set("step", id);
    history.replaceState(null, "", u.pathname + u.search);
    this.graph.select(id, center);
    for (const row of this.timelineEl.querySelectorAll(".tl-row")) row.classList.toggle("sel", row.dataset.step === id);
    this.showStep();
    if (window.matchMedia("(max-width: 960px)").matches) this.panel.scrollIntoView({ behavior: "smooth", block: "start" });
  }

  // showStep fills the side panel with the chosen step's record.
  showStep() {
    const d = this.data;
    const id = this.step;
    if (id) this.graph.select(id, false);
    const node = id && d.graph.nodes.find((n) => n.id === id);
    if (!node) {
      fill(this.panel, h("h2", {}, "Steps"), h("p", { class: "muted" }, "Choose a step in the graph or the list to see what it did: its inputs, command, output and errors."));
      return;
    }
    // Keep which attempts are open across updates.
    const open = new Set([...this.panel.querySelectorAll("details.attempt[open]")].map((e) => e.dataset.attempt));
    const first = this.panel.dataset.step !== id;
    this.panel.dataset.step = id;
    const step = (d.steps || []).find((s) => s.name === id) || {};
    const status = statusOf(step.status || node.status);
    const attempts = (d.attempts || []).filter((a) => a.step === id);
    const r = d.run;
    // A step that failed runs again when the run resumes; one that
    // succeeded can be run again, with what came after it.
    const ended = r.status !== "running";
    const redo = !ended ? null
      : status === "failed" && r.status !== "succeeded"
        ? h("button", { type: "button", class: "quiet", id: "resume-step", onclick: () => this.resume(null) }, "Resume the run (runs this step again)")
        : status === "succeeded" && attempts.length
          ? h("button", { type: "button", class: "quiet", id: "resume-from", onclick: () => this.resume(id) }, "Run again from this step")
          : null;
    fill(this.panel, 
      h("div", { class: "row spread" }, h("h2", { id: "step-name" }, id), badge(status)),
      h("dl", { class: "kv" },
        h("dt", {}, "Kind"), h("dd", {}, KIND_NAMES[node.kind] || node.kind),
        node.file ? [h("dt", {}, "Written at"), h("dd", {}, position(node.file, node.line, node.col))] : null,
        h("dt", {}, "Visits"), h("dd", {}, String(step.visits || node.visits || 0)),
        h("dt", {}, "Attempts"), h("dd", {}, String(step.attempts || node.attempts || 0)),
        step.duration_ms ? [h("dt", {}, "Time"), h("dd", {}, fmtMs(step.duration_ms))] : null),
      step.error ? h("div", { class: "error-box", id: "step-error" },
        h("strong", {}, step.error.message), h("div", {}, step.error.code ? h("span", { class: "muted" }, `(${step.error.code}) `) : null,
          step.error.file ? position(step.error.file, step.error.line, step.error.col) : null),
        step.error.trace && step.error.trace.length ? h("details", { class: "trace", id: "step-trace" },
          h("summary", {}, "Where it failed (trace)"), h("pre", {}, step.error.trace.join("\n"))) : null) : null,
      definition(node),
      isContainer(node) ? h("div", {}, h("h3", {}, node.kind === "loop" ? "Repeats" : "For each item"),
        h("ul", {}, node.body.map((b) => h("li", {}, h("a", { href: "?step=" + enc(b), onclick: (e) => { e.preventDefault(); this.select(b, true); } }, b))))) : null,
      (d.approvals || []).filter((a) => a.step === id && a.status !== "waiting").map((a) => h("div", { class: "note decision" },
        h("strong", {}, a.place || a.step, ": ", { approved: "approved", rejected: "rejected", timed_out: "no decision in time" }[a.status] || a.status),
        a.by ? " by " + a.by : "", a.decided ? [" at ", timeEl(a.decided)] : "",
        a.reason ? h("div", {}, "Reason: ", a.reason) : null,
        a.values && Object.keys(a.values).length ? h("pre", {}, json(a.values)) : null)),
      agentRecord(step.agent),
      redo ? h("p", {}, redo) : null,
      attempts.length ? h("h3", {}, attempts.length === 1 ? "What it did" : `Its ${attempts.length} attempts`) : null,
      attempts.map((a, i) => this.attempt(a, first ? i === attempts.length - 1 : open.has(String(a.id)))),
      !attempts.length && ["fn", "router", "noop"].includes(node.kind) && status !== "pending"
        ? h("p", { class: "muted" }, "Computed by the run (not recorded step by step).") : null);
  }

  attempt(a, open) {
    const live = this.live.get(a.id) || {};
    const running = a.status === "running";
    const stdout = running ? live.stdout || a.stdout || "" : a.stdout || "";
    const stderr = running ? live.stderr || a.stderr || "" : a.stderr || "";
    const out = a.output;
    return h("details", { class: "attempt", "data-attempt": a.id, open },
      h("summary", {}, badge(a.status), h("span", { class: "place" }, attemptPlace(a)),
        h("span", { class: "muted" }, `visit ${a.visit}` + (a.attempt > 1 ? `, attempt ${a.attempt}` : "")),
        h("span", { class: "muted" }, a.ended ? fmtMs(a.duration_ms) : "")),
      h("dl", { class: "kv" },
        h("dt", {}, "Started"), h("dd", {}, timeEl(a.started)),
        a.ended ? [h("dt", {}, "Ended"), h("dd", {}, timeEl(a.ended))] : null,
        a.kind === "task" || a.kind === "shell" ? [h("dt", {}, "Exit code"), h("dd", {}, a.ended ? String(a.exit_code) : "")] : null,
        a.on_exit ? [h("dt", {}, "Part of"), h("dd", {}, "the exit handler")] : null),
      a.error ? h("div", { class: "error-box" }, h("strong", {}, a.error), a.code ? h("div", { class: "muted" }, `(${a.code})`) : null) : null,
      rendered(a.rendered),
      a.kind === "task" || a.kind === "shell" || stdout || stderr
        ? [outputBlock("Output (stdout)", stdout, { "data-stream": "stdout" }), outputBlock("Errors (stderr)", stderr, { "data-stream": "stderr" })] : null,
      a.truncated ? h("p", { class: "muted" }, "The output was cut: only its first part was kept.") : null,
      a.model ? h("div", {}, h("h3", {}, "Model call"), h("p", { class: "tokens" }, a.model, ": ",
        `${a.prompt_tokens} tokens in, ${a.completion_tokens} out`)) : null,
      a.answer ? h("div", {}, h("h3", {}, "Answer"), h("pre", {}, visible(a.answer))) : null,
      out !== null && out !== undefined ? h("details", {}, h("summary", {}, "Output value"), h("pre", {}, json(out))) : null);
  }
}

// attemptPlace names an attempt for people: its place, with an agent's
// turns and tool calls ("fix@2.1 › fix") said in words ("fix (turn 2,
// tool call 1)").
function attemptPlace(a) {
  const parts = a.path ? a.path.split("/") : [];
  const m = /^(.*)@(\d+)(?:\.(\d+))?$/.exec(parts[parts.length - 1] || "");
  if (!m || m[1] !== a.step) return a.place || a.step;
  parts.pop();
  return [...parts, `${a.step} (turn ${m[2]}${m[3] ? `, tool call ${m[3]}` : ""})`].join(" › ");
}

// agentRecord shows what an agent step did in its latest visit: the tool
// calls its model made, with their results, and the tools it was granted.
function agentRecord(ag) {
  if (!ag) return null;
  const calls = ag.tool_calls || [];
  const grants = ag.grants || [];
  return h("div", { class: "agent" },
    h("p", { class: "muted" }, `${ag.turns} model ${ag.turns === 1 ? "turn" : "turns"}, ${calls.length} tool ${calls.length === 1 ? "call" : "calls"}`),
    calls.length ? [h("h3", {}, "Tool calls"), h("div", { class: "table-wrap" }, h("table", { class: "calls", id: "tool-calls" },
      h("thead", {}, h("tr", {}, ["Turn", "Tool", "Arguments", "Result"].map((c) => h("th", {}, c)))),
      h("tbody", {}, calls.map((c) => h("tr", {}, h("td", {}, String(c.turn || "")), h("td", {}, c.tool || ""),
        h("td", {}, h("code", {}, visible(typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments)))),
        h("td", {}, c.ok === false ? [badge("failed"), c.code ? h("span", { class: "muted" }, ` (${c.code})`) : null] : null,
          h("pre", {}, visible(truncate(c.result || "", 600))))))))) ] : null,
    grants.length ? [h("h3", {}, "Tools granted"), h("ul", { id: "grants" }, grants.map((g) => h("li", {},
      h("code", {}, g.tool), ` at turn ${g.turn}`, g.reason ? [": ", g.reason] : "")))] : null);
}

// argvText is a command's words as a shell line, quoting those that need it.
function argvText(argv) {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
}

// rendered shows what an attempt actually ran, its templates filled in:
// the command, the messages sent to the model, or a child flow's inputs.
function rendered(r) {
  if (!r) return null;
  if (r.argv && r.argv.length) {
    const sh = r.argv.length === 3 && r.argv[0] === "/bin/sh" && r.argv[1] === "-c";
    return h("div", { class: "rendered" }, h("h3", {}, sh ? "Script it ran" : "Command it ran"),
      h("pre", { class: "def", "data-rendered": "argv" }, visible(sh ? r.argv[2] : argvText(r.argv))));
  }
  if (r.inputs) {
    return h("div", { class: "rendered" }, h("h3", {}, "Inputs it was given"), h("pre", { class: "def", "data-rendered": "inputs" }, visible(json(r.inputs))));
  }
  if (r.messages && r.messages.length) {
    const who = { system: "Instructions", user: "Prompt", assistant: "Model", tool: "Tool result" };
    return h("div", { class: "rendered" }, h("h3", {}, "Prompt it sent"),
      r.messages.map((m) => h("div", { class: "message" }, h("div", { class: "muted" }, who[m.role] || m.role),
        h("pre", { class: "def", "data-rendered": m.role }, visible(m.content)))));
  }
  return null;
}

// definition shows what a step is written to do: its command, script,
// prompt, question or function.
function definition(n) {
  const rows = [];
  const add = (label, value) => rows.push(h("h3", {}, label), value);
  if (n.run) add("Command, as written", h("pre", { class: "def" }, argvText(n.run)));
  if (n.shell) add("Shell script", h("pre", { class: "def" }, n.shell));
  if (n.llm) add("Prompt, as written", h("pre", { class: "def" }, n.llm));
  if (n.agent) add("Task given to the agent", h("pre", { class: "def" }, n.agent));
  if (n.approve) add("Question", h("pre", { class: "def" }, n.approve));
  if (n.fn && n.fn !== "lambda") add("Function", h("code", {}, n.fn));
  if (n.flow) add("Runs the flow", h("code", {}, n.flow));
  if (n.wait) add("Waits", h("code", {}, n.wait));
  if (n.env && Object.keys(n.env).length) add("Environment", h("pre", { class: "def" }, Object.entries(n.env).map(([k, v]) => `${k}=${v}`).join("\n")));
  if (n.inputs && n.kind === "subflow") add("Its inputs", h("pre", { class: "def" }, json(n.inputs)));
  if (n.routes || n.cases) {
    const lines = [];
    if (n.by) lines.push(`by ${n.by}`);
    for (const [k, v] of Object.entries(n.routes || {})) lines.push(`${k} → ${v}`);
    for (const c of n.cases || []) lines.push(`if ${c.when} → ${c.to}`);
    if (n.default) lines.push(`otherwise → ${n.default}`);
    add("Routes", h("pre", { class: "def" }, lines.join("\n")));
  }
  return rows.length ? h("div", {}, rows) : null;
}

function legend() {
  return h("div", { class: "legend", "aria-label": "colours" },
    ["pending", "running", "waiting", "succeeded", "failed", "skipped", "cancelled", "interrupted"].map(badge),
    h("span", { class: "muted" }, "Drag to move, Ctrl+wheel or +/− to zoom, ▸ unfolds a loop or map."));
}

// ---- Approvals ----------------------------------------------------------------------

async function approvalsPage() {
  const list = h("div", { id: "approvals" });
  const recent = h("div", { id: "decided" });
  fill(main(), h("h1", {}, "Approvals waiting"), h("p", { class: "muted" },
    "Runs that wait for someone to decide. Approving lets the run go on; rejecting routes it the way the flow says a rejection goes."), recent, list);
  // A decided card moves above the list, saying how it went.
  const decided = (v, card) => {
    recent.prepend(card);
    shown = null;
    load();
    refreshApprovalCount();
  };
  let shown = null;
  const load = async () => {
    const data = await get("/api/approvals");
    const items = data.approvals || [];
    const key = items.map((a) => a.run.id + "/" + a.place).join(",");
    if (key === shown) return; // keep what someone is typing
    shown = key;
    fill(list, (items.length ? items.map((a) => approvalCard(a, decided, false))
      : [h("div", { class: "card empty" }, "Nothing waits for a decision.")]));
  };
  await load();
  poll(() => load().catch(() => {}), 5000);
}

// approvalCard is one approval waiting with its decide form; onDone is
// called after a decision. inRun leaves out the run's own details.
function approvalCard(a, onDone, inRun) {
  const r = a.run || {};
  const fields = (a.fields || []).map((f) => typedField(f, `ap-${a.step}-`));
  const reason = h("input", { type: "text", name: "reason", placeholder: "why (kept with the decision)", "aria-label": "Reason" });
  const result = h("div", { class: "result", "aria-live": "polite" });
  const decide = async (approve) => {
    fill(result);
    let values;
    try {
      values = collect(fields);
    } catch (e) {
      fill(result, h("div", { class: "error-box" }, e.message));
      return;
    }
    const verb = approve ? "Approve" : "Reject";
    const body = { step: a.place || a.step, reason: reason.value.trim() };
    if (fields.length) body.values = values;
    const v = await act({
      title: `${verb} ${a.step} of ${r.flow || "this run"}?`,
      body: [a.message, approve ? "The run goes on." : "The run goes the way the flow routes a rejection.",
        body.reason ? "Reason: " + body.reason : ""].filter(Boolean),
      ok: verb, danger: !approve,
      // A refusal (a value that does not fit a field) stays on the card,
      // beside the fields to mend, as well as in the toast.
      run: () => post(`/api/runs/${enc(r.id)}/${approve ? "approve" : "reject"}`, body).catch((e) => {
        fill(result, errorBox(e));
        throw e;
      }),
      done: (v) => `${approve ? "Approved" : "Rejected"} ${a.step}${v.approval && v.approval.by ? " as " + v.approval.by : ""}; the run is ${STATUS_WORDS[v.run.status] || v.run.status}`,
    });
    if (v) {
      form.remove();
      card.classList.add("decided");
      fill(result, h("div", { class: "note" }, `${approve ? "Approved" : "Rejected"}${body.reason ? ` (${body.reason})` : ""}; the run is ${STATUS_WORDS[v.run.status] || v.run.status}. `,
        h("a", { href: "/runs/" + enc(v.run.id) }, "Follow the run")));
      onDone(v, card);
    }
  };
  const form = h("form", { class: "decide", onsubmit: (e) => e.preventDefault() },
    fields.map((f) => f.el),
    h("label", { class: "field" }, h("span", {}, "Reason ", h("small", { class: "muted" }, "optional")), reason),
    h("div", { class: "actions" },
      h("button", { type: "button", class: "good", "data-decide": "approve", onclick: () => decide(true) }, "Approve"),
      h("button", { type: "button", class: "danger", "data-decide": "reject", onclick: () => decide(false) }, "Reject")));
  const card = h("section", { class: "card approval", "data-approval": a.step, "data-run": r.id },
    h("div", { class: "row spread" },
      h("div", {}, inRun ? h("strong", {}, "Waiting for a decision at " + (a.place || a.step))
        : [h("a", { href: "/runs/" + enc(r.id) }, h("strong", {}, r.flow)), h("span", { class: "muted" }, " at " + (a.place || a.step))]),
      h("span", { class: "muted" }, a.requested ? "asked " + ago(a.requested) : "", a.deadline ? " · decide by " + fmtTime(a.deadline) : "")),
    h("p", { class: "question" }, a.message),
    !inRun ? h("div", { class: "facts" }, h("span", {}, "Run ", h("a", { class: "mono", href: "/runs/" + enc(r.id) }, r.id)),
      r.started ? h("span", {}, "started ", timeEl(r.started)) : null,
      r.started_by ? h("span", {}, "by " + r.started_by) : null,
      r.inputs && Object.keys(r.inputs).length ? h("span", {}, "inputs ", h("code", {}, truncate(JSON.stringify(r.inputs), 120))) : null) : null,
    form, result);
  return card;
}

// ---- Flows --------------------------------------------------------------------------------

async function flowsPage() {
  const data = await get("/api/flows");
  const flows = data.flows || [];
  fill(main(), h("h1", {}, "Flows"), h("p", { class: "muted" }, "The flows this server can start. Choose one to see it and start a run."),
    flows.length ? h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Flow", "File", "About", "Checks"].map((c) => h("th", {}, c)))),
      h("tbody", {}, flows.map((f) => h("tr", { "data-flow": f.path },
        h("td", {}, h("a", { href: flowURL(f.path) }, h("strong", {}, f.name || f.path))),
        h("td", { class: "mono" }, f.path),
        h("td", {}, f.description || ""),
        h("td", {}, f.errors ? h("span", { class: "badge st-failed" }, `${f.errors} error${f.errors > 1 ? "s" : ""}`)
          : f.warnings ? h("span", { class: "badge st-waiting" }, `${f.warnings} warning${f.warnings > 1 ? "s" : ""}`)
            : h("span", { class: "badge st-succeeded" }, "ok")))))))
      : h("div", { class: "card empty" }, "No flows under this server's folders (skein serve --root DIR)."));
}

function diagnosticsList(diags) {
  return h("ul", { class: "diagnostics" }, diags.map((g) => h("li", {},
    h("span", { class: "badge " + (g.severity === "error" ? "st-failed" : "st-waiting") }, g.severity || "error"), " ",
    g.file ? position(g.file, g.line, g.col) : null, " ", g.message, g.code ? h("span", { class: "muted" }, ` (${g.code})`) : null,
    g.hint ? h("div", { class: "muted" }, g.hint) : null)));
}

async function flowPage(path) {
  const f = await get("/api/flows/" + path.split("/").map(enc).join("/"));
  const fields = (f.inputs || []).map((i) => typedField(i, "in-"));
  const errors = (f.diagnostics || []).filter((g) => g.severity === "error");
  const result = h("div", { "aria-live": "polite" });
  const start = async (ev) => {
    ev.preventDefault();
    let inputs;
    try {
      inputs = collect(fields);
    } catch (e) {
      fill(result, h("div", { class: "error-box", role: "alert" }, e.message));
      return;
    }
    fill(result);
    const shown = Object.entries(inputs).map(([k, v]) => `${k} = ${JSON.stringify(v)}`);
    const v = await confirmAction(`Start a run of ${f.name}?`, [
      shown.length ? h("pre", {}, shown.join("\n")) : "With its default inputs.",
      "Its steps run on the machine this server runs on."], "Start the run");
    if (!v) return;
    try {
      const res = await post("/api/runs", { flow: f.path, inputs });
      if (res.queued) { // the flow's concurrency= is taken: it waits its turn
        toast("Queued: it starts when the flow's concurrency allows");
        go("/runs#queue");
        return;
      }
      toast("Started " + res.run.id);
      go("/runs/" + enc(res.run.id));
    } catch (e) {
      fill(result, errorBox(e));
    }
  };
  const graphBox = h("div", { id: "graph" });
  fill(main(), 
    h("section", { class: "card" }, h("h1", {}, f.name || f.path),
      f.description ? h("p", {}, f.description) : null,
      h("div", { class: "facts" }, h("span", {}, "File ", h("b", { class: "mono" }, f.path)),
        h("span", {}, h("a", { href: "/runs?" + new URLSearchParams({ flow: f.name || "" }) }, "its runs")))),
    (f.diagnostics || []).length ? h("section", { class: "card", id: "diagnostics" }, h("h2", {}, errors.length ? "The checker found problems" : "Warnings"),
      diagnosticsList(f.diagnostics)) : null,
    h("div", { class: "run-grid" },
      h("section", { class: "card" }, h("h2", {}, "Graph"), f.graph ? graphBox : h("p", { class: "muted" }, "The flow does not load, so it has no graph.")),
      h("section", { class: "card" }, h("h2", {}, "Start a run"),
        h("form", { id: "start-form", onsubmit: start }, fields.length ? fields.map((x) => x.el) : h("p", { class: "muted" }, "This flow takes no inputs."),
          h("button", { type: "submit", id: "start", disabled: errors.length > 0 }, "Start…"),
          errors.length ? h("p", { class: "muted" }, "Fix the errors above to start it.") : null),
        result)));
  if (f.graph) {
    const g = new FlowGraph(graphBox, f.graph, {});
    onLeave(() => g.close());
  }
}

// ---- Start -------------------------------------------------------------------------------

async function boot() {
  if (location.pathname === "/") history.replaceState(null, "", "/runs");
  let ok;
  try {
    ok = await loadSession();
  } catch (e) {
    if (e.status !== 401) fill(main(), errorBox(e));
    return;
  }
  if (!ok) {
    showLogin("");
    return;
  }
  route();
}

boot();
