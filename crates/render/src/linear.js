// locksim's linearization explainer: for each failing part, one SVG with a lane per client,
// each operation a bar from its call to its answer, and a walk through the longest
// linearizable prefix (arrow keys, the step buttons, or a click on a bar or a step).
// window.locksimLinear.render(items) draws into the sections section.lin[data-item=i];
// window.locksimLinear.selftest() drives them with synthetic input and throws on a fault.
(function () {
  "use strict";
  // The SVG namespace, from the HTML parser (so the page holds no address at all).
  var probe = document.createElement("div");
  probe.innerHTML = "<svg></svg>";
  var SVGNS = probe.firstChild.namespaceURI;
  var COLORS = ["#1a73e8", "#e8710a", "#0f9d9a", "#9334e6", "#188038", "#d01884",
    "#b06000", "#3f51b5", "#c5221f", "#5f6368"];
  var GUTTER = 96, RIGHT = 16, TOP = 28, LANE = 30, BAR = 16;
  var views = [];
  var active = 0;

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(t, unit) {
    if (unit === "line") return "line " + t;
    var s = t / 1e9;
    return s.toFixed(s < 10 ? 3 : 2) + "s";
  }

  function View(section, x) {
    var self = this;
    this.x = x;
    this.section = section;
    this.step = x.prefix.length;
    var pos = {};
    x.prefix.forEach(function (p, i) { pos[p.id] = i + 1; });
    var stuck = {};
    x.stuck.forEach(function (s) { stuck[s.id] = s.reason; });
    this.pos = pos;
    this.stuckIds = stuck;
    var procs = [];
    x.ops.forEach(function (o) { if (procs.indexOf(o.process) < 0) procs.push(o.process); });
    var lo = Infinity, hi = -Infinity;
    x.ops.forEach(function (o) {
      lo = Math.min(lo, o.call);
      hi = Math.max(hi, o.ret === null ? o.call : o.ret);
    });
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    var span = Math.max(hi - lo, 1);
    var end = hi + span * 0.06;
    var W = Math.max(600, (section.clientWidth || 1000) - 40);
    var H = TOP + procs.length * LANE + 12;
    var svg = el("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
    svg.setAttribute("aria-label", "operations of " + x.title + " on a time axis");
    function X(t) { return GUTTER + (t - lo) / (end - lo) * (W - GUTTER - RIGHT); }
    // Axis.
    var ticks = 6;
    for (var k = 0; k <= ticks; k++) {
      var t = lo + (hi - lo) * k / ticks;
      var tx = X(t);
      el("line", { x1: tx, y1: TOP - 6, x2: tx, y2: H - 8, stroke: "#eceef2" }, svg);
      var lab = el("text", { x: tx, y: TOP - 10, "font-size": 11, "text-anchor": "middle", fill: "#3c4043" }, svg);
      lab.textContent = fmt(Math.round(t), x.unit);
    }
    procs.forEach(function (p, i) {
      var y = TOP + i * LANE;
      el("rect", { x: 0, y: y, width: W, height: LANE, fill: i % 2 ? "#fbfbfc" : "#fff" }, svg).setAttribute("class", "lane");
      var name = el("text", { x: 8, y: y + LANE / 2 + 4, "font-size": 12, "font-weight": "bold", fill: COLORS[i % COLORS.length] }, svg);
      name.textContent = p;
    });
    this.bars = {};
    this.strokes = {};
    x.ops.forEach(function (o) {
      var i = procs.indexOf(o.process);
      var y = TOP + i * LANE + (LANE - BAR) / 2;
      var x0 = X(o.call), x1 = o.ret === null ? X(end) : Math.max(X(o.ret), x0 + 3);
      var g = el("g", { "class": "op", "data-id": o.id }, svg);
      var col = COLORS[i % COLORS.length];
      var attrs = { x: x0, y: y, width: x1 - x0, height: BAR, rx: 2 };
      if (o.outcome === "fail") {
        attrs.fill = "#e8eaed";
        attrs.stroke = "#5f6368";
      } else if (o.outcome === "info") {
        attrs.fill = col;
        attrs["fill-opacity"] = 0.18;
        attrs.stroke = col;
        attrs["stroke-dasharray"] = "4 3";
      } else {
        attrs.fill = col;
        attrs["fill-opacity"] = 0.75;
        attrs.stroke = col;
      }
      var r = el("rect", attrs, g);
      if (o.outcome === "fail") {
        // Hatched: diagonal strokes across the bar.
        for (var hx = x0 - BAR; hx < x1; hx += 5) {
          var a = Math.max(hx, x0), b = Math.min(hx + BAR, x1);
          if (b <= a) continue;
          el("line", { x1: a, y1: y + BAR - (a - hx), x2: b, y2: y + BAR - (b - hx), stroke: "#80868b", "stroke-width": 1.2 }, g);
        }
      }
      if (o.id in stuck) {
        el("rect", { x: x0 - 2, y: y - 2, width: x1 - x0 + 4, height: BAR + 4, rx: 3, fill: "none", stroke: "#d93025", "stroke-width": 2.5, "class": "stuck-mark" }, g);
      }
      var label = o.id in pos ? String(pos[o.id]) : o.id in stuck ? "✕" : "";
      if (label) {
        var tl = el("text", { x: x0 + 3, y: y + BAR - 4, "font-size": 11, fill: o.id in stuck ? "#a50e0e" : "#fff", "font-weight": "bold" }, g);
        tl.textContent = label;
      }
      var tip = el("title", {}, g);
      tip.textContent = o.text + "\n" + fmt(o.call, x.unit) + " – " + (o.ret === null ? "never answered" : fmt(o.ret, x.unit)) +
        (o.id in pos ? "\nstep " + pos[o.id] + " of the prefix" : "") +
        (o.id in stuck ? "\ncannot go next: " + stuck[o.id] : "") +
        (o.checked ? "" : "\n(drawn for context, not checked)");
      g.addEventListener("click", function () {
        active = views.indexOf(self);
        if (o.id in pos) self.go(pos[o.id]);
        else if (o.id in stuck) self.go(x.prefix.length);
      });
      self.bars[o.id] = r;
      self.strokes[o.id] = attrs.stroke;
    });
    this.svg = svg;
    section.querySelector(".lin-chart").appendChild(svg);
    this.rows = section.querySelectorAll("li.step");
    Array.prototype.forEach.call(this.rows, function (li) {
      li.addEventListener("click", function () {
        active = views.indexOf(self);
        self.go(+li.getAttribute("data-step"));
      });
    });
    section.querySelector("button.prev").addEventListener("click", function () { active = views.indexOf(self); self.go(self.step - 1); });
    section.querySelector("button.next").addEventListener("click", function () { active = views.indexOf(self); self.go(self.step + 1); });
    this.go(this.step);
  }

  View.prototype.go = function (s) {
    var x = this.x;
    s = Math.max(0, Math.min(x.prefix.length, s));
    this.step = s;
    var self = this;
    x.prefix.forEach(function (p, i) {
      var r = self.bars[p.id];
      if (!r) return;
      r.setAttribute("fill-opacity", i < s ? 0.85 : 0.25);
      r.setAttribute("stroke-width", i === s - 1 ? 3 : 1);
      r.setAttribute("stroke", i === s - 1 ? "#202124" : self.strokes[p.id]);
    });
    Array.prototype.forEach.call(this.rows, function (li) {
      var k = +li.getAttribute("data-step");
      li.className = "step " + (k === s ? "current" : k < s ? "done" : "later");
    });
    var info = this.section.querySelector(".stepinfo");
    if (s === 0) info.textContent = "step 0 of " + x.prefix.length + ": " +
      (x.prefix_skipped ? "state after the first " + x.prefix_skipped + " steps (not listed) " : "initial state ") + x.initial;
    else info.textContent = "step " + s + " of " + x.prefix.length + " — state: " + x.prefix[s - 1].state +
      (s === x.prefix.length ? " — and then none of the ✕ operations can take effect" : "");
  };

  document.addEventListener("keydown", function (ev) {
    var v = views[active];
    if (!v) return;
    var d = { ArrowRight: 1, ArrowLeft: -1 }[ev.key];
    if (d) { v.go(v.step + d); ev.preventDefault(); }
    else if (ev.key === "Home") { v.go(0); ev.preventDefault(); }
    else if (ev.key === "End") { v.go(v.x.prefix.length); ev.preventDefault(); }
  });

  function render(items) {
    views = [];
    items.forEach(function (x, i) {
      var s = document.querySelector('section.lin[data-item="' + i + '"]');
      if (!s) throw new Error("no section for failing part " + i);
      views.push(new View(s, x));
    });
  }

  function selftest() {
    views.forEach(function (v, i) {
      var x = v.x;
      active = i;
      var why = v.section.querySelector(".why");
      if (!why || why.offsetHeight === 0) throw new Error("the reasons are not visible");
      if (v.section.querySelectorAll(".why li").length !== x.stuck.length) throw new Error("a stuck operation has no reason listed");
      if (v.svg.querySelectorAll(".stuck-mark").length < x.stuck.filter(function (s) { return x.ops.some(function (o) { return o.id === s.id; }); }).length) {
        throw new Error("a stuck operation is not marked in the chart");
      }
      v.go(0);
      document.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
      if (x.prefix.length > 0 && v.step !== 1) throw new Error("the right arrow did not step forward");
      document.dispatchEvent(new KeyboardEvent("keydown", { key: "End", bubbles: true }));
      if (v.step !== x.prefix.length) throw new Error("End did not go to the last step");
      if (x.prefix.length > 0) {
        var first = v.svg.querySelector('g.op[data-id="' + x.prefix[0].id + '"]');
        first.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        if (v.step !== 1) throw new Error("a click on the first step's bar did not go to it");
        if (v.section.querySelector("li.step.current").getAttribute("data-step") !== "1") throw new Error("the current step is not highlighted");
      }
      v.go(x.prefix.length);
    });
    active = 0;
  }

  window.locksimLinear = { render: render, selftest: selftest };
})();
