// heron-rs tracker page, part 2 of 2: the four views (topology list, topology, component,
// log), chosen by the URL query, and the controls. Uses the helpers of app.js.
"use strict";

const LOG_PAGE = 65536;
const TOKEN_KEY = "heron-tracker-token";

// ---- page frame ----

function mount(templateId) {
  const main = document.getElementById("main");
  main.replaceChildren(document.getElementById(templateId).content.cloneNode(true));
}

// The breadcrumbs in the header: Topologies / cluster / environ / topology / more...
function setWhere(t, ...more) {
  const where = document.getElementById("where");
  where.replaceChildren(el("a", { href: location.pathname }, "Topologies"));
  if (!t) return;
  where.append(" / " + t.cluster + " / " + t.environ + " / ", el("a", { href: pageLink(t, { window: summary.window }) }, t.topology));
  for (const m of more) where.append(" / ", m);
  document.title = [t.topology].concat(more.map(m => m.textContent || m)).join(" · ") + " · heron-rs tracker";
}

// Runs fn now and every `ms` after the previous run ended; counts the rounds in
// summary.updates and publishes the summary after each.
async function every(ms, fn) {
  try { await fn(); } catch (e) { noteError(e); }
  summary.updates += 1;
  endRound();
  publishSummary();
  setTimeout(() => every(ms, fn), ms);
}

// Awaits all promises; the failed ones become page errors.
async function settle(promises) {
  for (const r of await Promise.allSettled(promises)) if (r.status === "rejected") noteError(r.reason);
}

function emptyRow(tbody, columns, text) {
  const tr = el("tr");
  tr.append(el("td", { colspan: String(columns), class: "empty" }, text));
  tbody.append(tr);
}

function byName(a, b) {
  return a.localeCompare(b, "en", { numeric: true });
}

// ---- 1. topology list ----

async function listView() {
  summary.view = "list";
  mount("tpl-list");
  setWhere(null);
  await every(10000, refreshList);
}

async function refreshList() {
  const states = await api("/topologies/states");
  const body = document.querySelector("#topologies tbody");
  body.replaceChildren();
  const names = [];
  for (const [cluster, envs] of Object.entries(states || {})) {
    for (const [environ, tops] of Object.entries(envs || {})) {
      for (const [name, st] of Object.entries(tops || {})) {
        const status = (st && st.status) || "";
        names.push(name);
        const tr = el("tr", { "data-topology": name, "data-status": status });
        const link = el("td");
        link.append(el("a", { href: pageLink({ cluster, environ, topology: name }) }, name));
        tr.append(el("td", {}, cluster), el("td", {}, environ), link,
          el("td", { class: "status-" + status }, status),
          el("td", {}, (st && (st.submission_user || st.role)) || ""));
        body.append(tr);
      }
    }
  }
  if (!names.length) emptyRow(body, 5, "no topology is running");
  summary.topologies = names.sort();
}

// ---- 2. topology view ----

async function topologyView(t) {
  summary.view = "topology";
  summary.topology = t.topology;
  mount("tpl-topology");
  const s = { t, tick: 0, sum: null, plan: null, planKey: "", pplan: null, bp: null, exceptions: null,
    causes: new Set(), throttled: new Set(), slow: new Set() };
  setupWindowSelect(() => drawComponentsTable(s));
  setWhere(t);
  setupControls(t, s);
  loadConfig(t);
  await every(REFRESH_MS, () => refreshTopology(s));
}

async function refreshTopology(s) {
  const t = s.t;
  const slow = s.tick++ % 5 === 0; // plans and checkpoints every 10 s
  const jobs = [
    api("/topologies/summary?" + q(t)).then(x => { s.sum = x; }),
    api(`/topologies/backpressure?${q(t)}&interval=10`).then(x => { s.bp = x; }),
    api("/topologies/exceptions?" + q(t)).then(x => { s.exceptions = x; s.excFailure = null; },
      e => { s.excFailure = e; throw e; }),
  ];
  if (slow || !s.plan) {
    jobs.push(api("/topologies/logicalplan?" + q(t)).then(plan => {
      const key = JSON.stringify([plan.spouts, plan.bolts]);
      s.plan = plan;
      if (key !== s.planKey) { s.planKey = key; drawGraph(plan, t); }
    }));
  }
  if (slow || !s.pplan) {
    jobs.push(api("/topologies/physicalplan?" + q(t)).then(p => { s.pplan = p; drawContainers(t, p); drawPplanTable(t, p); }));
  }
  if (slow) jobs.push(loadCheckpoints(t));
  await settle(jobs);
  computeBackpressure(s);
  drawTopologyFacts(s);
  drawComponentsTable(s);
  fillComponentSelect(s);
  drawErrors(s.exceptions, s.pplan, null, s.excFailure);
  if (s.plan) {
    const comps = componentsOf(s.plan);
    await refreshCharts(t, s.plan, comps, document.getElementById("charts"));
  }
  markBackpressure(s.causes, s.throttled, s.slow);
}

// Spouts first, then bolts, each by name.
function componentsOf(plan) {
  return Object.keys(plan.spouts || {}).sort(byName).concat(Object.keys(plan.bolts || {}).sort(byName));
}

// Causes: the components the summary attributes back pressure to (the tracker weighs each
// one's time over the last minute, so that short bursts elsewhere in a saturated topology do
// not count); their instances listed by /topologies/backpressure (else all of them) are the
// slow ones. Throttled: the spouts /topologies/backpressure says were held back.
function computeBackpressure(s) {
  const causes = new Set(), throttled = new Set(), slow = new Set();
  for (const [c, v] of Object.entries((s.sum && s.sum.components) || {})) if (v && v.backpressure_cause) causes.add(c);
  if (s.bp) {
    for (const [c, insts] of Object.entries(s.bp.causes || {})) {
      if (causes.has(c)) for (const i of Object.keys(insts || {})) slow.add(i);
    }
    for (const c of Object.keys(s.bp.throttled || {})) throttled.add(c);
  }
  const instances = (s.pplan && s.pplan.instances) || {};
  for (const c of causes) {
    const ids = Object.values(instances).filter(i => i.name === c).map(i => i.id);
    if (!ids.some(i => slow.has(i))) for (const i of ids) slow.add(i);
  }
  s.causes = causes; s.throttled = throttled; s.slow = slow;
}

function drawTopologyFacts(s) {
  const x = s.sum;
  if (!x) return;
  summary.facts = { name: x.name, id: x.id, status: x.status, uptime_secs: num(x.uptime_secs), mode: x.mode,
    containers: num(x.containers), instances: num(x.instances), submission_user: x.submission_user };
  drawFacts([
    ["status", "Status", x.status || "–", "status-" + (x.status || "")],
    ["uptime", "Uptime", fmtDuration(x.uptime_secs)],
    ["mode", "Reliability", x.mode || "–"],
    ["containers", "Containers", fmtCount(x.containers)],
    ["instances", "Instances", fmtCount(x.instances)],
    ["user", "Submitted by", x.submission_user || "–"],
    ["id", "Id", x.id || "–"],
  ]);
}

// #components-table: one tr[data-component] per component with the selected window's figures.
function drawComponentsTable(s) {
  const table = document.getElementById("components-table");
  if (!table.tHead.rows.length) {
    table.tHead.append(figureHeaders([{ label: "Component" }, { label: "Type" }, { label: "Parallelism", num: true }]));
  }
  const body = table.tBodies[0];
  const comps = (s.sum && s.sum.components) || null;
  if (!comps) return;
  const w = summary.window;
  const names = Object.keys(comps).sort((a, b) =>
    ((comps[a].type === "spout" ? 0 : 1) - (comps[b].type === "spout" ? 0 : 1)) || byName(a, b));
  body.replaceChildren();
  summary.table = {};
  for (const name of names) {
    const c = comps[name] || {};
    const figures = figuresOf(c.windows, w);
    summary.table[name] = figures;
    const cause = s.causes.has(name);
    const tr = el("tr", { "data-component": name, class: cause ? "bp-cause" : undefined });
    const cell = td("component");
    cell.append(el("a", { href: pageLink(s.t, { component: name, window: w }) }, name));
    if (cause) cell.append(bpLabel());
    tr.append(cell, td("type", c.type || "", "kind"), td("parallelism", fmtCount(c.parallelism), "num"));
    figureCells(tr, figures);
    body.append(tr);
  }
  if (!names.length) emptyRow(body, FIGURES.length + 3, "no components");
}

// #containers: one div.container per stream manager with li[data-instance] per instance.
function drawContainers(t, pplan) {
  const box = document.getElementById("containers");
  box.replaceChildren();
  const stmgrs = pplan.stmgrs || {};
  for (const id of Object.keys(stmgrs).sort(byName)) {
    const st = stmgrs[id] || {};
    const container = id.replace(/^stmgr-/, "");
    const div = el("div", { class: "container", "data-stmgr": id, "data-container": container });
    const h3 = el("h3", {}, `container ${container} · ${id} (${st.host}:${st.port}) `);
    if (st.logfiles) h3.append(el("a", { href: logLink(t, container, st.logfiles) }, "log"));
    div.append(h3);
    const ul = el("ul");
    for (const iid of (st.instance_ids || []).slice().sort(byName)) {
      const inst = (pplan.instances || {})[iid] || {};
      const li = el("li", { "data-instance": iid }, `${iid} (task ${inst.task_id}) `);
      if (inst.logfile) li.append(el("a", { href: logLink(t, container, inst.logfile) }, "log"));
      ul.append(li);
    }
    div.append(ul);
    box.append(div);
  }
  if (!box.children.length) box.append(el("span", { class: "muted" }, "no containers"));
}

// #pplan-table: instance, component, task, container, host, log link.
function drawPplanTable(t, pplan) {
  const body = document.querySelector("#pplan-table tbody");
  body.replaceChildren();
  const instances = Object.values(pplan.instances || {}).sort((a, b) => (a.task_id || 0) - (b.task_id || 0));
  for (const i of instances) {
    const st = (pplan.stmgrs || {})[i.stmgr_id] || {};
    const tr = el("tr", { "data-instance": i.id });
    const comp = td("component");
    comp.append(el("a", { href: pageLink(t, { component: i.name, window: summary.window }) }, i.name));
    const log = td("log");
    if (i.logfile) log.append(el("a", { class: "log-link", href: logLink(t, i.container, i.logfile) }, i.logfile));
    tr.append(td("instance", i.id), comp, td("task_id", String(i.task_id), "num"), td("container", String(i.container), "num"),
      td("host", st.host || ""), log);
    body.append(tr);
  }
  if (!instances.length) emptyRow(body, 6, "no instances");
}

// #config-table (loaded once). The live answer is the flat key/value object; an answer
// wrapped as {"config": {...}} is unwrapped.
async function loadConfig(t) {
  const body = document.querySelector("#config-table tbody");
  try {
    let cfg = await api("/topologies/config?" + q(t)) || {};
    const keys = Object.keys(cfg);
    if (keys.length === 1 && keys[0] === "config" && cfg.config && typeof cfg.config === "object") cfg = cfg.config;
    body.replaceChildren();
    for (const k of Object.keys(cfg).sort()) {
      const v = cfg[k];
      const tr = el("tr", { "data-key": k });
      tr.append(el("td", {}, k), el("td", {}, v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v)));
      body.append(tr);
    }
    if (!Object.keys(cfg).length) emptyRow(body, 2, "no configuration");
  } catch (e) {
    noteError(e);
    body.replaceChildren();
    emptyRow(body, 2, e.plain || e.message);
  }
}

// #checkpoints: the consistent checkpoints of a stateful topology, or "not stateful".
async function loadCheckpoints(t) {
  const box = document.getElementById("checkpoints");
  let x = null;
  try {
    x = await api("/topologies/checkpoints?" + q(t));
  } catch (e) {
    if (e.status !== 404) {
      box.replaceChildren(el("span", { class: "muted" }, e.plain || e.message));
      throw e;
    }
  }
  const list = (x && Array.isArray(x.consistent_checkpoints)) ? x.consistent_checkpoints : [];
  const stateful = !!x && (x.reliability_mode === "EFFECTIVELY_ONCE" || list.length > 0);
  box.dataset.stateful = String(stateful);
  summary.checkpoints = { stateful, count: list.length, newest: (x && x.newest_consistent_checkpoint) || null };
  if (!stateful) {
    box.replaceChildren(el("span", { class: "muted" }, "not stateful" + (x && x.reliability_mode ? ` (${x.reliability_mode})` : "")));
    return;
  }
  const facts = el("p", { class: "muted" },
    `interval ${x.checkpoint_interval_seconds ?? "–"} s · newest ${x.newest_consistent_checkpoint ?? "–"} · ` +
    `restores ${x.restores ?? "–"} · consistent checkpoints seen ${x.consistent_checkpoints_seen ?? "–"}`);
  const table = el("table");
  table.append(el("thead"), el("tbody"));
  const head = el("tr");
  head.append(el("th", {}, "Checkpoint"), el("th", { class: "num" }, "Packing plan"));
  table.tHead.append(head);
  for (const c of list) {
    const tr = el("tr", { "data-checkpoint": c.checkpoint_id });
    tr.append(td("checkpoint_id", c.checkpoint_id), td("packing_plan_id", String(c.packing_plan_id ?? ""), "num"));
    table.tBodies[0].append(tr);
  }
  if (!list.length) emptyRow(table.tBodies[0], 2, "no consistent checkpoint yet");
  box.replaceChildren(facts, table);
}

// ---- controls ----

function setupControls(t, s) {
  const token = document.getElementById("token");
  document.getElementById("token-form").addEventListener("submit", e => e.preventDefault());
  try { token.value = sessionStorage.getItem(TOKEN_KEY) || ""; } catch (_) { /* storage disabled */ }
  token.addEventListener("input", () => {
    try { sessionStorage.setItem(TOKEN_KEY, token.value); } catch (_) { /* storage disabled */ }
  });
  for (const b of document.querySelectorAll("#controls button[data-action]")) {
    b.addEventListener("click", () => { runControl(t, b.dataset.action).catch(e => showControl(false, String(e.message || e))); });
  }
  document.getElementById("update-component").addEventListener("change", () => prefillParallelism(s));
}

// The component select of the update control, refilled when the components change.
function fillComponentSelect(s) {
  const comps = (s.sum && s.sum.components) || null;
  if (!comps) return;
  const sel = document.getElementById("update-component");
  const names = Object.keys(comps).sort(byName);
  const key = names.map(n => n + ":" + comps[n].parallelism).join(",");
  if (sel.dataset.names === key) return;
  const keep = sel.value;
  sel.dataset.names = key;
  sel.replaceChildren();
  for (const n of names) sel.append(el("option", { value: n }, `${n} (${comps[n].parallelism ?? "?"})`));
  if (names.includes(keep)) sel.value = keep;
  const input = document.getElementById("update-parallelism");
  if (!input.value) prefillParallelism(s);
}

function prefillParallelism(s) {
  const c = ((s.sum && s.sum.components) || {})[document.getElementById("update-component").value];
  if (c && num(c.parallelism) !== null) document.getElementById("update-parallelism").value = String(c.parallelism);
}

function showControl(ok, message) {
  const out = document.getElementById("control-result");
  out.className = ok === null ? "" : ok ? "ok" : "failed";
  out.textContent = message;
  summary.control = { ok, message };
  publishSummary();
}

// Asks confirm(), POSTs the action (with the bearer token if one was entered) and shows the
// answer's message in #control-result.
async function runControl(t, action) {
  let extra = "", question;
  const name = t.topology;
  if (action === "activate") question = `Activate topology ${name}?`;
  else if (action === "deactivate") question = `Deactivate topology ${name}? Its spouts stop emitting.`;
  else if (action === "kill") question = `Kill topology ${name}? This cannot be undone.`;
  else if (action === "restart") {
    const n = document.getElementById("restart-container").value.trim();
    if (!/^\d+$/.test(n)) { showControl(false, "enter the number of the container to restart"); return; }
    extra = "&container=" + n;
    question = `Restart container ${n} of ${name}?`;
  } else if (action === "update") {
    const c = document.getElementById("update-component").value;
    const p = document.getElementById("update-parallelism").value.trim();
    if (!c) { showControl(false, "choose a component"); return; }
    if (!/^\d+$/.test(p) || Number(p) < 1) { showControl(false, "enter a parallelism of at least 1"); return; }
    extra = "&component_parallelism=" + encodeURIComponent(c) + ":" + p;
    question = `Set the parallelism of ${c} in ${name} to ${p}?`;
  } else return;
  if (!window.confirm(question)) { showControl(null, action + ": cancelled"); return; }
  const headers = {};
  const token = document.getElementById("token").value;
  if (token) headers.Authorization = "Bearer " + token;
  const buttons = document.querySelectorAll("#controls button");
  for (const b of buttons) b.disabled = true;
  showControl(null, action + ": sending…");
  try {
    const answer = await api(`/topologies/${action}?${q(t)}${extra}`, { method: "POST", headers });
    showControl(true, (answer && answer.message) || action + ": done");
  } catch (e) {
    showControl(false, e.plain || e.message);
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}

// ---- 3. component view ----

async function componentView(t, component) {
  summary.view = "component";
  summary.topology = t.topology;
  summary.component = component;
  mount("tpl-component");
  const s = { t, component, data: null, plan: null, exceptions: null };
  setupWindowSelect(() => drawInstancesTable(s));
  setWhere(t, el("a", { href: pageLink(t, { component, window: summary.window }) }, component));
  await every(REFRESH_MS, () => refreshComponent(s));
}

async function refreshComponent(s) {
  const t = s.t, c = encodeURIComponent(s.component);
  const jobs = [
    api(`/topologies/component?${q(t)}&component=${c}`).then(x => { s.data = x; }),
    api(`/topologies/exceptions?${q(t)}&component=${c}`).then(x => { s.exceptions = x; s.excFailure = null; },
      e => { s.excFailure = e; throw e; }),
  ];
  if (!s.plan) jobs.push(api("/topologies/logicalplan?" + q(t)).then(p => { s.plan = p; }));
  await settle(jobs);
  const instances = (s.data && Array.isArray(s.data.instances)) ? s.data.instances : [];
  const slow = new Set(instances.filter(i => i.backpressure_cause).map(i => i.id));
  const causes = new Set(slow.size ? [s.component] : []);
  drawComponentFacts(s, causes.size > 0);
  drawInstancesTable(s);
  drawErrors(s.exceptions, null, s.component, s.excFailure);
  if (s.plan) {
    summary.components = componentsOf(s.plan).sort();
    if (summary.components.includes(s.component)) {
      await refreshCharts(t, s.plan, [s.component], document.getElementById("charts"));
    } else noteError(`component ${s.component} is not in the logical plan of ${t.topology}`);
  }
  markBackpressure(causes, new Set(), slow);
}

function drawComponentFacts(s, cause) {
  const x = s.data;
  if (!x) return;
  const n = Array.isArray(x.instances) ? x.instances.length : null;
  summary.facts = { component: x.component, type: x.type, parallelism: n, backpressure_cause: cause };
  const bp = cause ? bpLabel() : "no";
  drawFacts([
    ["component", "Component", x.component || s.component],
    ["type", "Type", x.type || "–"],
    ["parallelism", "Parallelism", fmtCount(n)],
    ["backpressure", "Back pressure", bp],
  ]);
}

// #instances-table: one tr[data-instance] per task, figures of the selected window.
function drawInstancesTable(s) {
  const table = document.getElementById("instances-table");
  if (!table.tHead.rows.length) {
    table.tHead.append(figureHeaders(
      [{ label: "Instance" }, { label: "Task", num: true }, { label: "Container", num: true }, { label: "Host" }],
      [{ label: "CPU", num: true }, { label: "Memory", num: true }, { label: "Restarts", num: true },
        { label: "Uptime", num: true }, { label: "Log" }]));
  }
  if (!s.data) return;
  const body = table.tBodies[0];
  const w = summary.window;
  const list = (Array.isArray(s.data.instances) ? s.data.instances : []).slice()
    .sort((a, b) => (a.task_id || 0) - (b.task_id || 0));
  body.replaceChildren();
  summary.instances = {};
  for (const i of list) {
    const figures = figuresOf(i.windows, w);
    summary.instances[i.id] = Object.assign({ task_id: num(i.task_id), container: num(Number(i.container)),
      cpu_percent: num(i.cpu_percent), memory_mb: num(i.memory_mb), restarts: num(i.restarts),
      uptime_secs: num(i.uptime_secs) }, figures);
    const tr = el("tr", { "data-instance": i.id, class: i.backpressure_cause ? "bp-cause" : undefined });
    const name = td("instance", i.id);
    if (i.backpressure_cause) name.append(bpLabel());
    tr.append(name, td("task_id", fmtCount(i.task_id), "num"), td("container", String(i.container ?? "–"), "num"),
      td("host", i.host || "–"));
    figureCells(tr, figures);
    const log = td("log");
    if (i.logfile) log.append(el("a", { class: "log-link", href: logLink(s.t, i.container, i.logfile) }, "log"));
    tr.append(td("cpu_percent", fmtPercent(i.cpu_percent), "num"), td("memory_mb", fmtMb(i.memory_mb), "num"),
      td("restarts", fmtCount(i.restarts), "num"), td("uptime_secs", fmtDuration(i.uptime_secs), "num"), log);
    body.append(tr);
  }
  if (!list.length) emptyRow(body, FIGURES.length + 9, "no instances");
}

// ---- 4. log view ----

async function logView(t) {
  summary.view = "log";
  summary.topology = t.topology;
  mount("tpl-log");
  const p = params();
  const s = { t, container: p.get("container") || "", path: p.get("path") || "", cur: null };
  setWhere(t, el("span", {}, `container ${s.container}`), el("span", {}, s.path));
  document.getElementById("log-path").textContent = `container ${s.container}: ${s.path}`;
  document.getElementById("log-older").addEventListener("click", () => {
    if (!s.cur) return;
    const off = Math.max(0, s.cur.offset - LOG_PAGE);
    loadLog(s, off, s.cur.offset - off, "bottom");
  });
  document.getElementById("log-newer").addEventListener("click", () => {
    if (s.cur) loadLog(s, s.cur.offset + s.cur.length, LOG_PAGE, "top");
  });
  document.getElementById("log-tail").addEventListener("click", () => loadLog(s, -1, LOG_PAGE, "bottom"));
  await loadFiles(s);
  await loadLog(s, -1, LOG_PAGE, "bottom");
}

function byteLength(text) {
  return new TextEncoder().encode(text).length;
}

// One page of the file: offset -1 is the tail. Shows it in pre#log and its place in the file.
async function loadLog(s, offset, length, scroll) {
  const pre = document.getElementById("log");
  const range = document.getElementById("log-range");
  const path = `/topologies/container/filedata?${q(s.t)}&container=${encodeURIComponent(s.container)}` +
    `&path=${encodeURIComponent(s.path)}&offset=${offset}&length=${length}`;
  try {
    const x = await api(path) || {};
    const data = typeof x.data === "string" ? x.data : "";
    const len = num(x.length) !== null && x.length >= 0 ? x.length : byteLength(data);
    const size = num(x.size);
    let off = num(x.offset);
    if (off === null || off < 0) off = Math.max(0, (size ?? len) - len);
    s.cur = { offset: off, length: len, size };
    pre.textContent = data;
    if (!data) pre.append(el("span", { class: "muted" }, off === 0 && !size ? "(empty file)" : "(nothing here)"));
    pre.scrollTop = scroll === "bottom" ? pre.scrollHeight : 0;
    document.getElementById("log-size").textContent = size === null ? "" : `${fmtBytes(size)} (${fmtCount(size)} bytes)`;
    range.textContent = `bytes ${fmtCount(off)}–${fmtCount(off + len)}` + (size === null ? "" : ` of ${fmtCount(size)}`);
    document.getElementById("log-older").disabled = off <= 0;
    document.getElementById("log-newer").disabled = size !== null && off + len >= size;
    const lines = data ? data.split("\n").length - (data.endsWith("\n") ? 1 : 0) : 0;
    summary.log = { offset: off, length: len, size, lines };
  } catch (e) {
    noteError(e);
    pre.replaceChildren(el("span", { class: "muted" }, "cannot read the file: " + (e.plain || e.message)));
    range.textContent = "";
    document.getElementById("log-older").disabled = !s.cur || s.cur.offset <= 0;
    document.getElementById("log-newer").disabled = !s.cur;
    summary.log = { offset: null, length: null, size: null, lines: 0, error: e.plain || e.message };
  }
  summary.updates += 1;
  endRound();
  publishSummary();
}

// The files of the log's directory (filestats), each a link to its log view.
async function loadFiles(s) {
  const dir = s.path.includes("/") ? s.path.slice(0, s.path.lastIndexOf("/")) : "log-files";
  document.getElementById("log-dir").textContent = `container ${s.container}: ${dir}`;
  const box = document.getElementById("log-files");
  try {
    const x = await api(`/topologies/container/filestats?${q(s.t)}&container=${encodeURIComponent(s.container)}&path=${encodeURIComponent(dir)}`);
    const files = ((x && x.files) || []).slice().sort((a, b) => byName(String(a.name), String(b.name)));
    const ul = el("ul");
    for (const f of files) {
      const path = dir + "/" + f.name;
      const li = el("li", { class: path === s.path ? "current" : undefined });
      if (f.is_dir) li.append(el("span", {}, f.name + "/"));
      else li.append(el("a", { href: logLink(s.t, s.container, path) }, f.name));
      li.append(el("span", { class: "muted" }, " " + (f.is_dir ? "" : fmtBytes(f.size))));
      ul.append(li);
    }
    box.replaceChildren(files.length ? ul : el("span", { class: "muted" }, "no files"));
  } catch (e) {
    noteError(e);
    box.replaceChildren(el("span", { class: "muted" }, e.plain || e.message));
  }
}

// ---- start ----

async function main() {
  try {
    const t = selected();
    const p = params();
    if (!t) await listView();
    else if (p.get("view") === "log") await logView(t);
    else if (p.get("component")) await componentView(t, p.get("component"));
    else await topologyView(t);
  } catch (e) {
    noteError(e);
    endRound();
    publishSummary();
  }
}
