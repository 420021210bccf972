"use strict";
// This file draws a flow's graph as SVG, laid out by dagre: each step a box
// coloured by its status in a run, loop and map bodies as clusters that fold
// into one box, edges styled by how they are taken (failure dashed red,
// repeat edges blue), with pan and zoom. It knows the graph's JSON (the
// API's "graph": nodes, edges) and nothing else of the page.

const SVGNS = "http://www.w3.org/2000/svg";

// svgEl makes an SVG element with attributes and children.
function svgEl(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k !== null && k !== undefined) el.append(k);
  }
  return el;
}

// What each kind of step is called on the page.
const KIND_NAMES = {
  start: "start", end: "end", abort: "stop", task: "command", shell: "shell script",
  fn: "function", subflow: "child flow", noop: "join", router: "router", loop: "loop",
  map: "map", llm: "model call", wait: "wait", approval: "approval", agent: "agent",
};

// truncate shortens s to n characters with an ellipsis.
function truncate(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// fmtMs writes a duration in milliseconds for people: 340 ms, 2.1 s, 3 min 5 s.
function fmtMs(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1) return "<1 ms";
  if (ms < 1000) return Math.round(ms) + " ms";
  const s = ms / 1000;
  if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + Math.round(s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

const NODE_H = 42;
const FOOT_H = 24;

class FlowGraph {
  // box is the element the graph is drawn in; graph the API's graph;
  // onSelect(id) is called when a step is clicked. Bodies start folded
  // when the flow has more than foldAbove steps.
  constructor(box, graph, { onSelect, foldAbove = 60 } = {}) {
    this.box = box;
    this.graph = graph;
    this.onSelect = onSelect || (() => {});
    this.byId = new Map(graph.nodes.map((n) => [n.id, n]));
    this.folded = new Set();
    if (graph.nodes.length > foldAbove) {
      for (const n of graph.nodes) if (isContainer(n)) this.folded.add(n.id);
    }
    this.info = new Map(); // id -> {status, visits, attempts, duration_ms}
    this.selected = null;
    this.view = { k: 1, x: 0, y: 0 };
    this.build();
    this.render();
  }

  // build makes the fixed parts: the tool buttons, the SVG and its arrowheads.
  build() {
    this.box.classList.add("graph-box");
    const btn = (label, title, fn) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.title = title;
      b.setAttribute("aria-label", title);
      b.addEventListener("click", fn);
      return b;
    };
    const tools = document.createElement("div");
    tools.className = "graph-tools";
    tools.append(
      btn("+", "Zoom in", () => this.zoom(1.25)),
      btn("−", "Zoom out", () => this.zoom(0.8)),
      btn("Fit", "Fit the whole graph", () => this.fit(true)),
    );
    if (this.graph.nodes.some(isContainer)) {
      tools.append(btn("Fold", "Fold or unfold every loop and map", () => this.toggleAll()));
    }
    const marker = (cls) => svgEl("marker", { id: "arrow-" + cls, class: cls, viewBox: "0 0 10 10", refX: 10, refY: 5,
      markerUnits: "userSpaceOnUse", markerWidth: 9, markerHeight: 9, orient: "auto-start-reverse" }, svgEl("path", { d: "M0,1 L10,5 L0,9 z" }));
    this.svg = svgEl("svg", { role: "img", "aria-label": "graph of the flow" },
      svgEl("defs", {}, marker("plain"), marker("failure"), marker("back")));
    this.layer = svgEl("g");
    this.svg.append(this.layer);
    this.box.replaceChildren(tools, this.svg);
    this.panZoom();
    // A window that changes size (a phone turned) fits the graph again,
    // unless someone moved it.
    let width = this.box.clientWidth;
    this.resized = new ResizeObserver(() => {
      if (this.box.clientWidth === width || this.moved) return;
      width = this.box.clientWidth;
      this.height();
      this.fit(false);
    });
    this.resized.observe(this.box);
  }

  // close lets go of the window (the page is leaving).
  close() {
    this.resized.disconnect();
  }

  // height sizes the drawing area to the graph, within the window.
  height() {
    const k = Math.max(0.45, Math.min(1, (this.box.clientWidth || 800) / this.size.w));
    const h = Math.max(240, Math.min(this.size.h * k + 10, window.innerHeight * 0.72));
    this.svg.setAttribute("height", Math.round(h));
  }

  // visibleOf is the box that stands for step id: itself, or the outermost
  // folded loop or map around it.
  visibleOf(id) {
    let shown = id;
    for (let n = this.byId.get(id); n && n.parent; ) {
      if (this.folded.has(n.parent)) shown = n.parent;
      n = this.byId.get(n.parent);
    }
    return shown;
  }

  // layout lays the visible boxes out with dagre. An unfolded loop or map
  // is a cluster holding its own box at the top (the edges in arrive
  // there), its body, and a foot at the bottom (the edges out leave from
  // there).
  layout() {
    const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 22, ranksep: 34, edgesep: 10, marginx: 18, marginy: 18 });
    g.setDefaultEdgeLabel(() => ({}));
    const open = (n) => isContainer(n) && !this.folded.has(n.id);
    // Wide enough for the name and for a line like "command · ×3 · 1.2 s".
    const size = (n) => ({ width: Math.min(240, Math.max(7.4 * Math.min(n.id.length, 28) + 26, 6.3 * ((KIND_NAMES[n.kind] || n.kind).length + 19))), height: NODE_H });
    for (const n of this.graph.nodes) {
      if (this.visibleOf(n.id) !== n.id) continue;
      g.setNode(n.id, { node: n, ...size(n) });
      const parent = n.parent ? "c:" + n.parent : null;
      if (open(n)) {
        g.setNode("c:" + n.id, { cluster: n });
        g.setParent(n.id, "c:" + n.id);
        g.setNode("f:" + n.id, { foot: n, width: 150, height: FOOT_H });
        g.setParent("f:" + n.id, "c:" + n.id);
        if (parent) g.setParent("c:" + n.id, parent);
      } else if (parent) {
        g.setParent(n.id, parent);
      }
    }
    const seen = new Set();
    const addEdge = (from, to, e, cls) => {
      if (from === to) return;
      const key = from + "\u0000" + to + "\u0000" + cls;
      if (seen.has(key)) return;
      seen.add(key);
      const label = e ? edgeLabel(e) : "";
      const lab = label ? { label, width: Math.min(label.length, 30) * 6 + 8, height: 14, labelpos: "c" } : {};
      g.setEdge(from, to, { edge: e, cls, ...lab }, key);
    };
    const exitOf = (id) => (open(this.byId.get(id)) ? "f:" + id : id);
    for (const e of this.graph.edges) {
      const from = this.visibleOf(e.from), to = this.visibleOf(e.to);
      addEdge(exitOf(from), to, e, e.on === "failure" ? "failure" : e.back ? "back" : "plain");
    }
    // Inside an unfolded body: from the loop's box to the steps nothing in
    // the body leads to, and from the steps that lead nowhere in the body
    // to the foot.
    for (const n of this.graph.nodes) {
      if (!open(n) || this.visibleOf(n.id) !== n.id) continue;
      const body = new Set(n.body);
      const inner = this.graph.edges.filter((e) => body.has(e.from) && body.has(e.to) && !e.back);
      for (const b of n.body) {
        if (!inner.some((e) => e.to === b)) addEdge(n.id, b, null, "body");
        if (!inner.some((e) => e.from === b)) addEdge(exitOf(b), "f:" + n.id, null, "body");
      }
    }
    // Past a few hundred boxes dagre's search for fewer edge crossings and
    // its balanced ranking cost seconds: its first ordering and the
    // longest-path ranking do instead.
    const big = g.nodeCount() > 300;
    if (big) g.graph().ranker = "longest-path";
    dagre.layout(g, { disableOptimalOrderHeuristic: big });
    return g;
  }

  // render lays the graph out and draws it.
  render() {
    const t0 = performance.now();
    const g = this.layout();
    const t1 = performance.now();
    const clusters = svgEl("g"), edges = svgEl("g"), nodes = svgEl("g");
    this.boxes = new Map();
    this.edgeEls = [];
    const clusterDepth = (id) => { let d = 0; for (let p = g.parent(id); p; p = g.parent(p)) d++; return d; };
    const ids = g.nodes().sort((a, b) => clusterDepth(a) - clusterDepth(b));
    for (const id of ids) {
      const d = g.node(id);
      if (d.cluster) {
        clusters.append(svgEl("g", { class: "gcluster" },
          svgEl("rect", { x: d.x - d.width / 2, y: d.y - d.height / 2, width: d.width, height: d.height, rx: 8 })));
      } else if (d.foot) {
        nodes.append(this.drawFoot(d));
      } else {
        nodes.append(this.drawNode(d));
      }
    }
    for (const ref of g.edges()) {
      const d = g.edge(ref);
      const pts = d.points;
      const path = svgEl("path", { d: smoothPath(pts), "marker-end": `url(#arrow-${d.cls === "body" ? "plain" : d.cls})` });
      const el = svgEl("g", { class: "gedge " + d.cls }, path);
      if (d.label) {
        const w = d.width;
        el.append(svgEl("rect", { class: "lbl-bg", x: d.x - w / 2, y: d.y - 8, width: w, height: 15, rx: 3 }),
          svgEl("text", { x: d.x, y: d.y + 3.5, "text-anchor": "middle" }, truncate(d.label, 30),
            svgEl("title", {}, d.label)));
      }
      this.edgeEls.push({ el, from: ref.v, to: ref.w });
      edges.append(el);
    }
    this.layer.replaceChildren(clusters, edges, nodes);
    const gg = g.graph();
    this.size = { w: gg.width || 100, h: gg.height || 100 };
    this.height();
    this.paint();
    if (!this.placed) {
      this.placed = true;
      this.fit(false);
    }
    this.timing = { layout: t1 - t0, draw: performance.now() - t1 };
  }

  drawNode(d) {
    const n = d.node;
    const x = d.x - d.width / 2, y = d.y - d.height / 2;
    const terminal = n.kind === "start" || n.kind === "end";
    const folded = isContainer(n) && this.folded.has(n.id);
    const cls = ["gnode", "k-" + n.kind, terminal ? "terminal" : ""].join(" ");
    const name = svgEl("text", { x: d.x, y: terminal ? d.y + 4 : d.y - 3, "text-anchor": "middle", "font-weight": 600 },
      terminal ? n.kind === "start" ? "Start" : "End" : truncate(n.id, 28));
    const meta = svgEl("text", { class: "meta", x: d.x, y: d.y + 13, "text-anchor": "middle" });
    const title = svgEl("title");
    const g = svgEl("g", { class: cls, "data-step": n.id, tabindex: terminal ? null : 0, role: terminal ? null : "button" },
      svgEl("rect", { x, y, width: d.width, height: d.height, rx: n.kind === "router" ? 14 : 6 }), name, terminal ? null : meta, title);
    if (!terminal) {
      const choose = () => this.onSelect(n.id);
      g.addEventListener("click", (ev) => { if (!this.dragged) { ev.stopPropagation(); choose(); } });
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); choose(); } });
      if (isContainer(n)) {
        const t = svgEl("text", { class: "meta fold", x: x + d.width - 9, y: y + 13, "text-anchor": "end" }, folded ? "▸" : "▾");
        t.addEventListener("click", (ev) => { ev.stopPropagation(); this.toggle(n.id); });
        g.append(t);
        g.addEventListener("dblclick", (ev) => { ev.stopPropagation(); this.toggle(n.id); });
      }
    }
    this.boxes.set(n.id, { g, meta, title, node: n, folded });
    return g;
  }

  drawFoot(d) {
    const n = d.foot;
    const text = n.kind === "loop"
      ? "repeat" + (n.until && n.until !== "lambda" ? " until " + n.until : "") + (n.max_iterations ? ", at most " + n.max_iterations + " times" : "")
      : "collect the results";
    const g = svgEl("g", { class: "gcluster foot" },
      svgEl("text", { x: d.x, y: d.y + 4, "text-anchor": "middle" }, truncate(text, 36), svgEl("title", {}, text)));
    return g;
  }

  // setRun gives each step its status in a run: info maps a step's id to
  // {status, visits, attempts, duration_ms}.
  setRun(info) {
    this.info = info;
    this.paint();
  }

  // paint colours the boxes and writes their counts.
  paint() {
    for (const [id, b] of this.boxes) {
      const i = this.info.get(id);
      const n = b.node;
      const status = i ? i.status || "pending" : null;
      b.g.setAttribute("class", b.g.getAttribute("class").replace(/ g-\S+/g, "").replace(/ sel\b/g, "") +
        (status ? " g-" + status : "") + (id === this.selected ? " sel" : ""));
      const parts = [];
      if (i && i.visits > 1) parts.push("×" + i.visits);
      if (i && i.attempts > (i.visits || 0) && i.attempts > 1) parts.push(i.attempts + " tries");
      if (i && i.duration_ms) parts.push(fmtMs(i.duration_ms));
      let meta = KIND_NAMES[n.kind] || n.kind;
      if (b.folded) meta += " · " + n.body.length + " steps";
      if (parts.length) meta += " · " + parts.join(" · ");
      b.meta.textContent = truncate(meta, 34);
      b.title.textContent = `${n.id} (${KIND_NAMES[n.kind] || n.kind})` + (status ? `: ${status}` : "") +
        (i && i.visits ? `, ${i.visits} visit${i.visits > 1 ? "s" : ""}` : "") +
        (i && i.attempts ? `, ${i.attempts} attempt${i.attempts > 1 ? "s" : ""}` : "") +
        (i && i.duration_ms ? `, ${fmtMs(i.duration_ms)}` : "");
      b.g.setAttribute("data-status", status || "");
    }
    const ran = (id) => {
      const s = this.info.get(id.replace(/^f:/, ""));
      return s && s.visits > 0 || id === "START" || (s && s.status && !["pending", "skipped"].includes(s.status));
    };
    for (const e of this.edgeEls) e.el.classList.toggle("taken", ran(e.from) && ran(e.to) && this.info.size > 0);
  }

  // select marks step id as the chosen one, and with center brings it into view.
  select(id, center) {
    this.selected = this.visibleOf(id);
    this.paint();
    if (center) this.centerOn(this.selected);
  }

  toggle(id) {
    if (this.folded.has(id)) this.folded.delete(id);
    else this.folded.add(id);
    this.render();
    this.centerOn(id);
  }

  toggleAll() {
    const all = this.graph.nodes.filter(isContainer).map((n) => n.id);
    if (this.folded.size) this.folded.clear();
    else all.forEach((id) => this.folded.add(id));
    this.render();
    this.fit(false);
  }

  centerOn(id) {
    const b = this.boxes.get(id);
    if (!b) return;
    const r = b.g.querySelector("rect");
    const cx = +r.getAttribute("x") + +r.getAttribute("width") / 2;
    const cy = +r.getAttribute("y") + +r.getAttribute("height") / 2;
    const W = this.svg.clientWidth, H = this.svg.clientHeight;
    this.view.x = W / 2 - cx * this.view.k;
    this.view.y = H / 2 - cy * this.view.k;
    this.apply();
  }

  // fit shows the whole graph when all, else the top of it at a size
  // that stays legible (a long flow is then panned).
  fit(all) {
    const W = this.svg.clientWidth || 800, H = this.svg.clientHeight || 400;
    let k = Math.min(1, W / this.size.w);
    if (all) k = Math.min(k, H / this.size.h);
    else k = Math.max(k, 0.45);
    this.view = { k, x: Math.max(0, (W - this.size.w * k) / 2), y: Math.max(0, all ? (H - this.size.h * k) / 2 : 0) };
    this.apply();
  }

  zoom(f, cx, cy) {
    this.moved = true;
    const W = this.svg.clientWidth, H = this.svg.clientHeight;
    if (cx === undefined) { cx = W / 2; cy = H / 2; }
    const k = Math.min(3, Math.max(0.08, this.view.k * f));
    this.view.x = cx - ((cx - this.view.x) * k) / this.view.k;
    this.view.y = cy - ((cy - this.view.y) * k) / this.view.k;
    this.view.k = k;
    this.apply();
  }

  apply() {
    const v = this.view;
    this.layer.setAttribute("transform", `translate(${v.x.toFixed(1)},${v.y.toFixed(1)}) scale(${v.k.toFixed(4)})`);
  }

  // panZoom: drag to pan; the wheel pans, and zooms with Ctrl (a
  // trackpad's pinch); a wheel that cannot move the graph scrolls the page.
  panZoom() {
    let start = null;
    this.svg.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      start = { x: ev.clientX, y: ev.clientY, vx: this.view.x, vy: this.view.y, id: ev.pointerId };
      this.dragged = false;
    });
    this.svg.addEventListener("pointermove", (ev) => {
      if (!start) return;
      const dx = ev.clientX - start.x, dy = ev.clientY - start.y;
      if (!this.dragged && Math.hypot(dx, dy) < 5) return;
      if (!this.dragged) {
        this.dragged = true;
        this.svg.setPointerCapture(start.id);
        this.svg.classList.add("dragging");
      }
      this.view.x = start.vx + dx;
      this.view.y = start.vy + dy;
      this.moved = true;
      this.apply();
    });
    const end = () => {
      start = null;
      this.svg.classList.remove("dragging");
      setTimeout(() => { this.dragged = false; }, 0);
    };
    this.svg.addEventListener("pointerup", end);
    this.svg.addEventListener("pointercancel", end);
    this.svg.addEventListener("wheel", (ev) => {
      const r = this.svg.getBoundingClientRect();
      if (ev.ctrlKey || ev.metaKey) {
        ev.preventDefault();
        this.zoom(Math.exp(-ev.deltaY * 0.01), ev.clientX - r.left, ev.clientY - r.top);
        return;
      }
      const v = this.view, W = r.width, H = r.height;
      const gw = this.size.w * v.k, gh = this.size.h * v.k;
      const nx = Math.min(Math.max(v.x - ev.deltaX, Math.min(0, W - gw - 20)), 20);
      const ny = Math.min(Math.max(v.y - ev.deltaY, Math.min(0, H - gh - 20)), 20);
      if (Math.abs(nx - v.x) < 0.5 && Math.abs(ny - v.y) < 0.5) return; // the page scrolls
      ev.preventDefault();
      v.x = nx;
      v.y = ny;
      this.moved = true;
      this.apply();
    }, { passive: false });
  }
}

function isContainer(n) {
  return (n.kind === "loop" || n.kind === "map") && Array.isArray(n.body) && n.body.length > 0;
}

// edgeLabel is what an edge says beside it: its route, its condition, or
// that it is taken on failure.
function edgeLabel(e) {
  const parts = [];
  if (e.route && e.route !== "default" && !/^case \d+$/.test(e.route)) parts.push(e.route);
  else if (e.route === "default") parts.push("otherwise");
  if (e.when) parts.push("if " + e.when);
  if (e.on === "failure") parts.push("on failure");
  else if (e.on && e.on !== "success") parts.push("on " + e.on);
  return parts.join(" · ");
}

// smoothPath draws a curve through dagre's points (a B-spline, as d3's
// curveBasis).
function smoothPath(p) {
  if (p.length < 3) return `M${p[0].x},${p[0].y}` + p.slice(1).map((q) => `L${q.x},${q.y}`).join("");
  let d = `M${p[0].x},${p[0].y}L${(5 * p[0].x + p[1].x) / 6},${(5 * p[0].y + p[1].y) / 6}`;
  for (let i = 1; i < p.length - 1; i++) {
    const a = p[i - 1], b = p[i], c = p[i + 1];
    d += `C${(2 * a.x + b.x) / 3},${(2 * a.y + b.y) / 3} ${(a.x + 2 * b.x) / 3},${(a.y + 2 * b.y) / 3} ${(a.x + 4 * b.x + c.x) / 6},${(a.y + 4 * b.y + c.y) / 6}`;
  }
  const a = p[p.length - 2], b = p[p.length - 1];
  d += `C${(2 * a.x + b.x) / 3},${(2 * a.y + b.y) / 3} ${(a.x + 2 * b.x) / 3},${(a.y + 2 * b.y) / 3} ${b.x},${b.y}`;
  return d;
}
