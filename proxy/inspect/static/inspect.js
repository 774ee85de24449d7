// The inspector: a live list of exchanges (/inspect/api/live), one exchange's four bodies side by side
// with the proxy's changes marked, and its decisions. Plain DOM, no framework, nothing from outside.
"use strict";
(function () {
  const tbody = document.querySelector("#exchanges tbody");
  const filters = document.getElementById("filters");
  const detail = document.getElementById("detail");
  const liveState = document.getElementById("live");
  let rows = [];
  let selected = -1;

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

  function row(s) {
    const ok = s.status < 400 && !s.error;
    const time = new Date(s.time * 1000).toLocaleTimeString();
    const model = (s.client_model || "–") + " → " + (s.gemini_model || "–");
    const calls = (s.calls || []).map((c) => c.name).join(", ");
    const tokens = s.input_tokens == null ? "" : `${s.input_tokens} / ${s.output_tokens ?? "–"}`;
    const tr = el("tr", {tabindex: "0", "data-id": s.id, class: ok ? "ok" : "failed"},
      el("td", {}, time), el("td", {}, where(s)),
      el("td", {}, s.method + " " + s.path), el("td", {}, model), el("td", {}, (s.tools || []).length),
      el("td", {class: "calls"}, calls), el("td", {class: "status"}, s.status + (s.error ? " ⚠" : "")),
      el("td", {}, `${s.proxy_ms} / ${s.upstream_ms}`), el("td", {}, tokens));
    tr.title = s.error || "";
    tr.addEventListener("click", () => open(s.id));
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(s.id); });
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

  // Lines of `text` not found in `base` are the proxy's changes: marked.
  function showBody(id, value, base) {
    const pre = document.getElementById(id);
    const text = pretty(value);
    if (base == null) { pre.textContent = text; return; }
    const seen = new Set(pretty(base).split("\n").map((l) => l.trim().replace(/,$/, "")));
    pre.replaceChildren(...text.split("\n").map((line) => {
      const changed = !seen.has(line.trim().replace(/,$/, "")) && line.trim().length > 1;
      return el("span", {class: changed ? "changed line" : "line"}, line + "\n");
    }));
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
    const clientBody = doc.client_request ? doc.client_request.body : null;
    showBody("body-client-request", clientBody, null);
    const wire = WIRES[up.length ? up[up.length - 1].wire : ""] || "Gemini";
    document.getElementById("title-gemini-request").textContent = wire + " request";
    document.getElementById("title-gemini-answer").textContent = wire + " answer";
    showBody("body-gemini-request", up.length ? up[up.length - 1].request : null, clientBody);
    showBody("body-gemini-answer", upstreamAnswer(doc), null);
    showBody("body-client-answer", doc.client_answer ? doc.client_answer.body : null, upstreamAnswer(doc));
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
    document.getElementById("close").focus();
  }

  function close() {
    detail.hidden = true;
    const rowsNow = tbody.querySelectorAll("tr");
    if (rowsNow[selected]) rowsNow[selected].focus();
  }

  function move(step) {
    const rowsNow = tbody.querySelectorAll("tr");
    if (!rowsNow.length) return;
    const current = Array.prototype.indexOf.call(rowsNow, document.activeElement);
    selected = Math.max(0, Math.min(rowsNow.length - 1, (current < 0 ? selected : current) + step));
    rowsNow[selected].focus();
  }

  document.getElementById("close").addEventListener("click", close);
  document.addEventListener("keydown", (e) => {
    const typing = e.target.matches("input, select, textarea");
    if (e.key === "Escape") { if (typing) e.target.blur(); close(); return; }
    if (typing) return;
    if (e.key === "j" || e.key === "ArrowDown") { move(1); e.preventDefault(); }
    else if (e.key === "k" || e.key === "ArrowUp") { move(-1); e.preventDefault(); }
    else if (e.key === "/") { filters.querySelector("input").focus(); e.preventDefault(); }
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
