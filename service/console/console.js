// Operator console. Plain JavaScript, no dependencies, no network beyond this origin.
// The admin token lives only in the `state.token` variable below: never in
// localStorage, sessionStorage, cookies or the URL. Every value from the server is
// written with textContent, never as HTML.
"use strict";

(() => {
  const REFRESH_MS = 3000;
  const HISTORY_POINTS = 60;
  const PHASES = [1, 2, 3];

  const state = {
    token: null,            // admin token, in memory only
    flagsAvailable: null,   // null unknown, true, false (endpoint missing)
    flags: [],              // [{name, value, source}]
    history: { 1: [], 2: [], 3: [] },
    timer: null,
    busy: false,
  };

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
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

  function fmt(value, digits = 1) {
    if (value === null || value === undefined || value === "") return "–";
    if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(digits);
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  function pct(value) {
    if (typeof value !== "number") return "–";
    return (value <= 1 ? value * 100 : value).toFixed(1) + " %";
  }

  async function api(method, path, body, admin) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (admin && state.token) headers.Authorization = "Bearer " + state.token;
    let response;
    try {
      response = await fetch(path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit", cache: "no-store",
      });
    } catch (err) {
      return { ok: false, status: 0, data: { error: "network error: " + err.message } };
    }
    let data = null;
    const text = await response.text();
    try { data = text ? JSON.parse(text) : null; } catch { data = { error: text.slice(0, 300) }; }
    return { ok: response.ok, status: response.status, data };
  }

  function errorText(res) {
    const d = res.data || {};
    let msg = d.error || d.detail || ("HTTP " + res.status);
    if (typeof msg !== "string") msg = JSON.stringify(msg);
    if (Array.isArray(d.detail)) msg += ": " + d.detail.map((x) => x.message || JSON.stringify(x)).join("; ");
    return "HTTP " + res.status + " – " + msg;
  }

  // ---------------------------------------------------------------- service status
  async function refreshReady() {
    const pill = $("service-status");
    const res = await api("GET", "/ready");
    if (res.ok) {
      const d = res.data || {};
      pill.textContent = "ready · " + fmt(d.documents) + " docs · " + fmt(d.chunks) + " chunks" +
        (d.semantic_ready ? " · phase 3 ready" : " · phase 3 indexing") +
        (typeof d.phase === "number" ? " · configured phase " + d.phase : "") +
        (typeof d.phase_in_force === "number" && d.phase_in_force !== d.phase
          ? " · in force " + (d.phase_in_force === 0 ? "none (disabled)" : "phase " + d.phase_in_force) : "");
      pill.className = "pill ok";
      $("decision-status").textContent = decisionLine(d) + selfCheckLine(d.corpus_self_check);
      // Before the admin token loads the flags, the configured phase comes from /ready:
      // the selector never shows a phase the service is not configured with.
      if (typeof d.phase === "number" && !state.flags.length && document.activeElement !== $("flag-phase")) {
        $("flag-phase").value = String(d.phase);
      }
    } else {
      pill.textContent = "not ready: " + ((res.data && (res.data.reason || res.data.error)) || res.status);
      pill.className = "pill bad";
    }
  }

  // Which fit decides (/ready): a fit learned from reviewed traffic with its held-out figures,
  // the corpus's fit file, the portable fit, or the seed rules.
  // An error only when something failed (calibration_error); why the corpus's own fit does
  // not decide, where nothing failed, is a note.
  function decisionLine(d) {
    const why = d.calibration_error || d.calibration_note;
    if (d.decision_policy !== "calibrated" || !d.calibration) {
      return "decided by: the seed rules" + (why ? " (" + why + ")" : "");
    }
    const failed = d.calibration_error ? "; error: " + d.calibration_error : "";
    const h = d.calibration_held_out;
    if (d.calibration_source === "review" && h && h.fit) {
      return "decided by: " + d.calibration + " (own, fitted on " + fmt(h.fitted_on) + " reviewed cases; held out: right " +
        pct(h.fit.right_rate) + ", wrong " + pct(h.fit.wrong_rate) + ")";
    }
    if (d.calibration_source === "portable") {
      return "decided by: portable fit " + d.calibration + " (this corpus has no fit of its own" + failed + ")";
    }
    return "decided by: " + d.calibration + " (own fit file" + failed + ")";
  }

  // The corpus's self-check (/ready, flag decision.corpus_probes): how often questions made from
  // its own sections found their page at phase 3, and what it moves p by.
  function selfCheckLine(c) {
    if (!c) return "";
    return " · self-check: " + fmt(c.hits) + " of " + fmt(c.probes) + " own questions found their page (" +
      pct(c.hit_rate) + "), mean p " + c.mean_p.toFixed(2) + (c.shift ? ", p moved " + c.shift.toFixed(2) + " logits" : "");
  }

  // The corpus's own categories (GET /documents), refreshed with the status:
  // a re-seed may bring new ones. The current choice is kept when still valid.
  async function refreshCategories() {
    const res = await api("GET", "/documents");
    if (!res.ok || !res.data || !Array.isArray(res.data.categories)) return;
    const select = $("category");
    const chosen = select.value;
    const wanted = ["", ...res.data.categories];
    const have = Array.from(select.options).map((o) => o.value);
    if (wanted.join("\n") === have.join("\n")) return;
    select.replaceChildren(...wanted.map((c) => el("option", { value: c, text: c || "any" })));
    select.value = wanted.includes(chosen) ? chosen : "";
  }

  // ---------------------------------------------------------------- retrieve
  function evidenceTable(results) {
    if (!results || results.length === 0) return el("p", { class: "empty", text: "No evidence." });
    const head = ["#", "Doc", "Header path", "Score", "Matched terms", "Source", "Why (match_explain)"];
    const rows = results.map((r, i) => el("tr", { "data-doc": r.doc_slug },
      el("td", { class: "num", "data-label": "#", text: String(i + 1) }),
      el("td", { class: "doc", "data-label": "Doc" }, el("code", { text: r.doc_slug }), el("br"),
        el("span", { class: "meta", text: r.title + " · " + r.category })),
      el("td", { "data-label": "Header path", text: r.header_path || "–" }),
      // The score exactly as the response carries it (4 decimals): the number `match_explain` explains.
      el("td", { class: "num score", "data-label": "Score", text: fmt(r.score, 4) }),
      el("td", { "data-label": "Matched terms" },
        el("span", { class: "terms" }, (r.matched_terms || []).map((t) => el("span", { class: "term", text: t })))),
      el("td", { "data-label": "Source", text: r.source }),
      el("td", { class: "why", "data-label": "Why" }, r.match_explain && r.match_explain.length
        ? el("ul", { class: "explain" }, r.match_explain.map((line) => el("li", { text: line })))
        : "–"),
    ));
    return el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Evidence" },
      el("table", { class: "evidence stack" },
        el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, rows)));
  }

  function renderResponse(d, heading) {
    const parts = [];
    if (heading) parts.push(el("h3", { text: heading }));
    parts.push(el("div", { class: "verdict" },
      el("span", { class: "decision " + d.status, text: d.status }),
      el("span", { class: "meta", text: "phase " + d.phase + (d.source_tier ? " (" + d.source_tier + ")" : "") +
        " · confidence " + fmt(d.confidence, 2) + " · " + fmt(d.latency_ms, 1) + " ms" }),
    ));
    if (d.message) {
      parts.push(el("p", { class: "hint", text: "Message shown to the user:" }));
      parts.push(el("blockquote", { class: "message", "data-testid": "message", text: d.message }));
    }
    if (d.options && d.options.length) {
      parts.push(el("ul", { class: "options", "aria-label": "Options" }, d.options.map((o) =>
        el("li", {}, el("button", {
          type: "button", title: o.doc_slug,
          onclick: () => { $("query").value = o.title; runQuery(); },
        }, optionLabel(o, d.options))))));
    }
    parts.push(evidenceTable(d.results));
    if (d.fallback_path && d.fallback_path.length) {
      parts.push(el("p", { class: "meta", text: "Fallback path:" }));
      parts.push(el("ol", { class: "fallback" },
        d.fallback_path.map((s) => el("li", {}, el("code", { text: s.tier }), " – " + s.reason))));
    } else {
      parts.push(el("p", { class: "meta", text: "Fallback path: none (normal path)" }));
    }
    parts.push(el("p", { class: "meta", text: "request " + d.request_id }));
    return parts;
  }

  function retrieveBody(phase) {
    const body = { query: $("query").value };
    if (phase) body.phase = Number(phase);
    const k = Number($("top-k").value);
    if (k) body.top_k = k;
    if ($("category").value) body.category = $("category").value;
    return body;
  }

  function disagreement(responses) {
    const ok = responses.filter((r) => r.ok).map((r) => r.data);
    if (ok.length < 2) return null;
    const decisions = new Set(ok.map((d) => d.status));
    const tops = new Set(ok.map((d) => (d.results[0] || {}).doc_slug || "none"));
    if (decisions.size === 1 && tops.size === 1) {
      return el("p", { class: "pill ok", role: "note", text: "All phases agree: " + [...decisions][0] + " · top " + [...tops][0] });
    }
    return el("p", { class: "pill warn", role: "note",
      text: "Phases disagree: decisions " + [...decisions].join(" / ") + " · top documents " + [...tops].join(" / ") });
  }

  async function runQuery(event) {
    if (event) event.preventDefault();
    const out = $("results");
    if (!$("query").value.trim()) { out.replaceChildren(el("p", { class: "error", text: "Type a query first." })); return; }
    out.setAttribute("aria-busy", "true");
    $("query-submit").disabled = true;
    try {
      document.querySelector("main.grid").classList.toggle("sbs", $("side-by-side").checked);
      if ($("side-by-side").checked) {
        const responses = await Promise.all(PHASES.map((p) => api("POST", "/retrieve", retrieveBody(p))));
        const columns = responses.map((res, i) => el("div", { class: "column", "data-phase": String(PHASES[i]) },
          res.ok ? renderResponse(res.data, "Phase " + PHASES[i]) :
            [el("h3", { text: "Phase " + PHASES[i] }), el("p", { class: "error", text: errorText(res) })]));
        out.replaceChildren(disagreement(responses) || "", el("div", { class: "columns" }, columns));
      } else {
        const res = await api("POST", "/retrieve", retrieveBody($("phase").value));
        out.replaceChildren(...(res.ok ? renderResponse(res.data) : [el("p", { class: "error", text: errorText(res) })]));
      }
    } finally {
      out.setAttribute("aria-busy", "false");
      $("query-submit").disabled = false;
    }
  }

  // ---------------------------------------------------------------- conversation
  const MAX_HISTORY = 10;
  const conv = { history: [], clarification: null, turns: 0 };

  function screenOf() {
    const screen = $("conv-screen").value.trim();
    if (!screen) return null;
    const ui = { screen };
    const focused = $("conv-focused").value.trim();
    if (focused) ui.focused = focused;
    return ui;
  }

  function conversationNotes(d) {
    const c = d.conversation;
    if (!c) return [];
    const lines = [];
    if (c.topic === "history") lines.push("Topic carried from turn " + c.from_turn + ": “" + c.carried + "”");
    if (c.topic === "reply") lines.push("Reply to the clarification: " + (c.reply || "") + (c.chosen ? " → " + c.chosen : ""));
    if (c.reply === "new question") lines.push("Reply read as a new question");
    if (c.screen) lines.push("Screen used: " + c.screen);
    if (c.query) lines.push("Searched: “" + c.query + "”");
    return lines.map((text) => el("li", { class: "note", text }));
  }

  // An option's label, as the question words it (service/decide/clarify.py `named`): its
  // category only where the options' categories differ.
  function optionLabel(o, options) {
    const categories = new Set(options.map((x) => x.category));
    return categories.size > 1 ? o.title + " (" + o.category + ")" : o.title;
  }

  function assistantTurn(d) {
    const top = (d.results || [])[0];
    const parts = [el("span", { class: "decision " + d.status, text: d.status })];
    if (d.message) parts.push(el("blockquote", { class: "message", "data-testid": "conv-message", text: d.message }));
    if (top && d.status === "answer") {
      parts.push(el("p", { class: "conv-answer", "data-doc": top.doc_slug },
        el("code", { text: top.doc_slug }), " › " + (top.header_path || top.title)));
    }
    if (d.clarification && d.options && d.options.length) {
      parts.push(el("ul", { class: "options", "aria-label": "Clarification options" }, d.options.map((o) =>
        el("li", {}, el("button", { type: "button", title: o.doc_slug, onclick: () => sendMessage(o.title) },
          optionLabel(o, d.options))))));
    }
    const notes = conversationNotes(d);
    if (notes.length) parts.push(el("ul", { class: "conv-notes", "aria-label": "How the message was read" }, notes));
    return parts;
  }

  async function sendMessage(text) {
    const message = (text ?? $("conv-message").value).trim();
    const list = $("conv-transcript");
    if (!message) return;
    const body = { query: message };
    if (conv.history.length) body.history = conv.history.slice(-MAX_HISTORY);
    const ui = screenOf();
    if (ui) body.ui_context = ui;
    if (conv.clarification) body.reply_to = conv.clarification;
    $("conv-send").disabled = true;
    try {
      const res = await api("POST", "/retrieve", body);
      if (!conv.turns) list.replaceChildren();
      list.append(el("li", { class: "turn user", "data-turn": String(conv.history.length) }, el("span", { class: "who", text: "You" }), message));
      if (!res.ok) {
        list.append(el("li", { class: "turn error", text: errorText(res) }));
        return;
      }
      const d = res.data;
      list.append(el("li", { class: "turn assistant", "data-status": d.status }, el("span", { class: "who", text: "Docs" }), assistantTurn(d)));
      const slugs = [...new Set((d.results || []).map((r) => r.doc_slug))];
      const top = (d.results || [])[0];
      const said = d.message || (top ? (top.header_path || top.title) : d.status);
      conv.history.push({ role: "user", content: message });
      conv.history.push(d.status === "answer" && slugs.length
        ? { role: "assistant", content: said, doc_slugs: slugs.slice(0, 10) }
        : { role: "assistant", content: said });
      conv.clarification = d.clarification || null;
      conv.turns += 1;
      if (text === undefined) $("conv-message").value = "";
    } finally {
      $("conv-send").disabled = false;
    }
  }

  function resetConversation() {
    conv.history = []; conv.clarification = null; conv.turns = 0;
    $("conv-transcript").replaceChildren(el("li", { class: "empty", text: "No messages yet." }));
  }

  // ---------------------------------------------------------------- flags + monitors
  const KILL_KEYS = ["kill_switch", "kill_switches", "killswitch", "monitor", "monitors"];

  function flagRows(data) {
    let f = data && (data.flags ?? data.effective ?? data.values);
    if (f === undefined) f = data;
    if (Array.isArray(f)) {
      return f.map((x) => ({ name: x.name ?? x.key, value: x.value, source: x.source ?? "",
        configured: x.configured, configuredSource: x.configured_source }));
    }
    if (f && typeof f === "object") {
      return Object.entries(f).filter(([k]) => !KILL_KEYS.includes(k)).map(([k, v]) =>
        v && typeof v === "object" && "value" in v
          ? { name: k, value: v.value, source: v.source ?? "", default: v.default }
          : { name: k, value: v, source: "" });
    }
    return [];
  }

  function killSection(data) {
    if (!data || typeof data !== "object") return null;
    for (const key of KILL_KEYS) if (data[key] && typeof data[key] === "object") return data[key];
    return null;
  }

  function pick(obj, ...names) {
    if (!obj) return undefined;
    for (const n of names) if (obj[n] !== undefined && obj[n] !== null) return obj[n];
    return undefined;
  }

  function phaseWindows(ks) {
    // -> [{phase, samples, p50, p95, errorRate, state}]
    let w = pick(ks, "phases", "windows", "per_phase", "monitors");
    if (!w) return [];
    let entries;
    if (Array.isArray(w)) entries = w.map((x, i) => [pick(x, "phase", "tier", "name") ?? i + 1, x]);
    else entries = Object.entries(w);
    return entries.map(([phase, x]) => {
      const win = pick(x, "window", "stats") || x;
      return {
        phase: String(phase).replace(/^phase/, ""),
        samples: pick(win, "samples", "count", "n"),
        p50: pick(win, "p50_ms", "p50"),
        p95: pick(win, "p95_ms", "p95"),
        errorRate: pick(win, "error_rate", "errors_rate"),
        state: pick(x, "state", "status", "breaker") ?? "",
      };
    });
  }

  function renderFlags() {
    const body = $("flags-body");
    const filter = $("flags-filter").value.trim().toLowerCase();
    if (state.flagsAvailable === false) {
      body.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "empty",
        text: "Not available: this service has no GET /admin/flags (runtime flags, issue 6, are not deployed)." })));
      return;
    }
    if (!state.token) {
      body.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "empty", text: "Enter the admin token to load the flags." })));
      return;
    }
    const pinned = (f) => (f.name === "enabled" ? 0 : f.name === "phase" ? 1 : 2);
    const rows = state.flags.filter((f) => !filter || String(f.name).toLowerCase().includes(filter))
      .sort((a, b) => pinned(a) - pinned(b));
    body.replaceChildren(...rows.map((f) => el("tr", { "data-flag": f.name },
      el("th", { scope: "row" }, el("code", { text: f.name })),
      el("td", {}, el("code", { text: fmt(f.value, 3) })),
      el("td", { class: "source-" + String(f.source).replace(/[^a-z_]/gi, "_") },
        f.source || "–",
        f.configured !== undefined ? el("span", { class: "meta", text: " (configured " + fmt(f.configured) + " from " + fmt(f.configuredSource) + ")" }) : ""),
      el("td", { class: "flag-actions" }, (f.source === "override" || f.configuredSource === "override")
        ? el("button", { type: "button", "aria-label": "Drop the override of " + f.name, title: "Drop the override of " + f.name,
            onclick: () => adminAction("DELETE", "/admin/flags/" + encodeURIComponent(f.name), undefined, "dropped override of " + f.name) },
          "Drop")
        : ""),
    )));
    if (rows.length === 0) body.replaceChildren(el("tr", {}, el("td", { colspan: "4", class: "empty", text: "No flags match." })));
    const phase = state.flags.find((f) => f.name === "phase");
    if (phase && document.activeElement !== $("flag-phase")) {
      $("flag-phase").value = String(phase.configured !== undefined ? phase.configured : phase.value);
    }
  }

  function renderMonitors(data) {
    const body = $("monitor-body");
    const pill = $("kill-state");
    if (state.flagsAvailable === false) {
      body.replaceChildren(el("tr", {}, el("td", { colspan: "6", class: "empty",
        text: "Not available: no kill-switch monitor on this service (GET /admin/flags is missing)." })));
      pill.textContent = "kill switch: not available";
      pill.className = "pill warn";
      $("trips").replaceChildren(el("li", { class: "empty", text: "not available" }));
      return;
    }
    if (!data) return;
    const ks = killSection(data);
    if (!ks) {
      body.replaceChildren(el("tr", {}, el("td", { colspan: "6", class: "empty", text: "The flags response has no kill-switch section." })));
      return;
    }
    const overall = String(pick(ks, "state", "status", "mode") ?? "unknown");
    const ceiling = pick(ks, "ceiling");
    let label = "kill switch: " + overall;
    if (ceiling === 0) label += " · retrieval disabled";
    else if (typeof ceiling === "number") label += " · phases capped at " + ceiling;
    const cooldown = pick(ks, "cooldown_remaining_s");
    if (typeof cooldown === "number" && cooldown > 0) label += " · probe in " + Math.ceil(cooldown) + " s";
    pill.textContent = label;
    pill.className = "pill " + (/^(closed|ok)$/.test(overall) ? "ok" : /half/.test(overall) ? "warn" : "bad");

    const windows = phaseWindows(ks);
    body.replaceChildren(...windows.map((w) => el("tr", { "data-phase": w.phase },
      el("th", { scope: "row", text: w.phase }),
      el("td", { class: "num", "data-testid": "samples", text: fmt(w.samples) }),
      el("td", { class: "num", text: fmt(w.p50) }),
      el("td", { class: "num", text: fmt(w.p95) }),
      el("td", { class: "num", text: pct(w.errorRate) }),
      phaseState(w, ceiling),
    )));
    if (windows.length === 0) body.replaceChildren(el("tr", {}, el("td", { colspan: "6", class: "empty", text: "No windows reported yet." })));

    for (const w of windows) {
      const h = state.history[w.phase];
      if (!h) continue;
      h.push(typeof w.p95 === "number" ? w.p95 : null);
      if (h.length > HISTORY_POINTS) h.shift();
    }
    drawChart();

    // Newest first (the service lists them that way).
    const trips = pick(ks, "events", "trips", "recent_trips", "history") || [];
    $("trips").replaceChildren(...(trips.length ? trips.slice(0, 20).map((t) => el("li", {
      class: /recover|reset/.test(String(t.kind)) ? "state-ok" : "state-bad",
      text: typeof t === "string" ? t : [when(pick(t, "at", "when", "time")), pick(t, "kind", "action", "event"),
        pick(t, "trigger"), t.phase !== undefined && t.phase !== null ? "phase " + t.phase : null,
        t.ceiling !== undefined && t.ceiling !== null ? "ceiling " + t.ceiling : null, pick(t, "reason", "detail")]
        .filter((x) => x !== undefined && x !== null && x !== "").map((x) => fmt(x)).join(" · "),
    })) : [el("li", { class: "empty", text: "none" })]));
    renderAudit(data.audit);
  }

  function when(at) {
    if (typeof at === "number") return new Date(at > 1e12 ? at : at * 1000).toLocaleTimeString();
    if (typeof at === "string" && !Number.isNaN(Date.parse(at))) return new Date(at).toLocaleTimeString();
    return at;
  }

  function phaseState(w, ceiling) {
    const n = Number(w.phase);
    let text = w.state || "in use";
    let bad = false;
    if (ceiling === 0) { text = "disabled"; bad = true; }
    else if (typeof ceiling === "number" && n > ceiling) { text = "dropped"; bad = true; }
    return el("td", { class: bad ? "state-bad" : "state-ok", text });
  }

  function renderAudit(rows) {
    const list = $("audit");
    if (!Array.isArray(rows) || rows.length === 0) { list.replaceChildren(el("li", { class: "empty", text: "none" })); return; }
    list.replaceChildren(...rows.slice(0, 10).map((r) => el("li", {
      text: [when(r.at), r.action, r.name, fmt(r.old_value) + " → " + fmt(r.new_value), r.actor_address ? "from " + r.actor_address : null]
        .filter((x) => x !== undefined && x !== null && x !== "").join(" · "),
    })));
  }

  // A cleared, device-pixel-sharp canvas and the theme's colours, for both charts.
  function freshCanvas(id) {
    const canvas = $(id);
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 560;
    const height = canvas.clientHeight || 180;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const css = getComputedStyle(document.documentElement);
    const colour = (name) => css.getPropertyValue(name).trim() || "#888";
    return { canvas, ctx, width, height, colour };
  }

  // A fresh canvas with the grid both charts share: four horizontal lines
  // labelled by tick(i) for i = 0..4, and a footer line of text.
  function chartFrame(id, tick, footer) {
    const frame = freshCanvas(id);
    const { ctx, width, height, colour } = frame;
    const pad = { l: 42, r: 8, t: 8, b: 16 };
    const plotW = width - pad.l - pad.r;
    const plotH = height - pad.t - pad.b;
    ctx.strokeStyle = colour("--line");
    ctx.fillStyle = colour("--muted");
    ctx.font = "11px system-ui, sans-serif";
    ctx.lineWidth = 1;
    for (let i = 0; i <= 4; i++) {
      const y = pad.t + plotH - (plotH * i) / 4;
      ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(width - pad.r, y); ctx.stroke();
      ctx.fillText(tick(i), 4, y + 4);
    }
    ctx.fillText(footer, pad.l + 4, height - 3);
    return { ...frame, pad, plotW, plotH };
  }

  function drawChart() {
    const all = PHASES.flatMap((p) => state.history[p].filter((v) => v !== null));
    const max = Math.max(10, ...all) * 1.15;
    const { canvas, ctx, colour, pad, plotW, plotH } = chartFrame(
      "latency-chart", (i) => ((max * i) / 4).toFixed(max < 40 ? 1 : 0), "samples: " + HISTORY_POINTS + " × 3 s");
    const latest = [];
    for (const p of PHASES) {
      const h = state.history[p];
      ctx.strokeStyle = colour("--p" + p);
      ctx.lineWidth = 2;
      ctx.beginPath();
      let started = false;
      h.forEach((v, i) => {
        if (v === null) { started = false; return; }
        const x = pad.l + (plotW * (i + HISTORY_POINTS - h.length)) / (HISTORY_POINTS - 1);
        const y = pad.t + plotH - (plotH * v) / max;
        if (started) ctx.lineTo(x, y); else { ctx.moveTo(x, y); started = true; }
      });
      ctx.stroke();
      ctx.fillStyle = colour("--p" + p);
      h.forEach((v, i) => {  // a dot per sample: a single poll is visible too
        if (v === null) return;
        const x = pad.l + (plotW * (i + HISTORY_POINTS - h.length)) / (HISTORY_POINTS - 1);
        ctx.beginPath(); ctx.arc(x, pad.t + plotH - (plotH * v) / max, 2.2, 0, 2 * Math.PI); ctx.fill();
      });
      const last = h.filter((v) => v !== null).pop();
      latest.push("phase " + p + " " + (last === undefined ? "no data" : last.toFixed(1) + " ms"));
    }
    canvas.setAttribute("aria-label", "p95 latency per phase over time; latest: " + latest.join(", "));
  }

  async function refreshFlags() {
    if (!state.token || state.flagsAvailable === false) { renderFlags(); renderMonitors(null); return; }
    const res = await api("GET", "/admin/flags", undefined, true);
    if (res.status === 404 || res.status === 405) {
      state.flagsAvailable = false;
      for (const b of ["set-phase", "enable", "disable", "kill", "reset"]) $(b).disabled = true;
      renderFlags(); renderMonitors(null);
      return;
    }
    if (res.status === 401 || res.status === 403) {
      setToken(null, "Token rejected: " + errorText(res));
      return;
    }
    if (!res.ok) { $("flags-status").textContent = "Could not load flags: " + errorText(res); return; }
    state.flagsAvailable = true;
    state.flags = flagRows(res.data);
    renderFlags();
    renderMonitors(res.data);
    $("monitor-updated").textContent = "updated " + new Date().toLocaleTimeString();
  }

  async function adminAction(method, path, body, done) {
    if (!state.token) { $("flags-status").textContent = "Enter the admin token first."; return; }
    $("flags-status").textContent = "working…";
    const res = await api(method, path, body, true);
    if (res.status === 404 && state.flagsAvailable !== true) {
      $("flags-status").textContent = "Not available: " + method + " " + path + " does not exist on this service.";
      return;
    }
    $("flags-status").textContent = res.ok ? "Done: " + done + "." : "Failed: " + errorText(res);
    await refreshFlags();
  }

  function setToken(token, message) {
    state.token = token || null;
    operatorPanels(state.token);
    for (const b of document.querySelectorAll("[data-admin]")) b.disabled = !state.token;
    $("token-status").textContent = message;
    if (!state.token) { state.flags = []; state.flagsAvailable = null; }
    renderFlags();
    renderMonitors(null);
    if (!state.token) {
      $("monitor-body").replaceChildren(el("tr", {}, el("td", { colspan: "6", class: "empty", text: "Enter the admin token to watch the monitors." })));
      $("kill-state").textContent = "kill switch: unknown";
      $("kill-state").className = "pill";
      $("trips").replaceChildren(el("li", { class: "empty", text: "none" }));
      $("audit").replaceChildren(el("li", { class: "empty", text: "none" }));
    }
  }

  async function useToken(event) {
    event.preventDefault();
    const input = $("admin-token");
    const token = input.value.trim();
    input.value = "";  // the token now lives only in state.token
    if (!token) { setToken(null, "No token given."); return; }
    setToken(token, "Checking token…");
    const res = await api("GET", "/admin/replay/files", undefined, true);
    if (res.status === 401 || res.status === 403) { setToken(null, "Token rejected: " + errorText(res)); return; }
    $("token-status").textContent = "Token in use (memory only).";
    if (res.ok && res.data && Array.isArray(res.data.files)) {
      $("replay-files").replaceChildren(...res.data.files.map((f) => el("option", { value: f })));
    }
    await refreshFlags();
  }

  // ---------------------------------------------------------------- replay
  let lastReplay = null;

  function renderReplay() {
    const out = $("replay-results");
    if (!lastReplay) return;
    const r = lastReplay;
    const onlyFailures = $("replay-failures").checked;
    const rows = r.results.filter((c) => !onlyFailures || !c.passed).map((c) => el("tr", { class: c.passed ? "" : "failed" },
      el("td", { "data-label": "Verdict" }, el("span", { class: c.passed ? "pass" : "fail", text: c.passed ? "PASS" : "FAIL" })),
      el("td", { "data-label": "Case" }, el("code", { text: c.id })),
      el("td", { "data-label": "Phase", text: String(c.phase) }),
      el("td", { "data-label": "Query", text: c.query }),
      el("td", { "data-label": "Reason", text: c.failures.join("; ") || "–" }),
    ));
    out.replaceChildren(
      el("p", { class: "summary " + (r.failed ? "fail" : "pass"), "data-testid": "replay-summary",
        text: r.source + ": " + r.passed + " passed, " + r.failed + " failed (" + fmt(r.duration_ms, 0) + " ms)" }),
      rows.length ? el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Replay results" },
        el("table", { class: "stack" },
          el("thead", {}, el("tr", {}, ["Verdict", "Case", "Phase", "Query", "Reason"].map((h) => el("th", { scope: "col", text: h })))),
          el("tbody", {}, rows)))
        : el("p", { class: "empty", text: "No failures." }),
    );
  }

  async function runReplay(event) {
    event.preventDefault();
    const out = $("replay-results");
    if (!state.token) { out.replaceChildren(el("p", { class: "error", text: "Enter the admin token first." })); return; }
    const body = { file: $("replay-file").value.trim() };
    if ($("replay-phase").value) body.phase = Number($("replay-phase").value);
    out.setAttribute("aria-busy", "true");
    $("replay-run").disabled = true;
    out.replaceChildren(el("p", { class: "hint", text: "Replaying " + body.file + "…" }));
    try {
      const res = await api("POST", "/admin/replay", body, true);
      if (!res.ok) { lastReplay = null; out.replaceChildren(el("p", { class: "error", text: errorText(res) })); return; }
      lastReplay = res.data;
      renderReplay();
    } finally {
      out.setAttribute("aria-busy", "false");
      $("replay-run").disabled = !state.token;
    }
  }


  // ---------------------------------------------------------------- operator loop
  // Review queue, insights (with a rate chart) and curations (service/feedback, service/curation).
  const RATE_LINES = [["keyword_match_rate", "--p1"], ["clarify_rate", "--p2"], ["no_match_rate", "--p3"]];
  const opState = { insights: null };

  function emptyRow(id, cols, text) {
    $(id).replaceChildren(el("tr", {}, el("td", { colspan: String(cols), class: "empty", text })));
  }

  async function loadReview(event) {
    if (event) event.preventDefault();
    if (!state.token) return;
    const day = $("review-period").value;
    const res = await api("GET", "/admin/review" + (day ? "?period=" + encodeURIComponent(day) : ""), undefined, true);
    if (!res.ok) { $("review-status").textContent = errorText(res); return; }
    const d = res.data;
    $("review-status").textContent = d.items.length + " of " + d.size + " sampled, " + d.period + " from "
      + d.start.slice(0, 10) + " (seed " + d.seed + ")";
    if (!d.items.length) { emptyRow("review-body", 6, "No answered queries in this period."); return; }
    $("review-body").replaceChildren(...d.items.map(reviewRow));
  }

  // What the user typed, and beside it what was searched (when the conversation rewrote it)
  // and the normalised tokens the ranking used.
  function queryCell(item) {
    if (item.query === null) return el("td", { text: "(text not stored)" });
    const typed = item.typed || item.query;
    const parts = [el("span", { class: "typed", "data-testid": "typed", text: typed })];
    if (item.query !== typed) {
      parts.push(el("span", { class: "meta searched", "data-testid": "searched", text: "searched: " + item.query }));
    }
    parts.push(el("span", { class: "meta normalised", "data-testid": "normalised",
      text: "normalised: " + ((item.tokens || []).join(" ") || "–") }));
    return el("td", { class: "query-cell" }, parts);
  }

  function reviewRow(item) {
    const evidence = el("ol", { class: "evidence" }, ...(item.results || []).map((r) =>
      el("li", {}, el("code", { text: r.doc_slug }), r.header_path ? " › " + r.header_path : "", " (" + fmt(r.score, 3) + ")")));
    const feedback = (item.feedback || []).map((f) => f.verdict + (f.expected_slug ? " → " + f.expected_slug : "")).join(", ") || "–";
    const review = item.review ? item.review.verdict + (item.review.expected_slug ? " → " + item.review.expected_slug : "")
      + " by " + item.review.reviewer + " (" + item.reviews + ")" : "–";
    const slug = el("input", { "aria-label": "Page it should be", placeholder: "should be page…", class: "slug" });
    const mark = (verdict, body) => el("button", { type: "button", "data-admin": true, text: verdict,
      onclick: () => postReview(item.request_id, body || { verdict }) });
    return el("tr", { "data-request-id": item.request_id },
      queryCell(item),
      el("td", { text: item.status + " · phase " + item.phase + " · " + fmt(item.confidence, 2) }),
      el("td", {}, evidence), el("td", { text: feedback }), el("td", { class: "review-state", text: review }),
      el("td", { class: "mark" }, mark("right"), mark("wrong"), slug,
        el("button", { type: "button", "data-admin": true, text: "should be",
          onclick: () => postReview(item.request_id, { verdict: "should_be", expected_slug: slug.value.trim() }) })));
  }

  async function postReview(requestId, body) {
    const res = await api("POST", "/admin/review/" + encodeURIComponent(requestId), body, true);
    if (res.ok) await loadReview();  // the row shows the review now in force
    $("review-status").textContent = res.ok ? "Reviewed " + requestId.slice(0, 12) + ": " + body.verdict : errorText(res);
  }

  async function loadInsights(event) {
    if (event) event.preventDefault();
    if (!state.token) return;
    const res = await api("GET", "/admin/insights?window=" + $("insights-window").value, undefined, true);
    if (!res.ok) { $("insights-status").textContent = errorText(res); return; }
    const d = res.data;
    opState.insights = d;
    $("insights-status").textContent = d.counts.queries + " queries from " + d.start.slice(0, 16).replace("T", " ")
      + " UTC; log: " + d.log.written + " written, " + d.log.queued + " queued, dropped " + JSON.stringify(d.log.dropped);
    const rows = Object.entries(d.rates).map(([name, r]) =>
      el("tr", {}, el("th", { scope: "row", text: name.replaceAll("_", " ") }), el("td", { text: pct(r.rate) }),
        el("td", { text: r.count + " / " + r.of })));
    for (const p of d.latency_by_phase) {
      rows.push(el("tr", {}, el("th", { scope: "row", text: "latency phase " + p.phase + " (p50 / p95 ms)" }),
        el("td", { text: fmt(p.p50_ms, 2) + " / " + fmt(p.p95_ms, 2) }), el("td", { text: p.n + " queries" })));
    }
    $("insights-body").replaceChildren(...rows);
    $("insights-triggers").replaceChildren(...d.triggers.map((t) => el("li", {
      class: t.fired && !t.in_force ? "fired" : t.in_force ? "in-force" : "",
      text: "phase " + t.phase + ": " + t.text })));
    drawInsights();
  }

  function drawInsights() {
    const points = (opState.insights && opState.insights.series) || [];
    const { canvas, ctx, colour, pad, plotW, plotH } = chartFrame(
      "insights-chart", (i) => 25 * i + " %", points.length + " buckets");
    for (const [key, colourName] of RATE_LINES) {
      ctx.strokeStyle = colour(colourName);
      ctx.fillStyle = colour(colourName);
      ctx.lineWidth = 2;
      ctx.beginPath();
      let started = false;
      points.forEach((point, i) => {
        const v = point[key];
        if (v === null || v === undefined) { started = false; return; }
        const x = pad.l + (points.length > 1 ? (plotW * i) / (points.length - 1) : plotW / 2);
        const y = pad.t + plotH - plotH * v;
        if (started) ctx.lineTo(x, y); else { ctx.moveTo(x, y); started = true; }
        ctx.fillRect(x - 2, y - 2, 4, 4);
      });
      ctx.stroke();
    }
    const last = points[points.length - 1];
    canvas.setAttribute("aria-label", last ? "rates over " + points.length + " buckets; latest keyword match "
      + pct(last.keyword_match_rate) + ", clarify " + pct(last.clarify_rate) + ", no match " + pct(last.no_match_rate)
      : "keyword match, clarify and no-match rates over the window; no data yet");
  }

  async function loadCurations() {
    if (!state.token) return;
    const res = await api("GET", "/admin/curations", undefined, true);
    if (!res.ok) { $("curations-status").textContent = errorText(res); return; }
    const items = res.data.curations;
    if (!items.length) { emptyRow("curations-body", 7, "No curations."); return; }
    $("curations-body").replaceChildren(...items.map((c) => el("tr", { class: c.stale ? "stale" : "" },
      el("td", { text: "#" + c.id }), el("td", { text: c.match }), el("td", {}, el("code", { text: c.phrase })),
      el("td", { text: c.action + (c.stale ? " (stale: " + c.stale_reason + ")" : "") }),
      el("td", { text: c.doc_slug + (c.header_path ? " › " + c.header_path : "") }),
      el("td", { text: c.created_by + " " + c.created_at.slice(0, 16).replace("T", " ") }),
      el("td", {}, el("button", { type: "button", "data-admin": true, text: "Remove",
        onclick: () => removeCuration(c.id) })))));
  }

  async function addCuration(event) {
    event.preventDefault();
    const body = { query: $("curation-query").value, match: $("curation-match").value,
      action: $("curation-action").value, doc_slug: $("curation-slug").value.trim() };
    const section = $("curation-section").value.trim();
    if (section) body.header_path = section;
    const res = await api("POST", "/admin/curations", body, true);
    if (res.ok) await loadCurations();
    $("curations-status").textContent = res.ok ? "Added curation #" + res.data.id + " ('" + res.data.phrase + "')" : errorText(res);
  }

  async function removeCuration(id) {
    const res = await api("DELETE", "/admin/curations/" + id, undefined, true);
    await loadCurations();
    $("curations-status").textContent = res.ok ? "Removed curation #" + id : errorText(res);
  }

  function operatorPanels(token) {
    if (!token) {
      emptyRow("review-body", 6, "Enter the admin token to load the sample.");
      emptyRow("insights-body", 3, "Enter the admin token to load the figures.");
      emptyRow("curations-body", 7, "Enter the admin token to load the curations.");
      $("insights-triggers").replaceChildren(el("li", { class: "empty", text: "none" }));
      opState.insights = null;
      drawInsights();
      return;
    }
    loadReview();
    loadInsights();
    loadCurations();
  }

  // ---------------------------------------------------------------- wiring
  function tick() {
    if ($("auto-refresh").checked && state.token) refreshFlags();
  }

  function init() {
    $("query-form").addEventListener("submit", runQuery);
    $("conv-form").addEventListener("submit", (event) => { event.preventDefault(); sendMessage(); });
    $("conv-reset").addEventListener("click", resetConversation);
    $("token-form").addEventListener("submit", useToken);
    $("token-forget").addEventListener("click", () => setToken(null, "Token forgotten."));
    $("flags-filter").addEventListener("input", renderFlags);
    $("replay-form").addEventListener("submit", runReplay);
    $("replay-failures").addEventListener("change", renderReplay);
    $("set-phase").addEventListener("click", () => adminAction("PUT", "/admin/flags",
      { name: "phase", value: Number($("flag-phase").value) }, "phase set to " + $("flag-phase").value));
    $("enable").addEventListener("click", () => adminAction("PUT", "/admin/flags", { name: "enabled", value: true }, "retrieval enabled"));
    $("disable").addEventListener("click", () => adminAction("PUT", "/admin/flags", { name: "enabled", value: false }, "retrieval disabled"));
    $("kill").addEventListener("click", () => {
      if (window.confirm("Disable retrieval for every user now (kill switch)?")) {
        adminAction("POST", "/admin/kill", { reason: "operator console" }, "kill switch engaged");
      }
    });
    $("reset").addEventListener("click", () => adminAction("POST", "/admin/reset", undefined, "kill switch reset"));
    $("auto-refresh").addEventListener("change", tick);
    $("review-form").addEventListener("submit", loadReview);
    $("insights-form").addEventListener("submit", loadInsights);
    $("curation-form").addEventListener("submit", addCuration);
    window.addEventListener("resize", drawInsights);
    window.addEventListener("resize", drawChart);
    setToken(null, "");
    drawChart();
    refreshReady();
    refreshCategories();
    state.timer = window.setInterval(tick, REFRESH_MS);
    window.setInterval(refreshReady, 10000);
    window.setInterval(refreshCategories, 10000);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
