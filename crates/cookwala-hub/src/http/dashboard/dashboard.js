"use strict";
// Errors are kept where a test (or a person in the console) can read them.
window.__cwErrors = [];
window.addEventListener("error", (e) => window.__cwErrors.push(String(e.message || e)));
window.addEventListener("unhandledrejection", (e) => window.__cwErrors.push("unhandled: " + String(e.reason)));

const FINAL = new Set(["refused", "stopped", "completed", "failed"]);
const WORDS = {
  accepted: "Accepted", refused: "Refused", preparing: "Preparing", running: "Running",
  paused: "Paused", needs_human: "Needs a person", stopping: "Stopping", stopped: "Stopped",
  completed: "Completed", failed: "Failed",
};
const COLOURS = ["#d62728", "#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"];
const S = {
  token: sessionStorage.getItem("cookwala.token") || "",
  devices: [], execs: new Map(), selected: null, traces: new Map(), logs: new Map(),
  incidents: [], lastEventId: null, streaming: false,
};
const $ = (id) => document.getElementById(id);
const el = (tag, attrs, ...kids) => {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") n.className = v; else if (k === "text") n.textContent = v; else n.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) n.append(k);
  return n;
};
const SVGNS = "http://www.w3.org/2000/svg";
const sv = (tag, attrs, text) => {
  const n = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
};
const words = (state) => WORDS[state] || state || "unknown";
const short = (t) => (t ? String(t).replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "");

function headers(extra) {
  const h = Object.assign({ Accept: "application/json, application/vnd.cookwala+json" }, extra || {});
  if (S.token) h.Authorization = "Bearer " + S.token;
  return h;
}
async function api(path, opts) {
  const res = await fetch(path, Object.assign({ headers: headers(), cache: "no-store" }, opts || {}));
  if (res.status === 401) { needToken("The hub refused the token."); throw new Error("unauthorized"); }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
  return { ok: res.ok, status: res.status, body, headers: res.headers };
}
function newKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return "dash-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// ---- auth
function takeFragmentToken() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!m) return;
  S.token = decodeURIComponent(m[1]);
  sessionStorage.setItem("cookwala.token", S.token);
  history.replaceState(null, "", location.pathname + location.search);
}
function needToken(msg) {
  S.token = "";
  sessionStorage.removeItem("cookwala.token");
  $("app").hidden = true;
  $("auth").hidden = false;
  $("autherr").textContent = msg || "";
  $("tokeninput").focus();
}
$("authform").addEventListener("submit", (e) => {
  e.preventDefault();
  S.token = $("tokeninput").value.trim();
  sessionStorage.setItem("cookwala.token", S.token);
  $("tokeninput").value = "";
  start();
});
$("forget").addEventListener("click", () => { stopStream(); needToken(""); });

// ---- devices
function renderDevices() {
  const ul = $("devices");
  const seen = new Set();
  for (const d of S.devices) {
    seen.add(d.id);
    let li = ul.querySelector(`[data-device-id="${CSS.escape(d.id)}"]`);
    if (!li) {
      li = el("li", { class: "device", "data-testid": "device", "data-device-id": d.id },
        el("div", {}, el("div", { class: "name" }), el("div", { class: "sub" })), el("span", { class: "pill" }));
      ul.append(li);
    }
    // A device of the kitchen (its own process) may be offline: the hub then shows what it
    // last knew and why it is lost, never a state it made up.
    const state = d.online === false ? "offline" : d.busy ? "busy" : "idle";
    li.dataset.state = state;
    li.querySelector(".name").textContent = d.name || d.id;
    li.querySelector(".sub").textContent = d.id + (d.root ? " · root" : "") +
      (d.origin === "kitchen" ? " · own process" : "") +
      (d.online === false && d.offlineReason ? " · lost (" + d.offlineReason.replace("_", " ") + ") " + short(d.since).slice(11) : "") +
      (d.lastHeartbeat ? " · heartbeat " + short(d.lastHeartbeat).slice(11) : "");
    const pill = li.querySelector(".pill");
    pill.className = "pill s-" + state;
    pill.textContent = { offline: "Offline", busy: "Busy", idle: "Idle" }[state];
  }
  for (const li of [...ul.children]) if (!seen.has(li.dataset.deviceId)) li.remove();
}

// ---- executions
function upsertExec(x) {
  const old = S.execs.get(x.id) || {};
  // Never go back to an older seq.
  if (old.seq !== undefined && x.seq !== undefined && x.seq < old.seq) x = Object.assign({}, x, { state: old.state, seq: old.seq });
  const merged = Object.assign({}, old, x);
  if (x.state && x.state !== "needs_human" && !x.humanNeeded) delete merged.humanNeeded;
  S.execs.set(x.id, merged);
  // A device turns busy or idle when one of its executions starts or ends.
  if (S.ready && old.state !== merged.state && (FINAL.has(merged.state) || !old.state)) loadDevices().catch(() => {});
  return merged;
}
function renderExecs() {
  const ul = $("executions");
  const list = [...S.execs.values()].sort((a, b) =>
    String(b.createdAt || b.updatedAt || "").localeCompare(String(a.createdAt || a.updatedAt || "")) || (b.order || 0) - (a.order || 0));
  $("noexec").hidden = list.length > 0;
  let prev = $("noexec");
  for (const x of list) {
    let li = ul.querySelector(`[data-execution-id="${CSS.escape(x.id)}"]`);
    if (!li) {
      const pick = el("button", { class: "pick", type: "button" },
        el("div", { class: "id" }), el("div", { class: "sub" }));
      pick.addEventListener("click", () => select(x.id));
      li = el("li", { class: "execution", "data-testid": "execution", "data-execution-id": x.id },
        pick, el("span", { class: "pill" }), el("div", { class: "human", hidden: "" }));
    }
    if (prev.nextSibling !== li) prev.after(li);
    prev = li;
    const state = x.state || "unknown";
    li.dataset.state = state;
    li.setAttribute("aria-current", String(S.selected === x.id));
    li.querySelector(".id").textContent = x.id;
    li.querySelector(".sub").textContent = [x.device, x.createdAt ? short(x.createdAt).slice(11) : ""].filter(Boolean).join(" · ");
    const pill = li.querySelector(".pill");
    pill.className = "pill s-" + state;
    pill.textContent = words(state);
    const human = li.querySelector(".human");
    human.hidden = state !== "needs_human";
    human.textContent = state === "needs_human" ? "⚠ A person is needed: " + ((x.humanNeeded && x.humanNeeded.why) || "see the device") : "";
    let stop = li.querySelector('[data-testid="stop"]');
    if (!FINAL.has(state)) {
      if (!stop) {
        stop = el("button", { class: "stop", type: "button", "data-testid": "stop", "aria-label": "Stop " + x.id }, "Stop");
        stop.addEventListener("click", () => stopExec(x.id));
        li.querySelector(".pill").before(stop);
      }
      stop.disabled = state === "stopping" || !!x.stopSent;
      stop.textContent = stop.disabled ? "Stopping…" : "Stop";
    } else if (stop) {
      stop.remove();
    }
  }
  if (!S.selected && list.length) {
    const running = list.find((x) => !FINAL.has(x.state));
    select((running || list[0]).id);
  }
}
async function stopExec(id) {
  const x = S.execs.get(id);
  if (!x) return;
  x.stopSent = true;
  renderExecs();
  try {
    const r = await api(`/v1/executions/${encodeURIComponent(id)}/stop`, {
      method: "POST",
      headers: headers({ "Idempotency-Key": newKey(), "Content-Type": "application/vnd.cookwala+json" }),
      body: JSON.stringify({ reason: "stopped from the dashboard" }),
    });
    if (r.body && r.body.state) upsertExec(r.body);
    else x.stopSent = false;
  } catch (_) { x.stopSent = false; }
  renderAll();
  loadDevices().catch(() => {});
  refreshSelected().catch(() => {});
}
async function resumeExec(id) {
  const x = S.execs.get(id);
  if (!x) return;
  const prefix = x.device ? `/devices/${encodeURIComponent(x.device)}` : "";
  const r = await api(`${prefix}/v1/executions/${encodeURIComponent(id)}/resume`, {
    method: "POST",
    headers: headers({ "Idempotency-Key": newKey(), "If-Match": `"${x.seq}"`, "Content-Type": "application/vnd.cookwala+json" }),
  });
  if (r.body && r.body.state) upsertExec(r.body);
  else if (r.body && r.body.detail) x.note = r.body.detail;
  renderAll();
}
function select(id) {
  S.selected = id;
  renderAll();
  refreshSelected();
}

// ---- the chart: every reading against each step's envelope band (as `cookwala cook --plot`)
function renderChart(box, tr) {
  const W = 960, H = 400, L = 56, R = 150, T = 18, B = 44, pw = W - L - R, ph = H - T - B;
  let tEnd = 1, yMax = 50;
  for (const s of tr.steps) { tEnd = Math.max(tEnd, s.endMs || 0, s.startMs || 0); if (s.bandC) yMax = Math.max(yMax, s.bandC[1]); }
  for (const p of tr.points) { tEnd = Math.max(tEnd, p[0]); yMax = Math.max(yMax, p[2]); }
  yMax = Math.ceil(yMax / 50) * 50;
  const x = (t) => L + (pw * t) / tEnd;
  const y = (v) => T + ph * (1 - Math.min(1.1, Math.max(-0.1, v / yMax)));
  const svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "font-size": "12", "font-family": "system-ui, sans-serif",
    "aria-label": `Readings of ${tr.id} against each step's envelope band` });
  svg.append(sv("rect", { width: W, height: H, fill: "#fff" }));
  for (let v = 0; v <= yMax; v += 50) {
    svg.append(sv("line", { x1: L, x2: L + pw, y1: y(v), y2: y(v), stroke: "#eee" }));
    svg.append(sv("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", fill: "#555" }, String(v)));
  }
  for (const s of tr.steps) {
    const x0 = x(s.startMs), x1 = x(s.endMs == null ? tEnd : s.endMs);
    if (s.bandC) {
      const [lo, hi] = s.bandC;
      const r = sv("rect", { x: x0, y: y(hi), width: Math.max(0.5, x1 - x0), height: Math.max(0.5, y(lo) - y(hi)),
        fill: "#2ca02c", "fill-opacity": "0.15", stroke: "#2ca02c", "stroke-opacity": "0.5", "data-band": s.node });
      r.append(sv("title", {}, `${s.node} (${s.op}) band ${lo}–${hi} °C${s.medium ? " · " + s.medium : ""}`));
      svg.append(r);
      if (s.targetC != null) svg.append(sv("line", { x1: x0, x2: x1, y1: y(s.targetC), y2: y(s.targetC), stroke: "#2ca02c", "stroke-dasharray": "4 3" }));
    }
    svg.append(sv("line", { x1: x0, x2: x0, y1: T, y2: T + ph, stroke: "#999", "stroke-dasharray": "2 3" }));
    svg.append(sv("text", { x: x0 + 3, y: T + 12, fill: "#555" }, s.node));
  }
  svg.append(sv("line", { x1: L, x2: L, y1: T, y2: T + ph, stroke: "#000" }));
  svg.append(sv("line", { x1: L, x2: L + pw, y1: T + ph, y2: T + ph, stroke: "#000" }));
  const minutes = tEnd / 60000;
  const stepMin = minutes > 120 ? 30 : minutes > 30 ? 10 : minutes > 8 ? 2 : minutes > 3 ? 1 : minutes > 1 ? 0.5 : 0.25;
  for (let k = 0; k * stepMin <= minutes; k++) {
    const m = k * stepMin;
    svg.append(sv("line", { x1: x(m * 60000), x2: x(m * 60000), y1: T + ph, y2: T + ph + 4, stroke: "#000" }));
    svg.append(sv("text", { x: x(m * 60000), y: T + ph + 16, "text-anchor": "middle", fill: "#555" }, String(+m.toFixed(2))));
  }
  svg.append(sv("text", { x: L + pw / 2, y: H - 8, "text-anchor": "middle", fill: "#333" }, "simulated minutes"));
  svg.append(sv("text", { x: 14, y: T + ph / 2, transform: `rotate(-90 14 ${T + ph / 2})`, fill: "#333" }, "°C"));
  tr.sensors.forEach((sensor, i) => {
    const pts = tr.points.filter((p) => p[1] === i);
    if (!pts.length) return;
    const stride = Math.max(1, Math.ceil(pts.length / 1500));
    const coords = [];
    for (let k = 0; k < pts.length; k += stride) coords.push(`${x(pts[k][0]).toFixed(1)},${y(pts[k][2]).toFixed(1)}`);
    const last = pts[pts.length - 1];
    coords.push(`${x(last[0]).toFixed(1)},${y(last[2]).toFixed(1)}`);
    const colour = COLOURS[i % COLOURS.length];
    svg.append(sv("polyline", { fill: "none", stroke: colour, "stroke-width": "1.6", points: coords.join(" "), "data-readings": sensor }));
    const ly = T + 10 + 34 * i, name = sensor.replace(/^cw\.sense\./, "");
    svg.append(sv("line", { x1: L + pw + 10, x2: L + pw + 28, y1: ly, y2: ly, stroke: colour, "stroke-width": "3" }));
    svg.append(sv("text", { x: L + pw + 34, y: ly + 4 }, name));
    svg.append(sv("text", { x: L + pw + 34, y: ly + 19, fill: "#555" }, `${last[2].toFixed(1)} °C now`));
  });
  box.replaceChildren(svg);
}

// ---- the detail of the selected execution
function renderDetail() {
  const box = $("detail");
  const x = S.execs.get(S.selected);
  if (!x) { box.replaceChildren(el("p", { class: "empty", text: "Pick an execution to see its readings." })); return; }
  const state = x.state || "unknown";
  const kids = [el("h2", {}, el("span", { class: "title", text: x.id }), el("span", { class: "pill s-" + state, text: words(state) }))];
  if (state === "needs_human") {
    const b = el("div", { class: "banner human", role: "alert" },
      el("strong", { text: "⚠ A person is needed" }),
      el("span", { text: (x.humanNeeded && x.humanNeeded.why) || "The device waits for a person." }),
      el("div", { text: "Do it, then confirm here (an owner or cook token) or on the device." }));
    const go = el("button", { class: "primary", type: "button", text: "Done — resume" });
    go.addEventListener("click", () => resumeExec(x.id));
    b.append(go);
    kids.push(b);
  }
  if (x.note) kids.push(el("p", { class: "err", role: "alert", text: x.note }));
  if (x.refusal) kids.push(el("div", { class: "banner refused", text: "Refused: " + (x.refusal.reason || "") + (x.refusal.detail ? " — " + x.refusal.detail : "") }));
  const tr = S.traces.get(x.id);
  const step = tr && tr.steps.length ? tr.steps[tr.steps.length - 1] : null;
  kids.push(el("div", { class: "facts" },
    el("span", {}, "Device ", el("b", { text: x.device || "?" })),
    el("span", {}, "State ", el("b", { text: words(state) })),
    step ? el("span", {}, "Step ", el("b", { text: `${step.node} (${step.op})` })) : null,
    step && step.bandC ? el("span", {}, "Band ", el("b", { text: `${step.bandC[0]}–${step.bandC[1]} °C` })) : null,
    el("span", {}, "Updated ", el("b", { text: short(x.updatedAt) }))));
  const chart = el("div", { "data-testid": "chart" });
  if (tr && (tr.points.length || tr.steps.length)) renderChart(chart, tr);
  else chart.append(el("p", { class: "empty", text: FINAL.has(state) ? "No readings were seen live for this execution; its log is below." : "Waiting for the first readings…" }));
  kids.push(chart);
  const log = S.logs.get(x.id);
  if (log) {
    const sec = el("div", { "data-testid": "log" });
    kids.push(sec);
    sec.append(el("h3", { text: "Log · outcome " + (log.outcome || "?") }));
    const tbl = el("table", { class: "steps" }, el("tr", {}, el("th", { text: "Step" }), el("th", { text: "Op" }), el("th", { text: "Envelope" }), el("th", { text: "Deviation" })));
    for (const s of log.steps || []) {
      tbl.append(el("tr", {}, el("td", { text: s.node }), el("td", { text: s.op }),
        el("td", { text: s.envelopeOk ? "kept" : "NOT kept" }), el("td", { text: s.deviation ? `${s.deviation.kind}: ${s.deviation.detail}` : "" })));
    }
    sec.append(tbl);
    sec.append(el("details", {}, el("summary", { text: "The whole ExecutionLog" }), el("pre", { class: "log", text: JSON.stringify(log, null, 2) })));
  }
  box.replaceChildren(...kids);
}

function renderIncidents() {
  const ul = $("incidents");
  if (!S.incidents.length) { ul.replaceChildren(el("li", { class: "empty", text: "None seen." })); return; }
  ul.replaceChildren(...S.incidents.slice(0, 30).map((ev) => {
    const d = ev.data || {};
    const reading = d.reading ? ` at ${d.reading.value} ${d.reading.unit || ""}` : "";
    return el("li", { class: "item" }, el("b", { text: `${d.level || "safety"}: ${d["x-limit"] || "limit"}` }),
      el("div", { text: `${ev.subject} · ${d.action || ""}${reading}` }), d["x-detail"] ? el("div", { class: "sub", text: d["x-detail"] }) : null,
      el("div", { class: "sub", text: short(ev.time) }));
  }));
}
function renderRecalls(list) {
  const ul = $("recalls");
  if (!list.length) { ul.replaceChildren(el("li", { class: "empty", text: "None." })); return; }
  ul.replaceChildren(...list.slice().reverse().map((r) => el("li", { class: "item" },
    el("b", { text: `${r.id} · ${r.action || ""}` }), el("div", { text: r.reason || r.summary || "" }), el("div", { class: "sub", text: short(r.issuedAt) }))));
}
function renderAll() { renderDevices(); renderExecs(); renderDetail(); renderIncidents(); }

// ---- loading
async function loadDevices() {
  const r = await api("/v1/devices");
  if (r.ok && r.body) { S.devices = r.body.devices || []; renderDevices(); }
  return r;
}
async function loadExecs() {
  const r = await api("/v1/executions?limit=50");
  if (r.ok && r.body) for (const x of r.body.executions || []) upsertExec(x);
  return r;
}
async function loadRecalls() {
  const r = await api("/v1/recalls");
  if (r.ok && Array.isArray(r.body)) renderRecalls(r.body);
}
async function refreshSelected() {
  const id = S.selected;
  const x = S.execs.get(id);
  if (!x) return;
  const prefix = x.device ? `/devices/${encodeURIComponent(x.device)}` : "";
  if (!FINAL.has(x.state)) {
    const old = S.traces.get(id);
    const r = await api(`/v1/executions/${encodeURIComponent(id)}/trace?from=${old ? old.next : 0}`);
    if (r.ok && r.body) {
      const t = r.body;
      if (old) t.points = old.points.concat(t.points);
      S.traces.set(id, t);
      upsertExec({ id, state: t.state, seq: t.seq });
    }
    const st = await api(`${prefix}/v1/executions/${encodeURIComponent(id)}`);
    if (st.ok && st.body) upsertExec(st.body);
  }
  const now = S.execs.get(id);
  if (now && FINAL.has(now.state) && !S.logs.has(id)) {
    const lg = await api(`${prefix}/v1/executions/${encodeURIComponent(id)}/log`);
    if (lg.ok && lg.body) S.logs.set(id, lg.body);
  }
  if (S.selected === id) { renderExecs(); renderDetail(); }
}

// ---- the live event stream (fetch, so the token travels in a header)
let streamAbort = null;
function stopStream() { if (streamAbort) streamAbort.abort(); streamAbort = null; }
function setConn(live, text) { const c = $("conn"); c.dataset.live = String(live); c.textContent = text; }
function onEvent(type, data) {
  let ev;
  try { ev = JSON.parse(data); } catch (_) { return; }
  const d = ev.data || {};
  if (type.startsWith("cookwala.execution.")) {
    const device = (ev.source || "").replace(/^\/cookwala\/devices\//, "");
    const x = { id: ev.subject, device };
    for (const k of ["state", "seq", "updatedAt", "humanNeeded", "refusal"]) if (d[k] !== undefined) x[k] = d[k];
    if (type.endsWith(".accepted") || type.endsWith(".refused")) x.createdAt = ev.time;
    upsertExec(x);
    renderExecs();
    if (ev.subject === S.selected) renderDetail();
  } else if (type === "cookwala.safety.limit_fired") {
    if (!S.incidents.some((i) => i.id === ev.id)) S.incidents.unshift(ev);
    renderIncidents();
  } else if (type === "cookwala.recall.published") {
    loadRecalls();
  } else if (type === "cookwala.device.heartbeat") {
    const dev = S.devices.find((x) => x.id === d.device || x.id === ev.subject);
    if (dev) { dev.busy = d.status === "busy"; dev.lastHeartbeat = ev.time; renderDevices(); }
  }
}
async function stream() {
  stopStream();
  const ctl = new AbortController();
  streamAbort = ctl;
  // Replay from the oldest execution listed, so its incidents show too.
  let after = S.lastEventId;
  if (!after) {
    const withEvent = [...S.execs.values()].filter((x) => x.event).sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)));
    if (withEvent.length) after = withEvent[0].event;
  }
  const h = headers({ Accept: "text/event-stream" });
  if (after) h["Last-Event-ID"] = after;
  try {
    const res = await fetch("/cookwala/v1/events", { headers: h, signal: ctl.signal, cache: "no-store" });
    if (res.status === 400) { S.lastEventId = null; throw new Error("position lost"); }
    if (!res.ok || !res.body) throw new Error("stream " + res.status);
    setConn(true, "live");
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let type = "message", data = "", id = null;
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) type = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
          else if (line.startsWith("id:")) id = line.slice(3).trim();
        }
        if (id) S.lastEventId = id;
        if (data) onEvent(type, data);
      }
    }
  } catch (e) {
    if (ctl.signal.aborted) return;
  }
  if (streamAbort !== ctl) return;
  setConn(false, "reconnecting…");
  setTimeout(() => { if (streamAbort === ctl) stream(); }, 2000);
}

let timer = null;
async function tick() {
  try {
    if (S.selected) await refreshSelected();
  } catch (_) { /* the next tick tries again */ }
}
async function slowTick() {
  try { await loadDevices(); await loadExecs(); renderExecs(); } catch (_) { /* again later */ }
}
async function start() {
  $("auth").hidden = true;
  let r;
  try { r = await loadDevices(); } catch (_) { return; }
  if (!r.ok) { $("autherr").textContent = "The hub answered " + r.status; return; }
  $("app").hidden = false;
  $("forget").hidden = !S.token;
  const idx = await fetch("/", { headers: { Accept: "application/json" } }).then((x) => x.json()).catch(() => null);
  if (idx) $("hubname").textContent = `${idx.name} ${idx.version} · Core ${idx.core}`;
  await loadExecs();
  await loadRecalls();
  S.ready = true;
  renderAll();
  stream();
  if (!timer) {
    timer = setInterval(tick, 700);
    setInterval(slowTick, 4000);
  }
}
takeFragmentToken();
start();
