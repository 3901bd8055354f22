// heron-rs tracker page, part 1 of 2: shared helpers, the logical plan graph and the charts.
// views.js (part 2) draws the four views and starts the page.
// Charts: uPlot 1.6.32 (vendored from the npm registry as uPlot.iife.min.js / uPlot.min.css,
// MIT licence in uPlot.LICENSE). Plain JavaScript, no build step, no CDN.
// State for tests is in <script id="summary" type="application/json"> and data-* attributes.
"use strict";

const REFRESH_MS = 2000;
const CHART_SPAN_S = 600;
const SVG = "http://www.w3.org/2000/svg";
const WINDOWS = [["60", "1 min"], ["600", "10 min"], ["10800", "3 h"], ["all", "all time"]];
const DEFAULT_WINDOW = "600";

// The figures of /topologies/summary and /topologies/component, per window.
const FIGURES = [
  { field: "emitted", label: "Emitted", fmt: fmtCount, title: "tuples emitted" },
  { field: "transferred", label: "Transferred", fmt: fmtCount, title: "tuples sent to other instances" },
  { field: "executed", label: "Executed", fmt: fmtCount, title: "tuples executed (bolts)" },
  { field: "acked", label: "Acked", fmt: fmtCount, title: "tuples acked" },
  { field: "failed", label: "Failed", fmt: fmtCount, title: "tuples failed" },
  { field: "complete_latency_ms", label: "Complete latency (ms)", fmt: fmtMs, title: "spout: emit to ack, mean" },
  { field: "execute_latency_ms", label: "Execute latency (ms)", fmt: fmtMs, title: "bolt: time in execute, mean" },
  { field: "process_latency_ms", label: "Process latency (ms)", fmt: fmtMs, title: "bolt: execute to ack, mean" },
  { field: "capacity", label: "Capacity", fmt: fmtCapacity, title: "share of the window spent executing" },
  { field: "backpressure_ms", label: "Back pressure (ms)", fmt: fmtCount, title: "time its stream manager asked for back pressure" },
];

// What tests read (published into #summary after every refresh).
const summary = {
  view: null, topology: null, window: null, components: [], edges: [], updates: 0,
  backpressureCauses: [], backpressure: [], errors: [], facts: {}, table: {}, instances: {},
  log: null, charts: {},
};

// ---- small helpers ----

function publishSummary() {
  document.getElementById("summary").textContent = JSON.stringify(summary);
  document.body.dataset.updates = String(summary.updates);
}

// Errors of the current refresh round; shown in #error until a round without errors.
let roundErrors = [];

function noteError(e) {
  const msg = String((e && e.message) || e);
  roundErrors.push(msg);
  summary.errors.push(msg);
  if (summary.errors.length > 20) summary.errors.shift();
}

function endRound() {
  document.getElementById("error").textContent = roundErrors.join("; ");
  roundErrors = [];
}

// GET (or POST) a JSON route; throws an Error carrying the route, message and HTTP status.
async function api(path, init) {
  const r = await fetch(path, Object.assign({ cache: "no-store" }, init || {}));
  const text = await r.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
  if (!r.ok) {
    const msg = (body && body.message) || text.trim() || r.statusText || "failed";
    const err = new Error(path.split("?")[0] + ": " + msg + " (HTTP " + r.status + ")");
    err.status = r.status;
    err.body = body;
    err.plain = msg;
    throw err;
  }
  return body;
}

function el(tag, attrs, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function td(field, text, cls) {
  return el("td", { "data-field": field, class: cls }, text);
}

function params() {
  return new URLSearchParams(location.search);
}

function selected() {
  const p = params();
  if (!p.get("topology")) return null;
  return { cluster: p.get("cluster") || "local", environ: p.get("environ") || "default",
    topology: p.get("topology") };
}

function q(t) {
  return "cluster=" + encodeURIComponent(t.cluster) + "&environ=" + encodeURIComponent(t.environ) +
    "&topology=" + encodeURIComponent(t.topology);
}

// Links between the views: the same page with another query.
function pageLink(t, extra) {
  let s = location.pathname + "?" + q(t);
  for (const [k, v] of Object.entries(extra || {})) {
    if (v !== undefined && v !== null && v !== "") s += "&" + k + "=" + encodeURIComponent(v);
  }
  return s;
}

function logLink(t, container, path) {
  return pageLink(t, { view: "log", container, path });
}

function num(v) {
  return typeof v === "number" && isFinite(v) ? v : null;
}

const countFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const sigFormat = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 });

function fmtCount(v) { return num(v) === null ? "–" : countFormat.format(Math.round(v)); }
function fmtMs(v) { return num(v) === null ? "–" : sigFormat.format(v); }
function fmtCapacity(v) { return num(v) === null ? "–" : v.toFixed(3); }
function fmtPercent(v) { return num(v) === null ? "–" : sigFormat.format(v) + " %"; }
function fmtMb(v) { return num(v) === null ? "–" : sigFormat.format(v) + " MB"; }

function fmtDuration(secs) {
  if (num(secs) === null) return "–";
  let s = Math.max(0, Math.floor(secs));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  const parts = [];
  if (d) parts.push(d + "d");
  if (d || h) parts.push(h + "h");
  if (d || h || m) parts.push(m + "m");
  parts.push(s + "s");
  return parts.join(" ");
}

function fmtBytes(n) {
  if (num(n) === null) return "–";
  if (n < 1024) return n + " B";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return v.toFixed(1) + " " + units[i];
}

function fmtTime(secs) {
  return num(secs) === null ? "–" : new Date(secs * 1000).toLocaleTimeString();
}

// Short axis numbers: 1.2k, 3.4M.
function fmtAxis(v) {
  if (num(v) === null) return "";
  const a = Math.abs(v);
  if (a >= 1e9) return sigFormat.format(v / 1e9) + "G";
  if (a >= 1e6) return sigFormat.format(v / 1e6) + "M";
  if (a >= 1e4) return sigFormat.format(v / 1e3) + "k";
  return sigFormat.format(v);
}

// One <dl> entry per fact: <div><dt>label</dt><dd data-fact=key>text</dd></div>.
function drawFacts(list) {
  const dl = document.getElementById("facts");
  dl.replaceChildren();
  for (const [key, label, text, cls] of list) {
    const div = el("div");
    const dd = el("dd", { "data-fact": key, class: cls });
    if (text instanceof Node) dd.append(text); else dd.textContent = text;
    div.append(el("dt", {}, label), dd);
    dl.append(div);
  }
}

// The window selector: fills <select id=window>, calls onChange(window) after a change and
// keeps the choice in the URL (?window=..) so that links and reloads keep it.
function setupWindowSelect(onChange) {
  const sel = document.getElementById("window");
  const wanted = params().get("window");
  const current = WINDOWS.some(([w]) => w === wanted) ? wanted : DEFAULT_WINDOW;
  for (const [w, label] of WINDOWS) sel.append(el("option", { value: w }, label));
  sel.value = current;
  summary.window = current;
  sel.addEventListener("change", () => {
    summary.window = sel.value;
    const p = params();
    p.set("window", sel.value);
    history.replaceState(null, "", location.pathname + "?" + p.toString());
    onChange(sel.value);
    publishSummary();
  });
  return current;
}

// The figures of one window as numbers (null when absent) for summary.table / .instances.
function figuresOf(windows, w) {
  const fig = (windows && windows[w]) || {};
  const out = {};
  for (const f of FIGURES) out[f.field] = num(fig[f.field]);
  return out;
}

function figureHeaders(first, last) {
  const tr = el("tr");
  for (const h of first) tr.append(el("th", { class: h.num ? "num" : undefined }, h.label));
  for (const f of FIGURES) tr.append(el("th", { class: "num", title: f.title }, f.label));
  for (const h of last || []) tr.append(el("th", { class: h.num ? "num" : undefined }, h.label));
  return tr;
}

function figureCells(tr, figures) {
  for (const f of FIGURES) {
    const v = figures[f.field];
    const high = f.field === "capacity" && v !== null && v >= 0.8;
    tr.append(td(f.field, f.fmt(v), high ? "num capacity-high" : "num"));
  }
}

function bpLabel() {
  return el("span", { class: "bp-label" }, "causes back pressure");
}

// Replaces the content of `box` only when `data` changed (keeps open <details>, hover).
function redrawIfChanged(box, data, draw) {
  const key = JSON.stringify(data);
  if (box.dataset.drawn === key) return;
  box.dataset.drawn = key;
  draw();
}

// ---- logical plan graph ----

function layers(plan) {
  const depth = {};
  for (const s of Object.keys(plan.spouts || {})) depth[s] = 0;
  const bolts = Object.keys(plan.bolts || {});
  for (let i = 0; i < bolts.length + 1; i++) {
    for (const b of bolts) {
      let d = 1;
      for (const inp of plan.bolts[b].inputs || []) {
        if (depth[inp.component_name] !== undefined) d = Math.max(d, Math.min(depth[inp.component_name] + 1, bolts.length));
      }
      depth[b] = d;
    }
  }
  return depth;
}

// Draws the plan into svg#graph: g.node[data-component] per component, path.edge[data-from]
// [data-to][data-grouping] per input. A click on a node opens the component view.
function drawGraph(plan, t) {
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  const defs = el("svg:defs");
  const marker = el("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
    markerWidth: "8", markerHeight: "8", orient: "auto-start-reverse" });
  marker.append(el("svg:path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#7a8294" }));
  defs.append(marker);
  svg.append(defs);
  const depth = layers(plan);
  const columns = {};
  for (const [c, d] of Object.entries(depth)) (columns[d] = columns[d] || []).push(c);
  const W = 140, H = 40, GX = 110, GY = 34;
  const pos = {};
  let maxRows = 1;
  for (const [d, comps] of Object.entries(columns)) {
    comps.sort();
    maxRows = Math.max(maxRows, comps.length);
    comps.forEach((c, i) => { pos[c] = { x: 20 + Number(d) * (W + GX), y: 20 + i * (H + GY) }; });
  }
  svg.setAttribute("height", String(40 + maxRows * (H + GY)));
  const edges = [];
  for (const [b, bolt] of Object.entries(plan.bolts || {})) {
    for (const inp of bolt.inputs || []) {
      const from = pos[inp.component_name], to = pos[b];
      if (!from || !to) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
      const mx = (x1 + x2) / 2;
      svg.append(el("svg:path", { class: "edge", d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`,
        "data-from": inp.component_name, "data-to": b, "data-grouping": inp.grouping, "data-stream": inp.stream_name }));
      const label = inp.grouping + (inp.stream_name !== "default" ? " (" + inp.stream_name + ")" : "");
      svg.append(el("svg:text", { class: "edge-label", x: String(mx), y: String((y1 + y2) / 2 - 6) }, label));
      edges.push({ from: inp.component_name, to: b, grouping: inp.grouping, stream: inp.stream_name });
    }
  }
  const components = [];
  for (const [c, p] of Object.entries(pos)) {
    const kind = (plan.spouts || {})[c] ? "spout" : "bolt";
    const g = el("svg:g", { class: "node " + kind, "data-component": c, "data-kind": kind,
      transform: `translate(${p.x},${p.y})` });
    g.append(el("svg:title", {}, `${kind} ${c}: open its instances`));
    g.append(el("svg:rect", { width: String(W), height: String(H), rx: "6" }));
    g.append(el("svg:text", { x: String(W / 2), y: String(H / 2) }, c));
    g.addEventListener("click", () => { location.href = pageLink(t, { component: c, window: summary.window }); });
    svg.append(g);
    components.push(c);
  }
  components.sort();
  svg.dataset.components = components.join(",");
  svg.dataset.edges = edges.map(e => e.from + "->" + e.to + ":" + e.grouping).join(",");
  summary.components = components;
  summary.edges = edges;
}

// Marks back pressure everywhere on the page: `causes` (components the tracker blames) get
// class bp-cause and the label "causes back pressure"; `throttled` (spouts held back) get
// class backpressure; `slowInstances` mark the instance rows of the containers.
function markBackpressure(causes, throttled, slowInstances) {
  for (const g of document.querySelectorAll("#graph .node")) {
    const c = g.dataset.component;
    g.classList.toggle("backpressure", throttled.has(c) && !causes.has(c));
    g.classList.toggle("bp-cause", causes.has(c));
    for (const old of g.querySelectorAll("text.bp-label")) old.remove();
    const label = causes.has(c) ? "causes back pressure" : throttled.has(c) ? "throttled" : null;
    if (label) {
      const r = g.querySelector("rect");
      g.append(el("svg:text", { class: "bp-label", x: String(Number(r.getAttribute("width")) / 2),
        y: String(Number(r.getAttribute("height")) + 12) }, label));
    }
  }
  for (const d of document.querySelectorAll(".chart[data-component]")) {
    const c = d.dataset.component;
    d.classList.toggle("backpressure", throttled.has(c) && !causes.has(c));
    d.classList.toggle("bp-cause", causes.has(c));
    const h = d.querySelector("h3 .bp-slot");
    h.replaceChildren();
    if (causes.has(c)) h.append(bpLabel());
    else if (throttled.has(c)) h.append(el("span", { class: "throttled-label" }, "throttled by back pressure"));
  }
  for (const li of document.querySelectorAll("#containers li[data-instance]")) {
    const slow = slowInstances.has(li.dataset.instance);
    li.classList.toggle("bp-cause", slow);
    for (const old of li.querySelectorAll(".bp-label")) old.remove();
    if (slow) li.append(bpLabel());
  }
  summary.backpressure = Array.from(throttled).sort();
  summary.backpressureCauses = Array.from(causes).sort();
}

// ---- charts (uPlot) ----

const RATE_SERIES = [
  { kind: "emit", label: "emit", color: "#3b6fd8" },
  { kind: "execute", label: "execute", color: "#1f9d55" },
  { kind: "ack", label: "ack", color: "#8e44ad" },
  { kind: "fail", label: "fail", color: "#d43c3c" },
];
const LATENCY_SERIES = [
  { kind: "complete-latency", label: "complete", color: "#b26b00" },
  { kind: "execute-latency", label: "execute", color: "#0097a7" },
  { kind: "process-latency", label: "process", color: "#795548" },
];
const COUNT_KINDS = RATE_SERIES.map(s => s.kind);

// The timeline metric names of a component (per stream), tagged with their kind.
function metricNames(plan, component) {
  const spout = (plan.spouts || {})[component], bolt = (plan.bolts || {})[component];
  const outs = ((spout || bolt || {}).outputs || []).map(o => o.stream_name);
  const ins = bolt ? (bolt.inputs || []).map(i => i.stream_name) : [];
  const names = [];
  const add = (kind, metric, streams) => { for (const s of new Set(streams)) names.push({ kind, name: `${metric}/${s}` }); };
  add("emit", "__emit-count", outs);
  if (bolt) { add("execute", "__execute-count", ins); add("ack", "__ack-count", ins); add("fail", "__fail-count", ins); }
  else { add("ack", "__ack-count", outs); add("fail", "__fail-count", outs); }
  add("complete-latency", "__complete-latency", spout ? outs : []);
  add("execute-latency", "__execute-latency", ins);
  add("process-latency", "__process-latency", ins);
  return names;
}

function chartDefs(plan, component, kind) {
  const isSpout = !!(plan.spouts || {})[component];
  if (kind === "rates") return RATE_SERIES.filter(s => !(isSpout && s.kind === "execute"));
  return LATENCY_SERIES.filter(s => isSpout ? s.kind === "complete-latency" : s.kind !== "complete-latency");
}

// A timeline {metric: {instance: {unix_s: v}}} as one column per kind over continuous seconds:
// counts summed over instances and streams (0 where a reporting series has no bucket),
// latencies averaged and converted from ns to ms (null where absent).
function toColumns(timeline, names, start, end) {
  const acc = {}, n = {};
  for (const { kind, name } of names) {
    for (const pts of Object.values((timeline || {})[name] || {})) {
      for (const [ts, v] of Object.entries(pts || {})) {
        const t = Number(ts);
        if (num(v) === null || t < start || t >= end) continue;
        const a = acc[kind] = acc[kind] || {}, c = n[kind] = n[kind] || {};
        a[t] = (a[t] || 0) + v;
        c[t] = (c[t] || 0) + 1;
      }
    }
  }
  let lo = Infinity, hi = -Infinity;
  for (const a of Object.values(acc)) for (const t of Object.keys(a)) { lo = Math.min(lo, +t); hi = Math.max(hi, +t); }
  const xs = [];
  if (lo <= hi) for (let t = lo; t <= hi; t++) xs.push(t);
  const cols = {};
  for (const kind of Object.keys(acc)) {
    const isCount = COUNT_KINDS.includes(kind);
    cols[kind] = xs.map(t => acc[kind][t] === undefined ? (isCount ? 0 : null)
      : isCount ? acc[kind][t] : acc[kind][t] / n[kind][t] / 1e6);
  }
  return { xs, cols };
}

function lastValue(arr) {
  for (let i = (arr || []).length - 1; i >= 0; i--) if (arr[i] !== null && arr[i] !== undefined) return arr[i];
  return null;
}

const charts = new Map(); // "component|kind" -> { div, plot, defs }

function chartWidth(div) {
  return Math.max(260, div.clientWidth - 18);
}

// The chart box div.chart[data-component][data-kind] with its uPlot, made on first use.
function ensureChart(box, component, kind, defs) {
  const key = component + "|" + kind;
  const have = charts.get(key);
  if (have && have.div.isConnected) return have;
  const div = el("div", { class: "chart", "data-component": component, "data-kind": kind });
  const h3 = el("h3", {}, component + " ");
  h3.append(el("span", { class: "unit" }, kind === "rates" ? "· tuples/s" : "· latency, ms"), el("span", { class: "bp-slot" }));
  div.append(h3);
  box.append(div);
  const unit = kind === "rates" ? " /s" : " ms";
  const fmt = kind === "rates" ? (v => sigFormat.format(v)) : fmtMs;
  const opts = {
    width: chartWidth(div), height: 170,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, num(max) !== null && max > 0 ? max * 1.1 : 1] } },
    axes: [
      { stroke: "#6b7385", grid: { stroke: "#eceef2" }, ticks: { stroke: "#dde1e8" } },
      { stroke: "#6b7385", grid: { stroke: "#eceef2" }, ticks: { stroke: "#dde1e8" }, size: 56,
        label: kind === "rates" ? "tuples/s" : "ms", labelSize: 18, labelFont: "11px system-ui",
        values: (u, splits) => splits.map(fmtAxis) },
    ],
    series: [{ label: "time", value: (u, v, sidx, idx) => fmtTime(idx === null || idx === undefined ? lastValue(u.data[0]) : v) }].concat(defs.map(d => ({
      label: d.label, stroke: d.color, width: 1.5, spanGaps: kind !== "rates", points: { show: false },
      // hovering: the value under the cursor; otherwise the latest value
      value: (u, v, sidx, idx) => {
        const x = idx === null || idx === undefined ? lastValue(u.data[sidx]) : v;
        return num(x) === null ? "–" : fmt(x) + unit;
      },
    }))),
  };
  const plot = new uPlot(opts, [[]].concat(defs.map(() => [])), div);
  const entry = { div, plot, defs };
  charts.set(key, entry);
  return entry;
}

function resizeCharts() {
  for (const c of charts.values()) if (c.div.isConnected) c.plot.setSize({ width: chartWidth(c.div), height: 170 });
}
window.addEventListener("resize", () => { clearTimeout(resizeCharts.timer); resizeCharts.timer = setTimeout(resizeCharts, 150); });

// Fetches the last 10 minutes of each component's metrics and updates its two charts in
// `box`; records per component {points, totals, latest} in summary.charts.
async function refreshCharts(t, plan, components, box) {
  const end = Math.floor(Date.now() / 1000);
  const start = end - CHART_SPAN_S;
  await Promise.all(components.map(async c => {
    const names = metricNames(plan, c);
    const rates = ensureChart(box, c, "rates", chartDefs(plan, c, "rates"));
    const lats = ensureChart(box, c, "latencies", chartDefs(plan, c, "latencies"));
    if (!names.length) return;
    const metrics = names.map(n => "metricname=" + encodeURIComponent(n.name)).join("&");
    let tl;
    try {
      tl = await api(`/topologies/metrics/timeline?${q(t)}&component=${encodeURIComponent(c)}&${metrics}&starttime=${start}&endtime=${end}`);
    } catch (e) { noteError(e); return; }
    // the bucket of the current second is still filling: leave it out
    const { xs, cols } = toColumns(tl && tl.timeline, names, start, end);
    for (const chart of [rates, lats]) {
      chart.plot.setData([xs].concat(chart.defs.map(d => cols[d.kind] || xs.map(() => null))));
      chart.div.dataset.points = String(xs.length);
    }
    const totals = {}, latest = {};
    for (const k of COUNT_KINDS) {
      const col = cols[k] || [];
      totals[k] = col.reduce((s, v) => s + (v || 0), 0);
      latest[k] = lastValue(col) || 0;
    }
    for (const d of LATENCY_SERIES) latest[d.kind] = lastValue(cols[d.kind]);
    rates.div.dataset.emitTotal = String(totals.emit);
    rates.div.dataset.executeTotal = String(totals.execute);
    summary.charts[c] = { points: xs.length, totals, latest };
  }));
}

// Exceptions as table rows tr.error-row (time, component, task, host, message), newest first.
// `failure`: the error of the last fetch, shown instead of an empty list.
function drawErrors(list, pplan, component, failure) {
  const box = document.getElementById("errors");
  if (failure && !Array.isArray(list)) {
    box.replaceChildren(el("span", { class: "muted" }, "cannot read the errors: " + (failure.plain || failure.message)));
    box.dataset.drawn = "";
    return;
  }
  const items = (Array.isArray(list) ? list : []).slice();
  // lasttime: unix seconds (as our instances write it), unix ms, or a date string
  const when = e => {
    const t = String(e.lasttime || "").trim();
    if (/^\d+$/.test(t)) { const n = Number(t); return n < 1e12 ? n * 1000 : n; }
    const d = Date.parse(t);
    return isNaN(d) ? t : d;
  };
  const shown = e => { const w = when(e); return typeof w === "number" ? new Date(w).toLocaleString() : w; };
  items.sort((a, b) => { const x = when(a), y = when(b); return x < y ? 1 : x > y ? -1 : 0; });
  const rows = items.slice(0, 20);
  summary.exceptions = rows.length;
  redrawIfChanged(box, rows, () => {
    box.replaceChildren();
    if (!rows.length) { box.append(el("span", { class: "muted" }, "no errors reported")); return; }
    const table = el("table", { class: "wide" });
    const head = el("tr");
    for (const h of ["Time", "Component", "Task", "Host", "Count", "Message"]) head.append(el("th", { class: h === "Count" ? "num" : undefined }, h));
    table.append(el("thead"), el("tbody"));
    table.tHead.append(head);
    for (const e of rows) {
      const id = e.instance_id || "";
      const inst = pplan && pplan.instances && pplan.instances[id];
      const comp = inst ? inst.name : component || (/^container_\d+_(.+)_\d+$/.exec(id) || [])[1] || "";
      const text = String(e.stacktrace || "");
      const first = text.split("\n")[0];
      const msg = td("message", undefined, "message");
      if (text.includes("\n")) {
        const det = el("details");
        det.append(el("summary", {}, first), el("pre", {}, text));
        msg.append(det);
      } else msg.textContent = first;
      const tr = el("tr", { class: "error-row", "data-instance": id });
      tr.append(td("time", shown(e)), td("component", comp), td("task", id), td("host", e.hostname || ""),
        td("count", String(e.count === undefined ? "" : e.count), "num"), msg);
      table.tBodies[0].append(tr);
    }
    box.append(table);
  });
}

document.addEventListener("DOMContentLoaded", () => { main(); });
