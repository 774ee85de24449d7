// The inspector: a live list of exchanges (/inspect/api/live) beside one exchange's four bodies, with
// what the proxy changed marked (the server's structural diff: proxy/inspect/changes.py), and its
// decisions. Plain DOM, no framework, nothing from outside. Keys: docs/inspector.md.
"use strict";
(function () {
  const tbody = document.querySelector("#exchanges tbody");
  const filters = document.getElementById("filters");
  const detail = document.getElementById("detail");
  const liveState = document.getElementById("live");
  let rows = [];
  let selectedId = null;  // the exchange the keyboard is on (by id: live rows arrive above it)
  let openId = null;  // the exchange the detail shows

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
    return node;
  }

  function query() {
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(filters)) if (v) params.set(k, v);
    return params;
  }

  function matches(s) {
    const q = query();
    if (q.get("session") && s.session !== q.get("session")) return false;
    if (q.get("protocol") && s.protocol !== q.get("protocol")) return false;
    if (q.get("model") && !((s.client_model || "") + " " + (s.gemini_model || "")).includes(q.get("model"))) return false;
    const ok = s.status < 400 && !s.error;
    if (q.get("status") === "ok" && !ok) return false;
    if (q.get("status") === "error" && ok) return false;
    return true;
  }

  // The protocol served; an intercepted flow is Gemini's, a background run's is its request's.
  function where(s) {
    if (s.kind === "mitm") return "mitm · gemini";
    return s.kind === "background" ? s.protocol + " · background" : s.protocol;
  }

  // A row of two lines per cell, so the list stays narrow: it shares the window with the detail.
  function row(s) {
    const ok = s.status < 400 && !s.error;
    const time = new Date(s.time * 1000).toLocaleTimeString();
    const model = s.client_model && s.gemini_model && s.client_model !== s.gemini_model
      ? s.client_model + " → " + s.gemini_model : (s.client_model || s.gemini_model || "–");
    const calls = (s.calls || []).map((c) => c.name).join(", ");
    const tools = (s.tools || []).length;
    const tokens = s.input_tokens == null ? "" : `${s.input_tokens} / ${s.output_tokens ?? "–"} tok`;
    const cell = (cls, first, second) => el("td", {class: cls, title: first + (second ? "\n" + second : "")},
      el("div", {}, first), el("div", {class: "sub"}, second));
    const tr = el("tr", {tabindex: "0", "data-id": s.id, class: (ok ? "ok" : "failed") + (s.id === openId ? " open" : "")},
      cell("time", time, s.status + (s.error ? " ⚠" : "")),
      cell("what", `${s.method} ${s.path} · ${where(s)}`, model),
      cell("calls", tools + (tools === 1 ? " tool" : " tools"), calls),
      cell("ms", `${s.proxy_ms} / ${s.upstream_ms} ms`, tokens));
    tr.querySelector(".time .sub").classList.add("status");
    if (s.error) tr.title = s.error;
    tr.addEventListener("click", () => { selectedId = s.id; open(s.id); });
    tr.addEventListener("focus", () => { selectedId = s.id; });
    return tr;
  }

  function render() {
    tbody.replaceChildren(...rows.filter(matches).map(row));
  }

  async function load() {
    const r = await fetch("/inspect/api/exchanges?" + query().toString(), {credentials: "same-origin"});
    if (!r.ok) { liveState.textContent = "cannot read the journal: " + r.status; return; }
    rows = (await r.json()).exchanges;
    render();
  }

  function connect() {
    const source = new EventSource("/inspect/api/live");
    source.onopen = () => { liveState.textContent = "live"; liveState.className = "live on"; };
    source.onerror = () => { liveState.textContent = "reconnecting…"; liveState.className = "live"; };
    source.addEventListener("exchange", (e) => {
      const s = JSON.parse(e.data);
      rows.unshift(s);
      if (rows.length > 1000) rows.pop();
      if (matches(s)) tbody.prepend(row(s));
    });
  }

  function pretty(value) {
    if (value == null) return "(none)";
    if (typeof value === "string") {
      try { return JSON.stringify(JSON.parse(value), null, 2); } catch (_) { return value; }
    }
    return JSON.stringify(value, null, 2);
  }

  function parsed(value) {
    if (typeof value !== "string") return value;
    try { return JSON.parse(value); } catch (_) { return undefined; }
  }

  function token(key) { return String(key).replace(/~/g, "~0").replace(/\//g, "~1"); }

  // A JSON value as JSON.stringify(value, null, 2) lays it out, one entry per line with its JSON
  // Pointer (RFC 6901): the pointers the server's diff names.
  function layout(value, ptr, indent, key, comma, out) {
    const pad = " ".repeat(indent) + (key == null ? "" : JSON.stringify(key) + ": ");
    const isArray = Array.isArray(value);
    const entries = value && typeof value === "object" ? (isArray ? value.map((v, i) => [i, v]) : Object.entries(value)) : null;
    if (!entries || !entries.length) {
      out.push([pad + (entries ? (isArray ? "[]" : "{}") : JSON.stringify(value)) + comma, ptr]);
      return;
    }
    out.push([pad + (isArray ? "[" : "{"), ptr]);
    entries.forEach(([k, v], i) => layout(v, ptr + "/" + token(k), indent + 2, isArray ? null : k,
                                          i < entries.length - 1 ? "," : "", out));
    out.push([" ".repeat(indent) + (isArray ? "]" : "}") + comma, ptr]);
  }

  // A body, with the proxy's changes marked: `marks` maps a JSON Pointer to its change (op, was);
  // a line is marked when its entry or one it is inside is.
  function showBody(id, value, marks) {
    const pre = document.getElementById(id);
    const json = parsed(value);
    if (json === undefined || json === null || !marks) { pre.textContent = pretty(value); return; }
    const lines = [];
    layout(json, "", 0, null, "", lines);
    pre.replaceChildren(...lines.map(([text, ptr]) => {
      let at = ptr;
      while (!marks.has(at) && at) at = at.slice(0, at.lastIndexOf("/"));
      const mark = marks.get(at);
      const span = el("span", {class: mark ? "line changed" : "line", "data-path": ptr}, text + "\n");
      if (mark) {
        span.dataset.op = mark.op;
        span.dataset.mark = at;
        span.title = mark.op === "removed" ? "dropped by the proxy" : mark.op === "added" ? "added by the proxy"
          : "changed by the proxy; the client's was " + JSON.stringify(mark.was);
      }
      return span;
    }));
  }

  // The pointers of one side of a diff: `side` "a" (the source) or "b" (the result).
  function marksOf(entries, side) {
    const marks = new Map();
    for (const e of entries || []) if (e[side] != null) marks.set(e[side], e);
    return marks;
  }

  // What the upstream spoke, as the titles of its two bodies say it.
  const WIRES = {generate_content: "Gemini", interactions: "Gemini Interactions",
                 chat_completions: "Upstream (Chat Completions)"};

  function upstreamAnswer(doc) {
    const up = doc.upstream || [];
    if (!up.length) return null;
    const last = up[up.length - 1];
    return last.answer != null ? last.answer : last.chunks;
  }

  async function open(id) {
    const r = await fetch("/inspect/api/exchanges/" + encodeURIComponent(id), {credentials: "same-origin"});
    if (!r.ok) return;
    const doc = await r.json();
    openId = id;
    for (const tr of tbody.querySelectorAll("tr")) tr.classList.toggle("open", tr.dataset.id === id);
    detail.hidden = false;
    document.getElementById("detail-title").textContent =
      `${doc.method} ${doc.path} → ${doc.status}${doc.error ? " · " + doc.error : ""}`;
    const up = doc.upstream || [];
    const attempts = up.flatMap((u) => (u.attempts || []).map((a) => `${u.model}: ${a.status ?? "–"} key ${a.key ?? "–"}` +
      (a.error ? " (" + String(a.error).slice(0, 120) + ")" : "")));
    document.getElementById("summary").replaceChildren(el("dl", {},
      el("dt", {}, "model"), el("dd", {}, `${doc.client_model || "–"} → ${doc.gemini_model || "–"}`),
      el("dt", {}, "session"), el("dd", {}, doc.session || "–"),
      el("dt", {}, "request id"), el("dd", {}, doc.request_id || "–"),
      el("dt", {}, "times"), el("dd", {}, `total ${doc.total_ms} ms · proxy ${doc.proxy_ms} ms · upstream ${doc.upstream_ms} ms` +
        (up[0] && up[0].first_byte_ms != null ? ` · first byte ${up[0].first_byte_ms} ms` : "")),
      el("dt", {}, "attempts"), el("dd", {}, attempts.join("; ") || "–"),
      el("dt", {}, "tools"), el("dd", {}, (doc.tools || []).join(", ") || "–"),
      el("dt", {}, "calls"), el("dd", {}, (doc.calls || []).map((c) => `${c.name} (${c.id || "no id"})`).join(", ") || "–")));
    const list = document.getElementById("decisions");
    list.replaceChildren(...(doc.decisions || []).map((n) => {
      const extra = Object.entries(n).filter(([k]) => k !== "kind" && k !== "message")
        .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ");
      return el("li", {class: "note " + n.kind}, el("strong", {}, n.kind), " ", n.message,
        extra ? el("span", {class: "detail"}, " — " + extra) : "");
    }));
    if (!(doc.decisions || []).length) list.replaceChildren(el("li", {}, "none: the request went as sent"));
    const changes = doc.changes || {request: [], answer: []};
    showBody("body-client-request", doc.client_request ? doc.client_request.body : null, marksOf(changes.request, "a"));
    const wire = WIRES[up.length ? up[up.length - 1].wire : ""] || "Gemini";
    document.getElementById("title-gemini-request").textContent = wire + " request";
    document.getElementById("title-gemini-answer").textContent = wire + " answer";
    showBody("body-gemini-request", up.length ? up[up.length - 1].request : null, marksOf(changes.request, "b"));
    showBody("body-gemini-answer", upstreamAnswer(doc), marksOf(changes.answer, "a"));
    showBody("body-client-answer", doc.client_answer ? doc.client_answer.body : null, marksOf(changes.answer, "b"));
    const session = document.getElementById("session");
    session.replaceChildren();
    if (doc.session && doc.kind !== "mitm") {
      const s = await fetch("/inspect/api/sessions/" + encodeURIComponent(doc.session), {credentials: "same-origin"});
      if (s.ok) {
        const data = await s.json();
        session.append(el("h3", {}, "Session " + doc.session),
          el("p", {}, "tools: " + (data.functionDeclarations || []).map((d) => d.name).join(", ")),
          el("p", {}, "captured rounds: " + (data.rounds || []).length));
      }
    }
  }

  function selectedRow() {
    return selectedId == null ? null : tbody.querySelector(`tr[data-id="${CSS.escape(selectedId)}"]`);
  }

  function close() {
    detail.hidden = true;
    openId = null;
    for (const tr of tbody.querySelectorAll("tr.open")) tr.classList.remove("open");
    const row = selectedRow();
    if (row) row.focus();
  }

  // The keyboard's row: `step` rows on (Infinity: the last, -Infinity: the first); with the detail
  // open, the detail follows.
  function move(step) {
    const rowsNow = Array.from(tbody.querySelectorAll("tr"));
    if (!rowsNow.length) return;
    const current = rowsNow.indexOf(selectedRow());
    const last = rowsNow.length - 1;
    const at = step === Infinity ? last : step === -Infinity ? 0 : current < 0 ? (step > 0 ? 0 : last)
      : Math.max(0, Math.min(last, current + step));
    const row = rowsNow[at];
    selectedId = row.dataset.id;
    row.focus();
    row.scrollIntoView({block: "nearest"});
    if (!detail.hidden && row.dataset.id !== openId) open(row.dataset.id);
  }

  document.getElementById("close").addEventListener("click", close);
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target.matches("input, select, textarea");
    if (e.key === "Escape") { if (typing) e.target.blur(); close(); return; }
    if (typing) return;
    // The arrows, Home and End scroll a body or a pane that has the focus; j, k, g and G always move.
    const inList = e.target === document.body || e.target.matches("#exchanges tr, #list-pane");
    const key = e.key;
    if (key === "j" || (key === "ArrowDown" && inList)) move(1);
    else if (key === "k" || (key === "ArrowUp" && inList)) move(-1);
    else if (key === "g" || (key === "Home" && inList)) move(-Infinity);
    else if (key === "G" || (key === "End" && inList)) move(Infinity);
    else if ((key === "Enter" || key === "o") && e.target.matches("#exchanges tr")) open(e.target.dataset.id);
    else if (key === "/") filters.querySelector("input").focus();
    else return;
    e.preventDefault();
  });
  filters.addEventListener("input", () => load());
  filters.addEventListener("submit", (e) => e.preventDefault());
  load().then(connect);

  // Antigravity's and Code Assist's quota, as the intercepted apps' account calls last reported it
  // (/inspect/api/quota; refused under client keys, when the panel stays hidden).
  const quota = document.getElementById("quota");
  async function loadQuota() {
    let buckets = [];
    try {
      const r = await fetch("/inspect/api/quota", {credentials: "same-origin"});
      if (r.ok) buckets = (await r.json()).buckets || [];
    } catch (e) { /* the panel stays as it was */ }
    const body = quota.querySelector("tbody");
    body.replaceChildren(...buckets.map((b) => el("tr", {}, el("td", {}, b.account), el("td", {}, b.bucket),
      el("td", {}, Math.round(b.remaining * 100) + "%"), el("td", {}, b.reset || ""))));
    quota.hidden = buckets.length === 0;
  }
  loadQuota();
  setInterval(loadQuota, 15000);
})();
