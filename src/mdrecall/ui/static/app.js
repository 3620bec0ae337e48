// mdrecall memory inspector: a small page over the JSON endpoints of `mdrecall ui` (no build step, no libraries).
"use strict";

const TOKEN = document.querySelector('meta[name="mdrecall-token"]').content;
const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, body) {
  const options = { headers: { "X-Mdrecall-Token": TOKEN }, credentials: "same-origin" };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = { error: `HTTP ${response.status}` }; }
  if (!response.ok) throw new Error(data && data.error ? data.error : `HTTP ${response.status}`);
  return data;
}

const fmt = (x, digits = 3) => (typeof x === "number" ? x.toFixed(digits) : "–");
const signed = (x) => (x > 0 ? "+" : "") + fmt(x);
const when = (ms) => (ms ? new Date(ms).toLocaleString() : "–");

function hashParams() {
  const [page, query] = location.hash.replace(/^#/, "").split("?");
  return { page: page || "search", params: new URLSearchParams(query || "") };
}

function go(page, params) {
  const query = params ? new URLSearchParams(params).toString() : "";
  location.hash = page + (query ? "?" + query : "");
}

// ---------------------------------------------------------------------------------------------- search

function explainTable(explain) {
  if (!explain) return el("p", { class: "meta", text: "This engine does not say why it ranked this result." });
  const rows = [];
  const row = (label, value, effect, cls) =>
    rows.push(el("tr", {}, el("th", { scope: "row", text: label }), el("td", { class: "num", text: value }),
      el("td", { class: cls || "", text: effect || "" })));
  if (explain.vector) row("vector (cosine)", fmt(explain.vector.cosine), explain.vector.note || `weight ${fmt(explain.weights?.vector, 2)}`);
  if (explain.keyword) {
    const k = explain.keyword;
    row("keyword (bm25)", fmt(k.bm25), `coverage ${fmt(k.coverage, 2)} · weight ${fmt(explain.weights?.text, 2)}` + (k.note ? ` · ${k.note}` : ""));
  }
  for (const step of explain.steps || []) {
    const moved = typeof step.delta === "number" && Math.abs(step.delta) >= 0.0005;
    const cls = moved ? (step.delta > 0 ? "up" : "down") : "";
    const effect = (moved ? signed(step.delta) + " · " : "") + (step.detail || "");
    row(step.label, fmt(step.score), effect, cls);
  }
  return el("div", { class: "explain" },
    el("table", {}, el("thead", {}, el("tr", {}, el("th", { text: "stage" }), el("th", { text: "score" }), el("th", { text: "effect" }))),
      el("tbody", {}, rows)));
}

function renderResults(data) {
  const list = $("#results");
  list.replaceChildren();
  list.dataset.query = data.query;
  const bits = [`${data.results.length} result${data.results.length === 1 ? "" : "s"}`, data.mode, data.provider,
    data.model || "", `backend ${data.backend}`, `${data.ms} ms`].filter(Boolean);
  const meta = $("#search-meta");
  meta.replaceChildren(bits.join(" · "));
  for (const extra of [data.note, data.notice, data.backendFallback && `answered by the builtin index: ${data.backendFallback.reason}`]) {
    if (extra) meta.append(el("br"), el("span", { text: "note: " + extra }));
  }
  if (!data.results.length) {
    list.append(el("li", { class: "empty", id: "no-results", text: data.message || "no results" }));
    return;
  }
  data.results.forEach((r, i) => {
    const where = `${r.path}:${r.startLine}-${r.endLine}`;
    const open = el("a", { href: `#browse?${new URLSearchParams({ path: r.path, from: r.startLine, to: r.endLine })}`,
      class: "open-cited", text: where, title: "Open this range in its file" });
    list.append(el("li", { class: "result", "data-rank": i + 1 },
      el("div", { class: "result-head" }, open, el("span", { class: "score", text: `score ${fmt(r.score)}` }),
        el("span", { class: "meta", text: r.source })),
      el("div", { class: "snippet", text: r.snippet }),
      el("details", { class: "why" }, el("summary", { text: "Why this ranked" }), explainTable(r.explain))));
  });
}

async function runSearch(query, mode) {
  $("#q").value = query;
  $("#mode").value = mode;
  if (!query) { $("#results").replaceChildren(); $("#search-meta").textContent = ""; return; }
  $("#results").replaceChildren();
  delete $("#results").dataset.query;
  $("#search-meta").textContent = "searching…";
  try {
    renderResults(await api(`/api/search?${new URLSearchParams({ q: query, mode })}`));
  } catch (err) {
    $("#results").replaceChildren();
    $("#search-meta").replaceChildren(el("span", { class: "error", text: err.message }));
  }
}

// ---------------------------------------------------------------------------------------------- browse

let fileCache = null;

async function loadFileList(current) {
  const nav = $("#file-list");
  if (!fileCache) {
    try { fileCache = await api("/api/files"); } catch (err) {
      nav.replaceChildren(el("p", { class: "error", text: err.message })); return;
    }
  }
  const items = fileCache.files.map((f) => el("li", {}, el("a", {
    href: `#browse?${new URLSearchParams({ path: f.path })}`, "aria-current": f.path === current ? "true" : null,
    title: `${f.chunks} chunk${f.chunks === 1 ? "" : "s"} in the index`,
  }, f.path, el("span", { class: "meta", text: ` (${f.chunks})` }))));
  nav.replaceChildren(el("p", { class: "meta", text: `${fileCache.count} files` }), el("ul", {}, items));
}

function markLines(view, from, to, cls) {
  view.querySelectorAll("." + cls).forEach((n) => n.classList.remove(cls));
  let first = null;
  view.querySelectorAll("[data-lines]").forEach((node) => {
    const [a, b] = node.dataset.lines.split("-").map(Number);
    // the innermost blocks that meet the range: a list item rather than its whole list
    if (a <= to && b >= from && !Array.from(node.children).some((c) => c.dataset && c.dataset.lines)) {
      node.classList.add(cls);
      first = first || node;
    }
  });
  view.querySelectorAll(".lines div").forEach((node) => {
    const n = Number(node.dataset.line);
    if (cls === "cited" && n >= from && n <= to) { node.classList.add(cls); first = first || node; }
  });
  return first;
}

async function openFile(path, from, to) {
  await loadFileList(path);
  const view = $("#file-view");
  if (!path) { view.replaceChildren(el("p", { class: "meta", text: "Pick a file." })); return; }
  view.replaceChildren(el("p", { class: "meta", text: "loading…" }));
  let data;
  try {
    data = await api(`/api/file?${new URLSearchParams({ path, ...(from ? { from, to: to || from } : {}) })}`);
  } catch (err) { view.replaceChildren(el("p", { class: "error", text: err.message })); return; }
  const md = el("div", { class: "md", id: "rendered" });
  md.innerHTML = data.html; // rendered on the server with raw HTML escaped (ui/markdown.py)
  const raw = el("div", { class: "lines", id: "raw", hidden: true },
    data.text.split("\n").map((line, i) => el("div", { "data-line": i + 1 }, el("span", { class: "n", text: i + 1 }), line)));
  const toggle = el("button", { type: "button", class: "secondary", id: "toggle-raw", onclick: () => {
    const showRaw = raw.hidden; raw.hidden = !showRaw; md.hidden = showRaw;
    toggle.textContent = showRaw ? "Rendered" : "Lines";
  } }, "Lines");
  const chunkButtons = data.chunks.map((c, i) => el("button", { type: "button", class: "secondary chunk",
    title: `chunk ${i + 1}: lines ${c.startLine}-${c.endLine}`, onclick: () => {
      const hit = markLines(view, c.startLine, c.endLine, "in-chunk");
      if (hit) hit.scrollIntoView({ block: "center" });
    } }, `${c.startLine}–${c.endLine}`));
  const head = el("div", { class: "row" }, el("h1", { text: data.path }), toggle);
  const cited = data.highlight ? el("p", { class: "meta", id: "cited-range", text: `cited lines ${data.highlight.from}-${data.highlight.to}` }) : null;
  view.replaceChildren(head, cited,
    el("p", { class: "meta", text: `${data.lines} lines · ${data.chunks.length} chunk${data.chunks.length === 1 ? "" : "s"} in the index` }),
    el("div", { class: "chunks", role: "group", "aria-label": "Chunks" }, chunkButtons), md, raw);
  if (data.highlight) {
    const first = markLines(view, data.highlight.from, data.highlight.to, "cited");
    if (first) first.scrollIntoView({ block: "center" });
  }
}

// ---------------------------------------------------------------------------------------------- facts

const CATEGORIES = ["preference", "fact", "decision", "entity", "other"];

async function loadFacts(message) {
  const body = $("#facts-table tbody");
  const meta = $("#facts-meta");
  let data;
  try { data = await api("/api/facts"); } catch (err) { meta.replaceChildren(el("span", { class: "error", text: err.message })); return; }
  if (!data.available) { meta.textContent = data.reason; body.replaceChildren(); return; }
  meta.textContent = (message ? message + " · " : "") + `${data.count} facts · source of truth: ${data.file}`;
  body.replaceChildren(...data.facts.map((f) => factRow(f)));
  if (!data.facts.length) body.append(el("tr", {}, el("td", { colspan: 5, class: "meta", text: "No facts stored yet." })));
}

function factRow(f) {
  const tr = el("tr", { "data-id": f.id });
  const edit = el("button", { type: "button", class: "secondary edit", onclick: () => editRow(tr, f) }, "Edit");
  const forget = el("button", { type: "button", class: "danger forget", onclick: async () => {
    if (forget.dataset.armed !== "1") { forget.dataset.armed = "1"; forget.textContent = "Really forget?"; return; }
    forget.disabled = true;
    try { const r = await api("/api/facts/forget", { id: f.id }); await loadFacts(r.message); }
    catch (err) { $("#facts-meta").replaceChildren(el("span", { class: "error", text: err.message })); forget.disabled = false; }
  } }, "Forget");
  forget.addEventListener("blur", () => { forget.dataset.armed = ""; forget.textContent = "Forget"; });
  tr.append(el("td", { class: "text", text: f.text }), el("td", { text: f.category }), el("td", { text: f.date }),
    el("td", { text: f.source }), el("td", { class: "actions" }, edit, " ", forget));
  return tr;
}

function editRow(tr, f) {
  const text = el("textarea", { "aria-label": "Fact text", class: "edit-text" });
  text.value = f.text;
  const category = el("select", { "aria-label": "Category", class: "edit-category" },
    CATEGORIES.map((c) => el("option", { value: c, selected: c === f.category }, c)));
  const save = el("button", { type: "button", class: "save", onclick: async () => {
    save.disabled = true;
    try { const r = await api("/api/facts/edit", { id: f.id, text: text.value, category: category.value }); await loadFacts(r.message); }
    catch (err) { $("#facts-meta").replaceChildren(el("span", { class: "error", text: err.message })); save.disabled = false; }
  } }, "Save");
  const cancel = el("button", { type: "button", class: "secondary", onclick: () => tr.replaceWith(factRow(f)) }, "Cancel");
  tr.replaceChildren(el("td", { colspan: 5 }, text, el("div", { class: "row" }, category, save, cancel)));
  text.focus();
}

// ---------------------------------------------------------------------------------------------- health

function statusRows(s) {
  const rows = [
    ["backend", s.backend + (s.servedBy && s.servedBy !== s.backend ? ` (answering: ${s.servedBy})` : "")],
    ["files", s.files], ["chunks", s.chunks],
    ["provider", `${s.provider}${s.model ? " · " + s.model : ""}`],
    ["search mode", s.searchMode],
    ["stale", s.dirty ? "yes: files changed since the last sync" : "no: the index matches the files"],
    ["last sync", s.lastSync ? `${when(s.lastSync.at || s.lastSync.finishedAt)} · ${s.lastSync.reason || ""}` : "–"],
    ["vectors", s.vector ? `${s.vector.mode || ""}${s.vector.dims ? " · " + s.vector.dims + " dims" : ""}` : "–"],
    ["index", s.dbPath || s.server || "–"],
    ["workspace", s.workspaceDir],
  ];
  if (s.backendFallback) rows.push(["fallback", s.backendFallback.reason]);
  if (s.providerUnavailable) rows.push(["provider note", s.providerUnavailable]);
  if (s.vectorsPending) rows.push(["vectors pending", s.vectorsPending]);
  return rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { "data-key": k, text: v === undefined || v === null ? "–" : v })]);
}

async function loadHealth() {
  try {
    const s = await api("/api/status");
    $("#status").replaceChildren(...statusRows(s));
    if (s.reindex && s.reindex.running) pollReindex();
  } catch (err) { $("#status").replaceChildren(el("dd", { class: "error", text: err.message })); }
  try {
    const a = await api("/api/activity");
    $("#activity-meta").textContent = `from ${a.stateFile}`;
    $("#events").replaceChildren(...(a.events.length ? a.events.map((e) => el("li", {},
      el("span", { class: "meta", text: when(e.at) + " " }), el("strong", { text: e.event }), ` · ${(e.actions || []).join("; ") || "nothing to do"}`,
      (e.facts && e.facts.length) ? el("ul", {}, e.facts.map((f) => el("li", { text: `${f.kind}: [${f.category}] ${f.text}` }))) : null))
      : [el("li", { class: "meta", text: "No hook activity recorded yet (the agent hooks write it: mdrecall install claude-code)." })]));
    $("#sessions tbody").replaceChildren(...a.sessions.map((s) => el("tr", {},
      el("td", { text: s.session }), el("td", { text: s.captured }), el("td", { text: s.compactionCount }),
      el("td", { text: s.sessionFile || "–" }), el("td", { text: when(s.updatedAt) }))));
  } catch (err) { $("#activity-meta").replaceChildren(el("span", { class: "error", text: err.message })); }
}

let polling = false;
async function pollReindex() {
  if (polling) return;
  polling = true;
  const bar = $("#reindex-progress"), msg = $("#reindex-msg"), button = $("#reindex");
  bar.hidden = false; button.disabled = true;
  try {
    for (;;) {
      const p = await api("/api/reindex");
      bar.max = Math.max(1, p.total || 0); bar.value = p.done || 0;
      msg.textContent = p.running ? `reindexing ${p.done || 0}/${p.total || "?"} files` +
        (p.chunksTotal ? ` · ${p.chunksDone}/${p.chunksTotal} chunks embedded` : "") : "";
      if (!p.running) {
        if (p.error) msg.replaceChildren(el("span", { class: "error", text: "reindex failed: " + p.error }));
        else if (p.report) msg.textContent = `reindexed: ${p.report.filesIndexed} files, ${p.report.chunksIndexed} chunks in ${fmt(p.report.seconds, 1)} s`;
        break;
      }
      await new Promise((r) => setTimeout(r, 400));
    }
  } catch (err) { msg.replaceChildren(el("span", { class: "error", text: err.message })); }
  bar.hidden = true; button.disabled = false; polling = false;
  const s = await api("/api/status").catch(() => null);
  if (s) $("#status").replaceChildren(...statusRows(s));
}

// ---------------------------------------------------------------------------------------------- routing

const PAGES = ["search", "browse", "facts", "health"];

async function route() {
  const { page, params } = hashParams();
  const current = PAGES.includes(page) ? page : "search";
  for (const name of PAGES) {
    $(`#page-${name}`).hidden = name !== current;
    const tab = $(`#tab-${name}`);
    if (name === current) tab.setAttribute("aria-current", "page"); else tab.removeAttribute("aria-current");
  }
  if (current === "search") await runSearch(params.get("q") || "", params.get("mode") || "hybrid");
  if (current === "browse") await openFile(params.get("path"), Number(params.get("from")) || null, Number(params.get("to")) || null);
  if (current === "facts") await loadFacts();
  if (current === "health") await loadHealth();
  document.body.dataset.ready = current;
}

document.addEventListener("DOMContentLoaded", async () => {
  $("#search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    go("search", { q: $("#q").value.trim(), mode: $("#mode").value });
  });
  $("#reindex").addEventListener("click", async () => {
    try { await api("/api/reindex", { force: true }); pollReindex(); }
    catch (err) { $("#reindex-msg").replaceChildren(el("span", { class: "error", text: err.message })); }
  });
  document.addEventListener("keydown", (event) => {
    const typing = /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName);
    if (event.key === "/" && !typing) { event.preventDefault(); go("search", { q: $("#q").value }); $("#q").focus(); }
  });
  window.addEventListener("hashchange", route);
  api("/api/overview").then((o) => {
    const folder = o.workspace.split(/[\\/]/).filter(Boolean).pop() || o.workspace;
    $("#where").textContent = `${folder} · agent ${o.agent} · ${o.backend}`;
    $("#where").title = o.workspace;
  }).catch(() => {});
  await route();
  if (hashParams().page === "search") $("#q").focus();
});
