// heron-rs tracker page: reads the tracker's REST API and draws the topologies, one
// topology's logical plan, its containers and live charts. No libraries, no build step.
// State for tests is in <script id="summary" type="application/json"> and data-* attributes.
"use strict";

const REFRESH_MS = 2000;
const WINDOW_S = 120;
const COLORS = { emit: "#3b6fd8", execute: "#1f9d55", ack: "#8e44ad", fail: "#d43c3c",
  "complete-latency": "#b26b00", "execute-latency": "#0097a7", "process-latency": "#795548" };
const COUNTS = ["emit", "execute", "ack", "fail"];
const LATENCIES = ["complete-latency", "execute-latency", "process-latency"];
const SVG = "http://www.w3.org/2000/svg";

const summary = { topology: null, components: [], edges: [], charts: {}, updates: 0,
  backpressure: [], backpressureCauses: [], errors: [] };

function publishSummary() {
  document.getElementById("summary").textContent = JSON.stringify(summary);
  document.body.dataset.updates = String(summary.updates);
}

function showError(msg) {
  document.getElementById("error").textContent = msg || "";
  if (msg) { summary.errors.push(msg); if (summary.errors.length > 20) summary.errors.shift(); }
}

async function api(path) {
  const r = await fetch(path, { cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(path.split("?")[0] + ": " + (body.message || r.status));
  return body;
}

function el(tag, attrs, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function selected() {
  const p = new URLSearchParams(location.search);
  if (!p.get("topology")) return null;
  return { cluster: p.get("cluster") || "local", environ: p.get("environ") || "default",
    topology: p.get("topology") };
}

function q(t) {
  return "cluster=" + encodeURIComponent(t.cluster) + "&environ=" + encodeURIComponent(t.environ) +
    "&topology=" + encodeURIComponent(t.topology);
}

async function loadTopologies() {
  const states = await api("/topologies/states");
  const body = document.querySelector("#topologies tbody");
  body.replaceChildren();
  const all = [];
  for (const [cluster, envs] of Object.entries(states)) {
    for (const [environ, tops] of Object.entries(envs)) {
      for (const [name, st] of Object.entries(tops)) {
        all.push({ cluster, environ, topology: name });
        const tr = el("tr", { "data-topology": name, "data-status": st.status });
        tr.append(el("td", {}, cluster), el("td", {}, environ));
        const td = el("td");
        td.append(el("a", { href: "/?" + q({ cluster, environ, topology: name }) }, name));
        tr.append(td, el("td", { class: "status-" + st.status }, st.status),
          el("td", {}, st.submission_user || st.role || ""));
        body.append(tr);
      }
    }
  }
  if (all.length === 0) {
    const tr = el("tr");
    tr.append(el("td", { colspan: "5", class: "muted" }, "no topology is running"));
    body.append(tr);
  }
  return all;
}

// ---- logical plan graph ----

function layers(plan) {
  const depth = {};
  for (const s of Object.keys(plan.spouts)) depth[s] = 0;
  const bolts = Object.keys(plan.bolts);
  for (let i = 0; i < bolts.length + 1; i++) {
    for (const b of bolts) {
      let d = 1;
      for (const inp of plan.bolts[b].inputs) {
        if (depth[inp.component_name] !== undefined) d = Math.max(d, Math.min(depth[inp.component_name] + 1, bolts.length));
      }
      depth[b] = d;
    }
  }
  return depth;
}

function drawGraph(plan) {
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
  const W = 140, H = 40, GX = 110, GY = 30;
  const pos = {};
  let maxRows = 1;
  for (const [d, comps] of Object.entries(columns)) {
    comps.sort();
    maxRows = Math.max(maxRows, comps.length);
    comps.forEach((c, i) => { pos[c] = { x: 20 + Number(d) * (W + GX), y: 20 + i * (H + GY) }; });
  }
  const height = 40 + maxRows * (H + GY);
  svg.setAttribute("height", String(height));
  const edges = [];
  for (const [b, bolt] of Object.entries(plan.bolts)) {
    for (const inp of bolt.inputs) {
      const from = pos[inp.component_name], to = pos[b];
      if (!from || !to) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
      const mx = (x1 + x2) / 2;
      const path = el("svg:path", { class: "edge", d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`,
        "data-from": inp.component_name, "data-to": b, "data-grouping": inp.grouping, "data-stream": inp.stream_name });
      svg.append(path);
      const label = inp.grouping + (inp.stream_name !== "default" ? " (" + inp.stream_name + ")" : "");
      svg.append(el("svg:text", { class: "edge-label", x: String(mx), y: String((y1 + y2) / 2 - 6) }, label));
      edges.push({ from: inp.component_name, to: b, grouping: inp.grouping, stream: inp.stream_name });
    }
  }
  const components = [];
  for (const [c, p] of Object.entries(pos)) {
    const kind = plan.spouts[c] ? "spout" : "bolt";
    const g = el("svg:g", { class: "node " + kind, "data-component": c, "data-kind": kind,
      transform: `translate(${p.x},${p.y})` });
    g.append(el("svg:rect", { width: String(W), height: String(H), rx: "6" }));
    g.append(el("svg:text", { x: String(W / 2), y: String(H / 2) }, c));
    svg.append(g);
    components.push(c);
  }
  components.sort();
  svg.dataset.components = components.join(",");
  svg.dataset.edges = edges.map(e => e.from + "->" + e.to + ":" + e.grouping).join(",");
  summary.components = components;
  summary.edges = edges;
}

// ---- containers ----

function drawContainers(pplan) {
  const box = document.getElementById("containers");
  box.replaceChildren();
  for (const id of Object.keys(pplan.stmgrs).sort()) {
    const s = pplan.stmgrs[id];
    const div = el("div", { class: "container", "data-stmgr": id });
    div.append(el("h3", {}, `${id} (${s.host}:${s.port})`));
    const ul = el("ul");
    for (const iid of s.instance_ids.slice().sort()) {
      const inst = pplan.instances[iid];
      ul.append(el("li", { "data-instance": iid }, `${iid} (task ${inst.task_id})`));
    }
    div.append(ul);
    box.append(div);
  }
}

// ---- charts ----

function metricNames(plan, component) {
  const spout = plan.spouts[component], bolt = plan.bolts[component];
  const outs = (spout || bolt).outputs.map(o => o.stream_name);
  const ins = bolt ? bolt.inputs.map(i => i.stream_name) : [];
  const names = [];
  const add = (m, streams) => { for (const s of new Set(streams)) names.push({ kind: m, name: `__${m}-count/${s}` }); };
  add("emit", outs);
  if (bolt) { add("execute", ins); add("ack", ins); add("fail", ins); }
  else { add("ack", outs); add("fail", outs); }
  for (const m of LATENCIES) {
    const streams = m === "complete-latency" ? outs : ins;
    for (const s of new Set(streams)) names.push({ kind: m, name: `__${m}/${s}` });
  }
  return names;
}

function ensureChart(component) {
  let div = document.querySelector(`.chart[data-component="${CSS.escape(component)}"]`);
  if (div) return div;
  div = el("div", { class: "chart", "data-component": component });
  div.append(el("h3", {}, component));
  div.append(el("svg:svg", { width: "100%", height: "120", viewBox: "0 0 320 120", preserveAspectRatio: "none" }));
  div.append(el("div", { class: "legend" }));
  div.append(el("div", { class: "muted latency" }));
  document.getElementById("charts").append(div);
  return div;
}

// Sums a timeline {metric: {instance: {ts: v}}} per kind, then per timestamp.
function series(timeline, names) {
  const out = {};
  for (const { kind, name } of names) {
    const per = timeline[name] || {};
    const acc = out[kind] = out[kind] || {};
    const isLatency = LATENCIES.includes(kind);
    const n = {};
    for (const pts of Object.values(per)) {
      for (const [ts, v] of Object.entries(pts)) {
        acc[ts] = (acc[ts] || 0) + v;
        n[ts] = (n[ts] || 0) + 1;
      }
    }
    if (isLatency) for (const ts of Object.keys(acc)) acc[ts] = acc[ts] / (n[ts] || 1);
  }
  return out;
}

function drawChart(div, data, start, end) {
  const svg = div.querySelector("svg");
  svg.replaceChildren();
  let max = 1;
  for (const k of COUNTS) for (const v of Object.values(data[k] || {})) max = Math.max(max, v);
  const x = ts => ((ts - start) / (end - start)) * 320;
  const y = v => 115 - (v / max) * 105;
  svg.append(el("svg:text", { x: "2", y: "10", "font-size": "9", fill: "#7a8294" }, max.toFixed(0) + "/s"));
  const legend = div.querySelector(".legend");
  legend.replaceChildren();
  const latest = {};
  for (const k of COUNTS) {
    const pts = Object.entries(data[k] || {}).map(([t, v]) => [Number(t), v]).sort((a, b) => a[0] - b[0]);
    // the newest bucket may still be filling: leave it out of "latest"
    const settled = pts.length > 1 ? pts[pts.length - 2] : pts[pts.length - 1];
    latest[k] = settled ? settled[1] : 0;
    const total = pts.reduce((s, p) => s + p[1], 0);
    if (pts.length) {
      svg.append(el("svg:polyline", { points: pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        fill: "none", stroke: COLORS[k], "stroke-width": "1.5", "data-metric": k }));
    }
    legend.append(el("span", { style: `--c:${COLORS[k]}`, "data-metric": k, "data-total": String(total) },
      `${k} ${latest[k].toFixed(0)}/s`));
  }
  const lat = [];
  for (const k of LATENCIES) {
    const vals = Object.values(data[k] || {});
    // latencies are published in ns (Heron's unit)
    if (vals.length) lat.push(`${k} ${(vals[vals.length - 1] / 1e6).toFixed(3)} ms`);
  }
  div.querySelector(".latency").textContent = lat.length ? lat.join(", ") : "latencies: no data yet";
  return latest;
}

async function refreshCharts(t, plan) {
  const end = Math.floor(Date.now() / 1000);
  const start = end - WINDOW_S;
  const comps = Object.keys(plan.spouts).concat(Object.keys(plan.bolts)).sort();
  for (const c of comps) {
    const names = metricNames(plan, c);
    const params = names.map(n => "metricname=" + encodeURIComponent(n.name)).join("&");
    const tl = await api(`/topologies/metrics/timeline?${q(t)}&component=${encodeURIComponent(c)}&${params}&starttime=${start}&endtime=${end}`);
    const data = series(tl.timeline, names);
    const div = ensureChart(c);
    const latest = drawChart(div, data, start, end);
    const totals = {};
    for (const k of COUNTS) totals[k] = Object.values(data[k] || {}).reduce((s, v) => s + v, 0);
    const points = Object.keys(data.emit || {}).length + Object.keys(data.execute || {}).length;
    div.dataset.points = String(points);
    div.dataset.emitTotal = String(totals.emit);
    div.dataset.executeTotal = String(totals.execute);
    summary.charts[c] = { points, totals, latest };
  }
}

// Back pressure lately (/topologies/backpressure): the components that cause it (a stream
// manager's connection to one of their instances is over the high watermark) are marked
// "bp-cause" and labelled "causes back pressure"; spouts held back by it are marked
// "backpressure" and labelled "throttled".
async function refreshBackpressure(t) {
  const bp = await api(`/topologies/backpressure?${q(t)}&interval=10`);
  const causes = bp.causes || {}, throttled = bp.throttled || {};
  const cause = new Set(Object.keys(causes));
  const hot = new Set(Object.keys(throttled));
  const slowInstances = new Set(Object.values(causes).flatMap(o => Object.keys(o)));
  for (const g of document.querySelectorAll("#graph .node")) {
    const c = g.dataset.component;
    g.classList.toggle("backpressure", hot.has(c));
    g.classList.toggle("bp-cause", cause.has(c));
    for (const old of g.querySelectorAll("text.bp-label")) old.remove();
    const label = cause.has(c) ? "causes back pressure" : hot.has(c) ? "throttled" : null;
    if (label) {
      const r = g.querySelector("rect");
      g.append(el("svg:text", { class: "bp-label", x: String(Number(r.getAttribute("width")) / 2),
        y: String(Number(r.getAttribute("height")) + 12) }, label));
    }
  }
  for (const d of document.querySelectorAll(".chart")) {
    const c = d.dataset.component;
    d.classList.toggle("backpressure", hot.has(c));
    d.classList.toggle("bp-cause", cause.has(c));
    const h = d.querySelector("h3");
    h.replaceChildren(document.createTextNode(c));
    if (cause.has(c)) h.append(el("span", { class: "bp bp-cause-label" }, " causes back pressure"));
    else if (hot.has(c)) h.append(el("span", { class: "bp" }, " back pressure (throttled)"));
  }
  for (const li of document.querySelectorAll("#containers li[data-instance]")) {
    const slow = slowInstances.has(li.dataset.instance);
    li.classList.toggle("bp-cause", slow);
    for (const old of li.querySelectorAll(".bp")) old.remove();
    if (slow) li.append(el("span", { class: "bp" }, " causes back pressure"));
  }
  summary.backpressure = Array.from(hot).sort();
  summary.backpressureCauses = Array.from(cause).sort();
}

async function showTopology(t) {
  document.getElementById("topology").hidden = false;
  document.getElementById("where").textContent = `${t.cluster} / ${t.environ} / ${t.topology}`;
  summary.topology = t.topology;
  const plan = await api("/topologies/logicalplan?" + q(t));
  drawGraph(plan);
  let pplan = null;
  const tick = async () => {
    try {
      if (!pplan) {
        pplan = await api("/topologies/physicalplan?" + q(t)).catch(() => null);
        if (pplan) drawContainers(pplan);
      }
      await refreshCharts(t, plan);
      if (pplan) await refreshBackpressure(t);
      summary.updates += 1;
      showError("");
    } catch (e) {
      showError(String(e.message || e));
    }
    publishSummary();
    setTimeout(tick, REFRESH_MS);
  };
  await tick();
}

async function main() {
  try {
    const all = await loadTopologies();
    let t = selected();
    if (!t && all.length === 1) t = all[0];
    if (t) await showTopology(t);
  } catch (e) {
    showError(String(e.message || e));
  }
  publishSummary();
  setInterval(() => { loadTopologies().catch(e => showError(String(e.message || e))); }, 10000);
}

main();
