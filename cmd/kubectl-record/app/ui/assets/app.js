// kubectl record ui: the timeline page. Every recorded string is shown
// with textContent or an attribute value, never parsed as markup; the
// page runs under a Content-Security-Policy without inline script.
"use strict";

const $ = (id) => document.getElementById(id);

// shown makes a recorded string show as itself: the characters that
// reorder, break or hide text are shown as \u{...} escapes, by the one rule
// of the plugin's tables and the sql command (api/escape, docs/development.md):
// controls other than tab and newline, format characters (direction
// overrides and isolates, zero-width), line and paragraph separators, every
// space but U+0020, the default-ignorable fillers, private use and
// unassigned code points, lone surrogates. ui's tests check this class
// against api/escape.
const hidden = /[\p{C}\p{Z}\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\ufff0-\ufff8\u{e0000}-\u{e00ff}\u{e01f0}-\u{e0fff}]/gu;
const shown = (s) => String(s).replace(hidden, (c) => c === " " || c === "\t" || c === "\n" ? c :
  "\\u{" + c.codePointAt(0).toString(16).padStart(4, "0") + "}");

const el = (tag, props, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v; // CSSOM: allowed by the CSP, unlike a style attribute
    else if (k === "text") e.textContent = shown(v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "title") e.setAttribute(k, shown(v));
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(typeof c === "string" ? shown(c) : c);
  return e;
};

const state = { lanes: [], from: 0, to: 0, object: null, versions: [], pendingRestore: null, pendingDigest: null };

function showError(err) {
  const box = $("error");
  box.textContent = err ? shown(err) : "";
  box.hidden = !err;
}

async function call(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-Record-UI"] = "1";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  const data = await resp.json().catch(() => ({ error: resp.statusText }));
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

// Filters live in the URL, so a link shows the same view.
function readFilters() {
  const q = new URLSearchParams(location.search);
  for (const f of ["namespace", "user", "resource", "name"]) $("f-" + f).value = q.get(f) || "";
  $("f-all").checked = q.get("all") === "true";
  if (q.get("since")) {
    const since = q.get("since").replace(/(?<=[hm])0s$/, "").replace(/(?<=h)0m$/, ""); // Go's 2h0m0s -> 2h
    if (![...$("f-since").options].some((o) => o.value === since)) $("f-since").append(el("option", { text: since }));
    $("f-since").value = since;
  }
}

function writeFilters() {
  const q = new URLSearchParams();
  for (const f of ["namespace", "user", "resource", "name"]) if ($("f-" + f).value) q.set(f, $("f-" + f).value);
  if ($("f-all").checked) q.set("all", "true");
  q.set("since", $("f-since").value);
  history.replaceState(null, "", "?" + q.toString()); // under the page's random path
  return q;
}

function verbClass(ev) {
  if (ev.kind === "attempt") return "attempt";
  if (ev.verb === "create") return "verb-create";
  if (ev.verb === "update" || ev.verb === "patch") return "verb-update";
  if (ev.verb === "delete" || ev.verb === "deletecollection") return "verb-delete";
  return "verb-other";
}

function objectKey(ev) { return [ev.group, ev.resource, ev.namespace, ev.name].join("\u0000"); }
function objectLabel(o) {
  const res = o.group ? o.resource + "." + o.group : o.resource;
  return (o.namespace ? o.namespace + "/" : "") + res + "/" + o.name;
}

async function load() {
  showError("");
  const q = writeFilters();
  $("status").textContent = "Loading…";
  const started = performance.now();
  try {
    const tl = await call("GET", "api/timeline?" + q.toString());
    if (!$("f-all").checked && !$("f-namespace").value && tl.namespace) {
      $("f-namespace").value = tl.namespace; // the kubeconfig's or -n: into the URL too
      writeFilters();
    }
    buildLanes(tl);
    const ms = Math.round(performance.now() - started);
    $("status").textContent = `${tl.events.length} events on ${state.lanes.length} objects` +
      (tl.truncated ? " (the newest only: narrow the filters)" : "") + ` · rendered in ${ms} ms`;
    document.body.dataset.rendered = String(ms);
  } catch (e) {
    state.lanes = [];
    renderLanes();
    $("status").textContent = "";
    showError(e.message);
  }
}

function buildLanes(tl) {
  const byObject = new Map();
  let min = Infinity, max = -Infinity;
  for (const ev of tl.events) {
    const t = Date.parse(ev.at);
    ev.t = t;
    min = Math.min(min, t); max = Math.max(max, t);
    const k = objectKey(ev);
    if (!byObject.has(k)) byObject.set(k, { key: k, group: ev.group, resource: ev.resource, namespace: ev.namespace, name: ev.name, events: [], last: 0 });
    const lane = byObject.get(k);
    lane.events.push(ev);
    lane.last = Math.max(lane.last, t);
  }
  state.from = min; state.to = max === min ? min + 1000 : max;
  // Newest activity first; a cascade's objects come right after the
  // object whose deletion started it, when it is listed.
  const lanes = [...byObject.values()].sort((a, b) => b.last - a.last);
  // The object whose deletion started a lane's cascade, when the record
  // names it (and the caller may read it).
  const initiatorOf = (lane) => {
    const c = lane.events.find((e) => e.initiator);
    return c ? objectKey(c.initiator) : null;
  };
  const ordered = [];
  const placed = new Set();
  const place = (lane) => {
    if (placed.has(lane)) return;
    ordered.push(lane); placed.add(lane);
    for (const other of lanes) {
      if (!placed.has(other) && initiatorOf(other) === lane.key) { other.cascade = true; place(other); }
    }
  };
  for (const lane of lanes) place(lane);
  state.lanes = ordered;
  renderAxis();
  renderLanes();
}

function renderAxis() {
  const axis = $("axis");
  axis.replaceChildren();
  if (!state.lanes.length) return;
  const span = state.to - state.from;
  const fmt = span < 60e3 ? { hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 }
    : span < 864e5 ? { hour: "2-digit", minute: "2-digit", second: "2-digit" }
    : { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" };
  for (let i = 0; i <= 4; i++) {
    const t = state.from + span * i / 4;
    axis.append(el("span", { style: `left:${i * 25}%`, text: new Date(t).toLocaleString(undefined, fmt) }));
  }
}

const ROW = 26;
let scheduled = false;
function renderLanes() {
  const box = $("lanes"), spacer = $("lanes-spacer");
  spacer.style.height = state.lanes.length * ROW + "px";
  // Only the lanes in view exist in the DOM: ten thousand changes stay fast.
  const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
  const last = Math.min(state.lanes.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW) + 5);
  const rows = [];
  for (let i = first; i < last; i++) rows.push(renderLane(state.lanes[i], i));
  spacer.replaceChildren(...rows);
}

function renderLane(lane, i) {
  // In one namespace's view, the label leaves the namespace out.
  const shown = $("f-all").checked || lane.namespace !== $("f-namespace").value ? objectLabel(lane)
    : objectLabel({ ...lane, namespace: "" });
  const label = el("button", { class: "label", type: "button", title: objectLabel(lane), text: (lane.cascade ? "↳ " : "") + shown,
    onclick: () => openObject(lane) });
  const track = el("div", { class: "track" });
  const span = state.to - state.from;
  for (const ev of lane.events) {
    const pct = span > 0 ? (ev.t - state.from) / span * 100 : 50;
    let title = `${ev.kind === "attempt" ? "refused " + ev.code + " " + (ev.reason || "") + ": " : ""}${ev.verb} by ${ev.user}` +
      (ev.as ? ` as ${ev.as}` : "") + ` at ${new Date(ev.t).toISOString()}`;
    if (ev.initiatedVia) title += ` (${ev.initiatedVia} started by ${ev.initiatedBy})`;
    if (ev.userAgent) title += ` · ${ev.userAgent}`;
    if (ev.shortName) title += ` · ${ev.shortName}`;
    track.append(el("button", { type: "button", class: "mark " + verbClass(ev) + (ev.initiatedVia ? " cascade" : ""),
      style: `left:${Math.min(Math.max(pct, 0.5), 99.5)}%`, title, "aria-label": title, "data-verb": ev.verb,
      onclick: () => openObject(lane) }));
  }
  return el("div", { class: "lane", style: `top:${i * ROW}px`, "data-object": objectLabel(lane) }, label, track);
}

async function openObject(lane) {
  showError("");
  state.object = { namespace: lane.namespace, group: lane.group, resource: lane.resource, name: lane.name };
  $("object").hidden = false;
  $("object-title").textContent = shown(objectLabel(lane));
  $("diff").replaceChildren();
  $("restore-panel").hidden = true;
  const tbody = $("versions").tBodies[0];
  tbody.replaceChildren();
  try {
    state.versions = await call("GET", "api/versions?" + new URLSearchParams(state.object));
  } catch (e) { showError(e.message); return; }
  state.versions.forEach((v, i) => {
    const label = v.shortName || v.name;
    const from = el("input", { type: "radio", name: "from", value: v.name, "aria-label": "from " + label });
    const to = el("input", { type: "radio", name: "to", value: v.name, "aria-label": "to " + label });
    if (i === 1) from.checked = true;
    if (i === 0) to.checked = true;
    tbody.append(el("tr", { "data-version": v.name },
      el("td", {}, from), el("td", {}, to), el("td", { text: new Date(v.at).toISOString() }), el("td", { text: v.verb }),
      el("td", { text: v.user }), el("td", { text: v.uid.slice(0, 8) }), el("td", { text: v.restorable ? "restorable" : "" }),
      el("td", {}, el("code", { text: label }))));
  });
  $("object").scrollIntoView({ block: "start" });
}

function selected(name) { const r = document.querySelector(`input[name=${name}]:checked`); return r ? r.value : ""; }

function renderDiff(container, d) {
  container.replaceChildren();
  container.append(el("p", { text: `${d.from} → ${d.to}` }));
  if (!d.changes || !d.changes.length) { container.append(el("p", { text: "No difference in the fields compared." })); return; }
  const table = el("table", { class: "diff-table" },
    el("thead", {}, el("tr", {}, el("th", { text: "path" }), el("th", { text: "before" }), el("th", { text: "after" }))));
  const body = el("tbody");
  for (const c of d.changes) {
    body.append(el("tr", { "data-path": c.path },
      el("td", {}, el("code", { text: (c.path || "/") + " (" + c.op + ")" })),
      el("td", { class: "before" }, el("pre", { text: c.before || "" })),
      el("td", { class: "after" }, el("pre", { text: c.after || "" }))));
  }
  table.append(body);
  container.append(table);
}

async function showDiff(to) {
  showError("");
  try {
    const d = await call("GET", "api/diff?" + new URLSearchParams({ ...state.object, from: selected("from"), to }));
    renderDiff($("diff"), d);
  } catch (e) { showError(e.message); }
}

async function restorePreview() {
  showError("");
  const version = selected("to");
  try {
    const res = await call("POST", "api/restore", { ...state.object, version, dryRun: true });
    state.pendingRestore = version;
    state.pendingDigest = res.stateDigest;
    const preview = $("restore-preview");
    preview.replaceChildren(el("p", { text: `Dry run of restoring ${version}: ${res.phase}, ${res.action || "no action"}` }));
    if (res.message) preview.append(el("p", { text: res.message }));
    if (res.changes && res.changes.length) renderDiff(preview.appendChild(el("div")), { from: "live", to: version, changes: res.changes });
    $("restore-panel").hidden = false;
    $("restore-confirm").disabled = res.phase !== "Succeeded" || res.action === "none";
    $("restore-confirm").focus();
  } catch (e) { showError(e.message); }
}

async function restoreConfirm() {
  showError("");
  try {
    // The state its dry run showed, or nothing: its digest says which.
    const res = await call("POST", "api/restore", { ...state.object, version: state.pendingRestore, dryRun: false, stateDigest: state.pendingDigest });
    $("restore-preview").replaceChildren(el("p", { id: "restore-outcome", text: `Restore: ${res.phase}, ${res.action || ""} ${res.message || ""}` }));
    $("restore-confirm").disabled = true;
  } catch (e) { showError(e.message); }
}

async function plan(evt) {
  evt.preventDefault();
  showError("");
  const kind = $("p-kind").value, when = $("p-time").value.trim();
  const ns = $("f-namespace").value;
  const body = { namespace: ns, kind };
  const at = /^\d+[smh]$/.test(when) ? new Date(Date.now() - parseDur(when)).toISOString() : when;
  if (kind === "as-of") body.at = at; else { body.user = $("p-user").value; body.since = at; }
  const out = $("plan-result");
  try {
    const p = await call("POST", "api/plan", body);
    out.replaceChildren(el("p", { text: `Plan ${p.name}: ${p.steps.length} steps` }));
    const tb = el("tbody");
    for (const s of p.steps) tb.append(el("tr", {}, el("td", { text: s.action }), el("td", { text: s.resource }),
      el("td", { text: (s.namespace ? s.namespace + "/" : "") + s.name }), el("td", { text: s.reason || "" })));
    out.append(el("table", {}, el("thead", {}, el("tr", {}, ...["action", "resource", "object", "reason"].map((t) => el("th", { text: t })))), tb));
    const run = el("button", { type: "button", id: "plan-run", text: "Dry run, then execute…", onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const dry = await call("POST", "api/plan/execute", { namespace: ns, name: p.name, dryRun: true });
        out.append(el("p", { text: `Dry run: ${dry.phase}` }), ...(dry.steps || []).map((s) => el("div", { text: s })));
        if (dry.phase !== "Succeeded") return;
        out.append(el("button", { type: "button", id: "plan-confirm", text: "Confirm: execute the plan, as me", onclick: async (e) => {
          e.target.disabled = true;
          try {
            // The plan as its dry run showed it, or nothing: its digest says which.
            const done = await call("POST", "api/plan/execute", { namespace: ns, name: p.name, dryRun: false, digest: dry.planDigest });
            out.append(el("p", { id: "plan-executed", text: `Executed: ${done.phase}` }), ...(done.steps || []).map((s) => el("div", { text: s })));
          } catch (err) { showError(err.message); }
        } }));
      } catch (e) { showError(e.message); }
    } });
    out.append(run);
  } catch (e) { showError(e.message); }
}

function parseDur(s) {
  const n = parseInt(s, 10);
  return n * ({ s: 1e3, m: 6e4, h: 36e5 })[s.slice(-1)];
}

document.addEventListener("DOMContentLoaded", () => {
  readFilters();
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); load(); });
  $("lanes").addEventListener("scroll", () => {
    if (!scheduled) { scheduled = true; requestAnimationFrame(() => { scheduled = false; renderLanes(); }); }
  });
  $("show-diff").addEventListener("click", () => showDiff(selected("to")));
  $("diff-live").addEventListener("click", () => { const to = selected("to"); showDiffLive(to); });
  $("restore").addEventListener("click", restorePreview);
  $("restore-confirm").addEventListener("click", restoreConfirm);
  $("restore-cancel").addEventListener("click", () => { $("restore-panel").hidden = true; });
  $("plan-form").addEventListener("submit", plan);
  load();
});

async function showDiffLive(version) {
  showError("");
  try {
    const d = await call("GET", "api/diff?" + new URLSearchParams({ ...state.object, from: version, to: "live" }));
    renderDiff($("diff"), d);
  } catch (e) { showError(e.message); }
}
