"""The explorer's page: HTML, style and script in one string, loading nothing from elsewhere.

The script draws the graph as SVG from ``/api/model`` and asks ``/api/answer``
for every change; it computes nothing itself. Elements a test drives carry a
``data-testid``: ``row``, ``features``, ``apply``, ``reset``,
``set-<concept>-<category>``, ``prob-<concept>-<category>``, ``task-<class>`` and
``bayes-<class>`` (the last three with the exact value in ``data-value``).
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fedmosaic explore</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 0; }
header { padding: .8rem 1.5rem; border-bottom: 1px solid #d0d7de; }
header h1 { font-size: 1.2rem; margin: 0; display: inline; }
header span { color: #59636e; margin-left: .8rem; }
main { display: grid; grid-template-columns: 20rem 1fr; gap: 1.5rem; padding: 1rem 1.5rem; }
section.controls > * { margin-bottom: .9rem; }
select, textarea, button { font: inherit; }
select { width: 100%; }
textarea { width: 100%; box-sizing: border-box; height: 6rem; font-family: ui-monospace, monospace; font-size: .8rem; }
button { padding: .3rem .8rem; border: 1px solid #8c959f; border-radius: 6px; background: #f6f8fa; cursor: pointer; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; }
th { background: #f6f8fa; }
#error { color: #cf222e; }
.hint { color: #59636e; font-size: .85rem; }
svg { width: 100%; height: auto; }
svg text { font-size: 12px; dominant-baseline: middle; }
.node rect.box { fill: #ffffff; stroke: #57606a; rx: 6; }
.node.task rect.box { stroke: #0969da; stroke-width: 2; }
.node.set rect.box { stroke: #bc4c00; stroke-width: 2.5; }
.node.changed rect.box { fill: #fff8c5; }
.cat { cursor: pointer; }
.cat rect.bar { fill: #b6e3ff; }
.cat.chosen rect.bar { fill: #fb8f44; }
.cat:hover rect.back, .cat:focus rect.back { fill: #eaeef2; }
.cat rect.back { fill: transparent; }
.legend span { margin-right: 1rem; font-size: .85rem; }
</style>
</head>
<body>
<header><h1>fedmosaic explore</h1><span id="title"></span></header>
<main>
<section class="controls">
  <label for="row">Test row</label>
  <select id="row" data-testid="row"></select>
  <details>
    <summary>Enter feature values</summary>
    <textarea id="features" data-testid="features" aria-label="feature values, comma-separated"></textarea>
    <button id="apply" data-testid="apply">Use these values</button>
  </details>
  <button id="reset" data-testid="reset">Reset interventions</button>
  <p class="hint">Click a value of a concept to set it: its descendants and the task are recomputed by the model.</p>
  <table aria-label="task prediction">
    <thead><tr><th id="task-name">Task</th><th>Model</th><th>True network</th></tr></thead>
    <tbody id="task-rows"></tbody>
  </table>
  <p class="hint" id="bayes-note"></p>
  <p id="set-list" class="hint"></p>
  <p id="error" role="alert"></p>
</section>
<section>
  <svg id="graph" role="img" aria-label="concept graph"></svg>
  <div class="legend" id="legend"></div>
</section>
</main>
<script>
"use strict";
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 980, BOX = 150, ROW = 18, HEAD = 22, GAP = 60;
const COLOURS = {correct: "#1a7f37", reversed: "#bc4c00", extra: "#cf222e", missing: "#8c959f", unknown: "#24292f"};
let model = null, features = [], settings = {}, sequence = 0;

function el(tag, attrs, parent) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}
function pct(p) { return (100 * p).toFixed(1) + "%"; }
function values(name) { return name === model.task ? model.classes : model.concepts[name]; }

function layout() {
  const layers = {};
  for (const n of model.nodes) (layers[n.layer] = layers[n.layer] || []).push(n);
  const heights = {};
  for (const [layer, members] of Object.entries(layers))
    heights[layer] = Math.max(...members.map(n => HEAD + ROW * values(n.name).length));
  const places = {};
  let y = 10;
  for (const layer of Object.keys(layers).map(Number).sort((a, b) => a - b)) {
    for (const n of layers[layer]) places[n.name] = {x: 10 + n.x * (WIDTH - 20) - BOX / 2, y: y, h: HEAD + ROW * values(n.name).length};
    y += heights[layer] + GAP;
  }
  return {places: places, height: y - GAP + 10};
}

function draw() {
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  const {places, height} = layout();
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${height}`);
  const defs = el("defs", {}, svg);
  for (const [status, colour] of Object.entries(COLOURS)) {
    const marker = el("marker", {id: "arrow-" + status, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto"}, defs);
    el("path", {d: "M0,0 L10,5 L0,10 z", fill: colour}, marker);
  }
  for (const e of model.edges) {
    const a = places[e.source], b = places[e.target];
    el("line", {x1: a.x + BOX / 2, y1: a.y + a.h, x2: b.x + BOX / 2, y2: b.y, stroke: COLOURS[e.status], "stroke-width": 1.8,
                "stroke-dasharray": e.status === "extra" ? "6 4" : e.status === "missing" ? "2 4" : "", "marker-end": `url(#arrow-${e.status})`}, svg)
      .appendChild(el("title", {})).textContent = `${e.source} → ${e.target}: ${e.status}` +
        (e.score === null || e.score === undefined ? "" : `, consensus ${e.score.toFixed(2)}`);
  }
  for (const n of model.nodes) {
    const p = places[n.name], isTask = n.name === model.task;
    const g = el("g", {class: "node" + (isTask ? " task" : ""), id: "node-" + n.name, transform: `translate(${p.x},${p.y})`}, svg);
    el("rect", {class: "box", width: BOX, height: p.h}, g);
    el("text", {x: 8, y: HEAD / 2 + 1, "font-weight": "bold"}, g).textContent = n.name + (isTask ? " (task)" : "");
    values(n.name).forEach((value, i) => {
      const row = el("g", {class: "cat", transform: `translate(0,${HEAD + ROW * i})`}, g);
      if (!isTask) {
        row.setAttribute("data-testid", `set-${n.name}-${value}`);
        row.setAttribute("role", "button");
        row.setAttribute("tabindex", "0");
        row.setAttribute("aria-label", `set ${n.name} to ${value}`);
        row.addEventListener("click", () => choose(n.name, value));
        row.addEventListener("keydown", ev => { if (ev.key === "Enter" || ev.key === " ") choose(n.name, value); });
      }
      el("rect", {class: "back", x: 2, width: BOX - 4, height: ROW - 2}, row);
      el("rect", {class: "bar", x: 60, y: 3, width: 0, height: ROW - 8}, row);
      el("text", {x: 8, y: ROW / 2}, row).textContent = value;
      el("text", {class: "prob", x: BOX - 6, y: ROW / 2, "text-anchor": "end", "data-testid": `prob-${n.name}-${value}`}, row);
    });
  }
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  for (const status of new Set(model.edges.map(e => e.status))) {
    const span = document.createElement("span");
    span.style.color = COLOURS[status];
    span.textContent = "— " + status + (status === "unknown" ? " (true network not known)" : "");
    legend.appendChild(span);
  }
}

function show(answer) {
  const changed = new Set(answer.changed);
  const probs = Object.assign({}, answer.concepts, {[model.task]: answer.task});
  for (const n of model.nodes) {
    const g = document.getElementById("node-" + n.name);
    g.classList.toggle("set", n.name in settings);
    g.classList.toggle("changed", changed.has(n.name) && !(n.name in settings));
    g.querySelectorAll(".cat").forEach((row, i) => {
      const p = probs[n.name][i];
      row.querySelector("rect.bar").setAttribute("width", (BOX - 66) * p);
      const text = row.querySelector("text.prob");
      text.textContent = pct(p);
      text.setAttribute("data-value", p);
      row.classList.toggle("chosen", settings[n.name] === values(n.name)[i]);
    });
  }
  const rows = document.getElementById("task-rows");
  rows.replaceChildren();
  model.classes.forEach((name, i) => {
    const tr = document.createElement("tr");
    const cells = [name, answer.task[i], answer.bayes === null ? null : answer.bayes[i]];
    cells.forEach((value, j) => {
      const td = document.createElement("td");
      if (j === 0) td.textContent = name;
      else if (value === null) td.textContent = "—";
      else { td.textContent = pct(value); td.setAttribute("data-value", value); }
      if (j > 0) td.setAttribute("data-testid", (j === 1 ? "task-" : "bayes-") + name);
      tr.appendChild(td);
    });
    rows.appendChild(tr);
  });
  const set = Object.entries(settings).map(([k, v]) => `${k} = ${v}`);
  document.getElementById("set-list").textContent = set.length ? "Set: " + set.join(", ") : "No concept set.";
}

async function update() {
  const error = document.getElementById("error"), mine = ++sequence;
  const response = await fetch("/api/answer", {method: "POST", headers: {"Content-Type": "application/json"},
                                               body: JSON.stringify({features: features, set: settings})});
  const body = await response.json();
  if (mine !== sequence) return;  // a later change has already been sent
  if (!response.ok) { error.textContent = body.error; return; }
  error.textContent = "";
  show(body);
  document.body.setAttribute("data-ready", Object.keys(settings).sort().map(k => k + "=" + settings[k]).join(","));
}

function choose(concept, value) {
  if (settings[concept] === value) delete settings[concept]; else settings[concept] = value;
  update();
}

function pickRow(index) {
  features = model.examples[index].slice();
  document.getElementById("features").value = features.join(", ");
  update();
}

async function start() {
  model = await (await fetch("/api/model")).json();
  document.getElementById("title").textContent = model.title;
  document.getElementById("task-name").textContent = model.task;
  document.getElementById("bayes-note").textContent = model.network_known
    ? "True network: P(task | the concepts set), exact inference on the network the data came from; with every concept set it is the Bayes-optimal prediction."
    : "True network: not known for this model's data.";
  const select = document.getElementById("row");
  model.examples.forEach((_, i) => {
    const option = document.createElement("option");
    option.value = i; option.textContent = "test row " + (i + 1);
    select.appendChild(option);
  });
  select.addEventListener("change", () => pickRow(Number(select.value)));
  document.getElementById("apply").addEventListener("click", () => {
    features = document.getElementById("features").value.split(/[\\s,;]+/).filter(s => s.length).map(Number);
    update();
  });
  document.getElementById("reset").addEventListener("click", () => { settings = {}; update(); });
  draw();
  pickRow(0);
}
start();
</script>
</body>
</html>
"""
