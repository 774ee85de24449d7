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
      document.getElementById("usage-view").refresh?.();
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
    if (!document.getElementById("usage-view").hidden) return;  // the list's keys move the list only
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

  // The Usage view: tokens (bars, stacked by model or key) and cost (a line) per UTC day, from
  // /inspect/api/usage (GET /v1/usage with the sign-in cookie: an admin key sees every key, another
  // key only its own), and a table per key x model for the range. Plain SVG made here.
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2457c5", "#1f7a3f", "#c26a00", "#8e3bb5", "#b3261e", "#00838f", "#6d4c41", "#5b6475"];
  const exchangesView = document.getElementById("exchanges-view");
  const usageView = document.getElementById("usage-view");
  const controls = document.getElementById("usage-controls");
  const chart = document.getElementById("usage-chart");
  const usageSource = document.getElementById("usage-source");
  const tabs = {exchanges: document.getElementById("tab-exchanges"), usage: document.getElementById("tab-usage")};

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  }

  // USD with 4 significant digits (at least cents), trailing zeros dropped, as `gemini-tool-proxy usage`.
  function money(v) {
    if (!v) return "$0";
    let t = v.toFixed(Math.min(20, Math.max(2, 3 - Math.floor(Math.log10(Math.abs(v))))));
    if (t.includes(".")) { const [w, f] = t.split("."); t = w + "." + f.replace(/0+$/, "").padEnd(2, "0"); }
    return "$" + t;
  }

  const tokensOf = (r) => r.input_tokens + r.thinking_tokens + r.output_tokens;  // input includes the cached

  function utcDays(n) {
    const now = new Date();
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    return Array.from({length: n}, (_, i) => new Date(today - (n - 1 - i) * 86400000).toISOString().slice(0, 10));
  }

  function drawChart(days, rows, by) {
    const W = 960, H = 280, left = 64, right = 72, top = 12, bottom = 30;
    const plotW = W - left - right, plotH = H - top - bottom, slot = plotW / days.length;
    const series = [...new Set(rows.map((r) => r[by]))].sort();
    const color = (name) => COLORS[series.indexOf(name) % COLORS.length];
    const perDay = Object.fromEntries(days.map((d) => [d, {tokens: 0, cost: 0}]));
    for (const r of rows) { perDay[r.day].tokens += tokensOf(r); perDay[r.day].cost += r.cost_usd; }
    const maxTokens = Math.max(1, ...days.map((d) => perDay[d].tokens));
    const maxCost = Math.max(...days.map((d) => perDay[d].cost)) || 1e-6;
    chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const parts = [svg("line", {class: "axis", x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH}),
      svg("text", {x: left - 6, y: top + 10, "text-anchor": "end"}, maxTokens.toLocaleString()),
      svg("text", {x: left - 6, y: top + plotH, "text-anchor": "end"}, "0"),
      svg("text", {x: 4, y: top + plotH / 2}, "tokens"),
      svg("text", {x: left + plotW + 6, y: top + 10}, money(maxCost)),
      svg("text", {x: left + plotW + 6, y: top + plotH}, "$0"),
      svg("text", {x: left + plotW + 6, y: top + plotH / 2}, "USD")];
    const every = Math.ceil(days.length / 10);
    days.forEach((d, i) => {
      const x = left + i * slot;
      if (i % every === 0 || i === days.length - 1) {
        parts.push(svg("text", {x: x + slot / 2, y: H - 10, "text-anchor": "middle"}, d.slice(5)));
      }
      let y = top + plotH;
      for (const name of series) {
        const mine = rows.filter((r) => r.day === d && r[by] === name);
        const tokens = mine.reduce((n, r) => n + tokensOf(r), 0);
        const cost = mine.reduce((n, r) => n + r.cost_usd, 0);
        if (!mine.length) continue;
        const h = tokens / maxTokens * plotH;
        y -= h;
        parts.push(svg("rect", {class: "bar", x: x + slot * .15, y, width: slot * .7, height: Math.max(h, 1),
          fill: color(name), "data-day": d, "data-series": name, "data-tokens": tokens, "data-cost": cost},
        svg("title", {}, `${d} · ${name}: ${tokens.toLocaleString()} tokens, ${money(cost)}, ` +
                         `${mine.reduce((n, r) => n + r.requests, 0)} request(s)`)));
      }
    });
    const point = (d, i) => [left + i * slot + slot / 2, top + plotH - perDay[d].cost / maxCost * plotH];
    parts.push(svg("polyline", {class: "cost", points: days.map((d, i) => point(d, i).join(",")).join(" ")}));
    days.forEach((d, i) => {
      const [cx, cy] = point(d, i);
      parts.push(svg("circle", {class: "cost-point", cx, cy, r: days.length > 40 ? 1.5 : 2.5, "data-day": d,
        "data-cost": perDay[d].cost}, svg("title", {}, `${d}: ${money(perDay[d].cost)}`)));
    });
    if (!rows.length) {
      parts.push(svg("text", {x: left + plotW / 2, y: top + plotH / 2, "text-anchor": "middle"},
                     "no usage in this range"));
    }
    chart.replaceChildren(...parts);
    const swatch = (fill, line) => svg("svg", {width: 12, height: 12, "aria-hidden": "true"},
      line ? svg("line", {x1: 0, y1: 6, x2: 12, y2: 6, stroke: fill, "stroke-width": 2})
        : svg("rect", {width: 12, height: 12, fill}));
    document.getElementById("usage-legend").replaceChildren(
      ...series.map((name) => el("span", {class: "series"}, swatch(color(name)), name)),
      el("span", {}, swatch("#1d2330", true), "cost (USD, right axis)"),
      el("span", {}, "bars: input + thinking + output tokens (input includes the cached)"));
  }

  const COUNTS = ["requests", "input_tokens", "cached_tokens", "thinking_tokens", "output_tokens", "tool_calls", "errors"];
  function cells(r) {
    return [...COUNTS.map((f) => el("td", {class: "num"}, r[f].toLocaleString("en-US"))),
            el("td", {class: "num", title: String(r.cost_usd)}, money(r.cost_usd))];
  }

  async function readUsage(days, groups) {
    const q = new URLSearchParams({from: days[0], to: days[days.length - 1], group_by: groups});
    const r = await fetch("/inspect/api/usage?" + q, {credentials: "same-origin"});
    const doc = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error((doc.error && doc.error.message) || "cannot read the usage: " + r.status);
    return doc;
  }

  let usageAsked = 0;  // the latest reading: an older one that answers after it is dropped
  async function loadUsage() {
    const asked = ++usageAsked;
    const days = utcDays(Number(controls.elements.days.value));
    const by = controls.elements.series.value;
    let perDay, table;
    try {
      [perDay, table] = await Promise.all([readUsage(days, "day," + by), readUsage(days, "key,model")]);
    } catch (e) {
      if (asked !== usageAsked) return;
      usageSource.textContent = e.message;
      usageSource.className = "problem";
      return;
    }
    if (asked !== usageAsked) return;
    usageSource.className = "muted";
    usageSource.textContent = `${table.from} … ${table.to} (UTC days) · cost in ${table.currency} from ` +
      table.price_source + (table.totals.unpriced_requests ? ` · ${table.totals.unpriced_requests} request(s) ` +
                                                             "of a model without a price are not in the cost" : "");
    drawChart(days, perDay.data, by);
    document.querySelector("#usage-table tbody").replaceChildren(...(table.data.length ? table.data.map(
      (r) => el("tr", {"data-key": r.key, "data-model": r.model}, el("td", {}, r.key), el("td", {}, r.model),
                ...cells(r)))
      : [el("tr", {}, el("td", {colspan: "10", class: "muted"}, "no usage in this range"))]));
    document.querySelector("#usage-table tfoot").replaceChildren(
      el("tr", {}, el("td", {colspan: "2"}, "total"), ...cells(table.totals)));
  }

  function show(view) {
    const usage = view === "usage";
    exchangesView.hidden = usage;
    usageView.hidden = !usage;
    tabs.usage.setAttribute("aria-selected", String(usage));
    tabs.exchanges.setAttribute("aria-selected", String(!usage));
    history.replaceState(null, "", usage ? "#usage" : location.pathname);
    if (usage) loadUsage();
  }
  tabs.exchanges.addEventListener("click", () => show("exchanges"));
  tabs.usage.addEventListener("click", () => show("usage"));
  controls.addEventListener("change", () => loadUsage());
  controls.addEventListener("submit", (e) => e.preventDefault());
  if (location.hash === "#usage") show("usage");
  // New answers are counted as they come: the view follows the live stream, a second behind it.
  let usageTimer = null;
  usageView.refresh = () => {
    if (usageView.hidden || usageTimer) return;
    usageTimer = setTimeout(() => { usageTimer = null; loadUsage(); }, 1000);
  };
})();
