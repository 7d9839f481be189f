// locksim's space-time diagram: one canvas, a lane per node, true time across.
// Reads the JSON of the element #locksim-data; draws only what is in view, so runs of
// 100,000 events stay responsive. Sets the root element's data-render attribute to "ok"
// once the first frame is drawn without an exception, or to "error" (and shows the
// message) when one is thrown: scripts/browser-check.sh reads it.
(function () {
  "use strict";
  var root = document.documentElement;
  var statusEl = document.getElementById("render-status");

  function fail(msg) {
    root.setAttribute("data-render", "error");
    statusEl.textContent = "error";
    var d = document.createElement("div");
    d.className = "error";
    d.textContent = "The diagram could not be drawn: " + msg;
    document.body.insertBefore(d, document.getElementById("wrap"));
  }
  window.addEventListener("error", function (ev) {
    fail(ev.message || String(ev.error));
  });

  var CLIENT_COLORS = ["#1a73e8", "#e8710a", "#0f9d9a", "#9334e6", "#188038", "#d01884",
    "#b06000", "#3f51b5", "#c5221f", "#5f6368"];
  // AXIS: the time axis; BAND: a strip under it for the violations' labels.
  var GUTTER = 110, AXIS = 34, BAND = 18, RIGHT = 18, BOTTOM = 10;
  var LANE_H = { client: 58, server: 34, resource: 46 };
  var FAULT_STYLE = {
    pause: { fill: "rgba(95,99,104,0.20)", hatch: "rgba(60,64,67,0.35)", text: "paused" },
    crash: { fill: "rgba(32,33,36,0.30)", hatch: "rgba(32,33,36,0.45)", text: "crashed (down)" },
    partition: { fill: "rgba(251,140,0,0.15)", edge: "#f29900", text: "cut off" },
    loss: { fill: "rgba(251,188,4,0.14)", edge: "#e3a600", text: "lossy link" },
    delay: { fill: "rgba(251,188,4,0.14)", edge: "#e3a600", text: "slow link" },
    duplicate: { fill: "rgba(251,188,4,0.14)", edge: "#e3a600", text: "duplicating link" },
    drop_replies: { fill: "rgba(251,188,4,0.14)", edge: "#e3a600", text: "replies lost" },
    clock_drift: { fill: "rgba(147,52,230,0.08)", edge: "#9334e6", text: "clock drifts" }
  };

  function fmtTime(ns, span) {
    var s = ns / 1e9;
    var digits = span < 2e6 ? 6 : span < 2e8 ? 4 : 3;
    return s.toFixed(digits) + "s";
  }
  function fmtDur(ns) {
    var a = Math.abs(ns), sign = ns < 0 ? "-" : "";
    if (a >= 1e9) return sign + (a / 1e9).toFixed(3) + "s";
    if (a >= 1e6) return sign + (a / 1e6).toFixed(a >= 1e8 ? 0 : 1) + "ms";
    if (a >= 1e3) return sign + (a / 1e3).toFixed(0) + "µs";
    return sign + a + "ns";
  }
  function lowerBound(arr, key, t) {
    var lo = 0, hi = arr.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (key(arr[mid]) < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function main() {
    var D = JSON.parse(document.getElementById("locksim-data").textContent);
    var canvas = document.getElementById("diagram");
    var ctx = canvas.getContext("2d");
    var tip = document.getElementById("tip");
    var showMsgs = document.getElementById("show-msgs");
    var showAttempts = document.getElementById("show-attempts");
    var end = Math.max(D.end, 1);

    // ---- lanes -------------------------------------------------------------------------
    var lanes = D.lanes.map(function (l) {
      return { node: l.node, name: l.name, role: l.role, h: LANE_H[l.role] || 40,
        holds: [], attempts: [], marks: [], faults: [], clock: null, maxHold: 0, maxAttempt: 0,
        maxFault: 0 };
    });
    var byNode = {};
    var y = AXIS + BAND;
    lanes.forEach(function (l) { l.y = y; y += l.h; byNode[l.node] = l; });
    var totalH = y + BOTTOM;
    var colorOf = {};
    lanes.filter(function (l) { return l.role === "client"; }).forEach(function (l, i) {
      colorOf[l.node] = CLIENT_COLORS[i % CLIENT_COLORS.length];
    });
    function color(node) { return colorOf[node] || "#5f6368"; }

    D.holds.forEach(function (h) {
      var l = byNode[h[0]];
      if (!l) return;
      l.holds.push(h);
      l.maxHold = Math.max(l.maxHold, h[3] - h[2]);
    });
    D.attempts.forEach(function (a) {
      var l = byNode[a[0]];
      if (!l) return;
      l.attempts.push(a);
      l.maxAttempt = Math.max(l.maxAttempt, a[3] - a[2]);
    });
    D.marks.forEach(function (m) { var l = byNode[m[0]]; if (l) l.marks.push(m); });
    var heals = [];
    D.faults.forEach(function (f) {
      if (f[0] === "heal") { heals.push(f[1]); return; }
      if (f[0] === "drift_end") return;
      var nodes = f[3].concat(f[4]);
      nodes.forEach(function (n) {
        var l = byNode[n];
        if (!l) return;
        l.faults.push(f);
        l.maxFault = Math.max(l.maxFault, f[2] - f[1]);
      });
    });
    lanes.forEach(function (l) {
      l.holds.sort(function (a, b) { return a[2] - b[2]; });
      l.attempts.sort(function (a, b) { return a[2] - b[2]; });
      l.faults.sort(function (a, b) { return a[1] - b[1]; });
    });
    D.clocks.forEach(function (c) {
      var l = byNode[c[0]];
      if (!l) return;
      var max = 0;
      c[1].forEach(function (s) { max = Math.max(max, Math.abs(s[1])); });
      l.clock = { samples: c[1], max: max };
    });
    var eventPos = {};
    D.violations.forEach(function (v) {
      v.witnesses.forEach(function (w) { eventPos[w[0]] = w; });
    });

    // ---- view --------------------------------------------------------------------------
    var W = 800, t0 = 0, t1 = end;
    function plotW() { return Math.max(50, W - GUTTER - RIGHT); }
    function X(t) { return GUTTER + (t - t0) / (t1 - t0) * plotW(); }
    function T(x) { return t0 + (x - GUTTER) / plotW() * (t1 - t0); }
    function setView(a, b) {
      var span = Math.max(b - a, 1000);
      span = Math.min(span, end * 1.5);
      var mid = (a + b) / 2;
      t0 = mid - span / 2; t1 = mid + span / 2;
      if (t0 < -end * 0.25) { t1 += -end * 0.25 - t0; t0 = -end * 0.25; }
      if (t1 > end * 1.25) { t0 -= t1 - end * 1.25; t1 = end * 1.25; }
    }

    // A repeating diagonal-line pattern: `size` px tiles, lines of `width` px in `color`.
    function diagonal(size, color, width) {
      var c = document.createElement("canvas");
      c.width = size; c.height = size;
      var g = c.getContext("2d");
      g.strokeStyle = color;
      g.lineWidth = width;
      g.beginPath();
      for (var k = -1; k <= 1; k++) { g.moveTo(k * size, size); g.lineTo(k * size + size, 0); }
      g.stroke();
      return ctx.createPattern(c, "repeat");
    }
    var hatch = diagonal(8, "rgba(197,34,31,0.85)", 2);
    var greyHatch = diagonal(6, "rgba(60,64,67,0.45)", 1);

    function visibleFrom(arr, startOf, maxLen) {
      return lowerBound(arr, startOf, t0 - maxLen - 1);
    }

    function label(text, x, yy, maxW, colorStr) {
      if (maxW < 18) return;
      ctx.fillStyle = colorStr;
      var w = ctx.measureText(text).width;
      if (w > maxW) {
        var n = Math.floor(text.length * maxW / w) - 1;
        if (n < 2) return;
        text = text.slice(0, n) + "…";
      }
      ctx.fillText(text, x, yy);
    }

    function drawAxis() {
      var span = t1 - t0;
      var target = span * 90 / plotW();
      var p = Math.pow(10, Math.floor(Math.log10(target)));
      var step = [1, 2, 5, 10].map(function (m) { return m * p; })
        .filter(function (s) { return s >= target; })[0];
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "center";
      var first = Math.ceil(t0 / step) * step;
      for (var t = first; t <= t1; t += step) {
        var x = X(t);
        ctx.strokeStyle = "#eceef2";
        ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(x + 0.5, AXIS); ctx.lineTo(x + 0.5, totalH - BOTTOM); ctx.stroke();
        ctx.strokeStyle = "#9aa0a6";
        ctx.beginPath(); ctx.moveTo(x + 0.5, AXIS - 6); ctx.lineTo(x + 0.5, AXIS); ctx.stroke();
        ctx.fillStyle = "#3c4043";
        var tl = fmtTime(t, span), tw = ctx.measureText(tl).width;
        ctx.fillText(tl, Math.max(x, GUTTER + tw / 2 + 2), AXIS - 16);
      }
      ctx.textAlign = "left";
      ctx.fillStyle = "#5b6475";
      ctx.fillText("true time →", 8, AXIS - 16);
      // The run's end.
      var xe = X(end);
      if (xe > GUTTER && xe < W - RIGHT) {
        ctx.strokeStyle = "#5f6368";
        ctx.setLineDash([2, 3]);
        ctx.beginPath(); ctx.moveTo(xe + 0.5, AXIS); ctx.lineTo(xe + 0.5, totalH - BOTTOM); ctx.stroke();
        ctx.setLineDash([]);
      }
    }

    function drawFaults(l) {
      var i = visibleFrom(l.faults, function (f) { return f[1]; }, l.maxFault);
      for (; i < l.faults.length && l.faults[i][1] <= t1; i++) {
        var f = l.faults[i];
        var x0 = X(f[1]), x1 = X(f[2]);
        if (f[0] === "clock_step") {
          ctx.strokeStyle = "#9334e6";
          ctx.lineWidth = 2;
          ctx.beginPath(); ctx.moveTo(x0, l.y + 1); ctx.lineTo(x0, l.y + l.h - 1); ctx.stroke();
          ctx.lineWidth = 1;
          ctx.font = "10px system-ui, sans-serif";
          label(f[5].replace(/^step \S+ wall clock by /, "clock step "), x0 + 3, l.y + l.h - 8, 160, "#6a1b9a");
          continue;
        }
        var st = FAULT_STYLE[f[0]];
        if (!st) continue;
        var w = Math.max(x1 - x0, 2);
        ctx.fillStyle = st.fill;
        ctx.fillRect(x0, l.y + 1, w, l.h - 2);
        if (st.hatch) {
          ctx.fillStyle = greyHatch;
          ctx.fillRect(x0, l.y + 1, w, l.h - 2);
        }
        if (st.edge) {
          ctx.fillStyle = st.edge;
          ctx.fillRect(x0, l.y + 1, w, 2);
        }
        ctx.font = "10px system-ui, sans-serif";
        if (st.hatch) continue;
        // The fault's own words: which sides a partition cuts apart, which link is lossy.
        var txt = f[0] === "clock_drift" ? f[5].replace(/^drift \S+ clocks at /, "clock drift ") : f[5];
        label(txt, Math.max(x0, GUTTER) + 3, l.y + 9, Math.min(x1, W - RIGHT) - Math.max(x0, GUTTER) - 6, "#3c4043");
      }
    }

    // Pauses and crashes hatch over what the lane shows: the node did nothing then.
    function drawStopOverlay(l) {
      var i = visibleFrom(l.faults, function (f) { return f[1]; }, l.maxFault);
      for (; i < l.faults.length && l.faults[i][1] <= t1; i++) {
        var f = l.faults[i];
        if (f[0] !== "pause" && f[0] !== "crash") continue;
        var x0 = X(f[1]), x1 = Math.max(X(f[2]), x0 + 3);
        ctx.globalAlpha = 0.55;
        ctx.fillStyle = greyHatch;
        ctx.fillRect(x0, l.y + 1, x1 - x0, l.h - 2);
        ctx.globalAlpha = 1;
        ctx.strokeStyle = "#3c4043";
        ctx.lineWidth = x1 - x0 < 6 ? 2 : 1;
        ctx.strokeRect(x0 + 0.5, l.y + 1.5, x1 - x0 - 1, l.h - 3);
        ctx.lineWidth = 1;
        ctx.font = "bold 10px system-ui, sans-serif";
        ctx.textBaseline = "middle";
        var txt = (f[0] === "pause" ? "paused " : "crashed, down ") + fmtDur(f[2] - f[1]);
        var lx = Math.max(x0, GUTTER) + 4, room = Math.min(x1, W - RIGHT) - lx - 4;
        if (room < ctx.measureText(txt).width) {
          // Too short to hold its label: name it beside.
          lx = x1 + 4;
          room = W - RIGHT - lx;
        }
        if (room > ctx.measureText(txt).width) {
          ctx.fillStyle = "rgba(255,255,255,0.85)";
          ctx.fillRect(lx - 2, l.y + 3, ctx.measureText(txt).width + 4, 12);
        }
        label(txt, lx, l.y + 9, room, "#202124");
      }
    }

    function drawClock(l) {
      var c = l.clock;
      if (!c || c.max === 0) return;
      var mid = l.y + l.h / 2, amp = l.h / 2 - 5;
      var s = c.samples;
      var i = Math.max(0, lowerBound(s, function (p) { return p[0]; }, t0) - 1);
      ctx.strokeStyle = "rgba(147,52,230,0.25)";
      ctx.beginPath(); ctx.moveTo(GUTTER, mid + 0.5); ctx.lineTo(W - RIGHT, mid + 0.5); ctx.stroke();
      ctx.strokeStyle = "#9334e6";
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      var started = false, lastY = mid;
      for (; i < s.length; i++) {
        var x = X(s[i][0]), yy = mid - s[i][1] / c.max * amp;
        if (!started) { ctx.moveTo(Math.max(x, GUTTER), yy); started = true; } else { ctx.lineTo(x, lastY); ctx.lineTo(x, yy); }
        lastY = yy;
        if (s[i][0] > t1) break;
      }
      if (started && i >= s.length) ctx.lineTo(Math.min(X(end), W - RIGHT), lastY);
      ctx.stroke();
      ctx.lineWidth = 1;
    }

    function drawClient(l) {
      var col = color(l.node);
      var span = t1 - t0;
      if (showAttempts.checked) {
        var i = visibleFrom(l.attempts, function (a) { return a[2]; }, l.maxAttempt);
        var ay = l.y + l.h - 9;
        for (; i < l.attempts.length && l.attempts[i][2] <= t1; i++) {
          var a = l.attempts[i];
          var x0 = X(a[2]), x1 = X(a[3]);
          ctx.fillStyle = a[4] === "ok" ? "rgba(95,99,104,0.45)" : a[4] === "fail" ? "rgba(217,48,37,0.55)" : "rgba(227,116,0,0.7)";
          ctx.fillRect(x0, ay, Math.max(x1 - x0, 1), 4);
        }
      }
      var hy = l.y + 9, hh = l.h - 24;
      var j = visibleFrom(l.holds, function (h) { return h[2]; }, l.maxHold);
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      for (; j < l.holds.length && l.holds[j][2] <= t1; j++) {
        var h = l.holds[j];
        var hx0 = X(h[2]), hx1 = X(h[3]);
        var w = Math.max(hx1 - hx0, 1.5);
        ctx.fillStyle = col;
        ctx.globalAlpha = 0.82;
        ctx.fillRect(hx0, hy, w, hh);
        ctx.globalAlpha = 1;
        if (h[7] !== null && h[7] < h[3]) {
          var dx = X(h[7]);
          ctx.fillStyle = "rgba(255,255,255,0.55)";
          ctx.fillRect(dx, hy, hx1 - dx, hh);
          ctx.fillStyle = hatch;
          ctx.fillRect(dx, hy, hx1 - dx, hh);
          ctx.strokeStyle = "#c5221f";
          ctx.lineWidth = 2;
          ctx.beginPath(); ctx.moveTo(dx, hy - 3); ctx.lineTo(dx, hy + hh + 3); ctx.stroke();
          ctx.lineWidth = 1;
        }
        if (w > 40) {
          var txt = "k" + h[1] + " h" + h[4] + (h[5] !== null ? " token " + h[5] : "");
          var lx = Math.max(hx0, GUTTER) + 12;
          var lend = h[7] !== null && h[7] < h[3] ? Math.min(X(h[7]), hx1) : hx1;
          label(txt, lx, hy + hh / 2, Math.min(lend, W - RIGHT) - lx - 3, "#fff");
        }
        if (h[7] !== null && h[7] < h[3]) {
          // Name the hatched part inside it, on a white box so the hatching stays readable.
          ctx.font = "bold 11px system-ui, sans-serif";
          var lt = "acting after its lease ended", lw = ctx.measureText(lt).width;
          var from = Math.max(X(h[7]), GUTTER), to = Math.min(hx1, W - RIGHT);
          if (to - from > lw + 16) {
            var mx = from + (to - from - lw) / 2;
            ctx.fillStyle = "rgba(255,255,255,0.92)";
            ctx.fillRect(mx - 4, hy + hh / 2 - 8, lw + 8, 16);
            ctx.fillStyle = "#a50e0e";
            ctx.fillText(lt, mx, hy + hh / 2);
          }
          ctx.font = "11px system-ui, sans-serif";
        }
      }
      drawMarks(l, hy, hh);
    }

    function drawMarks(l, hy, hh) {
      var m = l.marks;
      var i = lowerBound(m, function (e) { return e[1]; }, t0);
      var lastX = -1e9;
      for (; i < m.length && m[i][1] <= t1; i++) {
        var e = m[i];
        var x = X(e[1]);
        var k = e[2];
        if (x - lastX < 0.8 && k !== "rejected" && k !== "lost" && k !== "freed_other") continue;
        lastX = x;
        if (k === "write") {
          ctx.fillStyle = "#202124";
          ctx.beginPath(); ctx.moveTo(x - 4, hy - 7); ctx.lineTo(x + 4, hy - 7); ctx.lineTo(x, hy - 1); ctx.fill();
        } else if (k === "release") {
          ctx.strokeStyle = "#202124"; ctx.lineWidth = 2;
          ctx.beginPath(); ctx.moveTo(x, hy - 2); ctx.lineTo(x, hy + hh + 2); ctx.stroke(); ctx.lineWidth = 1;
        } else if (k === "lost") {
          cross(x, hy + hh / 2, 4, "#c5221f");
        } else if (k === "extend") {
          ctx.strokeStyle = "#fff"; ctx.beginPath(); ctx.arc(x, hy + hh / 2, 3, 0, 6.3); ctx.stroke();
        } else if (k === "grant") {
          var col = color(e[5]);
          var ttlW = X(e[1] + D.ttl) - x;
          ctx.fillStyle = col;
          ctx.globalAlpha = 0.22;
          ctx.fillRect(x, l.y + l.h / 2 - 5, Math.max(ttlW, 1), 10);
          ctx.globalAlpha = 1;
          ctx.fillRect(x - 1, l.y + 5, 3, l.h - 10);
        } else if (k === "accepted") {
          ctx.fillStyle = color(e[5]);
          ctx.strokeStyle = "#0b5d1e";
          ctx.lineWidth = 1.5;
          ctx.beginPath(); ctx.arc(x, l.y + l.h / 2, 5, 0, 6.3); ctx.fill(); ctx.stroke();
          ctx.lineWidth = 1;
        } else if (k === "rejected" || k === "freed_other") {
          cross(x, l.y + l.h / 2, 6, "#c5221f");
        } else if (k === "freed") {
          ctx.strokeStyle = color(e[5]); ctx.lineWidth = 2;
          ctx.beginPath(); ctx.moveTo(x, l.y + 5); ctx.lineTo(x, l.y + l.h - 5); ctx.stroke(); ctx.lineWidth = 1;
        }
      }
    }

    function cross(x, yy, r, col) {
      ctx.strokeStyle = col; ctx.lineWidth = 2.5;
      ctx.beginPath(); ctx.moveTo(x - r, yy - r); ctx.lineTo(x + r, yy + r);
      ctx.moveTo(x + r, yy - r); ctx.lineTo(x - r, yy + r); ctx.stroke(); ctx.lineWidth = 1;
    }

    function drawMessages() {
      var m = D.msgs;
      if (!m.length) return;
      var i = lowerBound(m, function (e) { return e[2]; }, t0 - 5e8);
      var n = 0;
      ctx.lineWidth = 1;
      for (; i < m.length && m[i][2] <= t1; i++) {
        var e = m[i];
        var a = byNode[e[0]], b = byNode[e[1]];
        if (!a || !b) continue;
        var ya = a.y + a.h / 2, yb = b.y + b.h / 2;
        var x0 = X(e[2]);
        var reply = (e[4] & 1) === 1, dropped = (e[4] & 2) === 2;
        if (e[3] !== null) {
          var x1 = X(e[3]);
          if (x1 < GUTTER) continue;
          ctx.strokeStyle = reply ? "rgba(24,128,56,0.45)" : "rgba(26,115,232,0.45)";
          ctx.beginPath(); ctx.moveTo(x0, ya); ctx.lineTo(x1, yb); ctx.stroke();
        } else {
          var xm = x0 + 10, ym = ya + (yb - ya) * 0.3;
          ctx.strokeStyle = dropped ? "rgba(197,34,31,0.7)" : "rgba(95,99,104,0.6)";
          ctx.setLineDash(dropped ? [] : [3, 3]);
          ctx.beginPath(); ctx.moveTo(x0, ya); ctx.lineTo(xm, ym); ctx.stroke();
          ctx.setLineDash([]);
          if (dropped) cross(xm, ym, 2.5, "rgba(197,34,31,0.8)");
        }
        n++;
      }
      return n;
    }

    function drawViolations() {
      D.violations.forEach(function (v, idx) {
        if (v.window) {
          var x0 = X(v.window[0]), x1 = X(v.window[1]);
          if (x1 >= GUTTER && x0 <= W - RIGHT) {
            ctx.fillStyle = "rgba(217,48,37,0.13)";
            ctx.fillRect(x0, AXIS, Math.max(x1 - x0, 2), totalH - BOTTOM - AXIS);
            ctx.strokeStyle = "#d93025";
            ctx.lineWidth = 1.5;
            ctx.setLineDash([5, 3]);
            ctx.strokeRect(x0, AXIS + 1, Math.max(x1 - x0, 2), totalH - BOTTOM - AXIS - 2);
            ctx.setLineDash([]);
            ctx.lineWidth = 1;
            ctx.font = "bold 11px system-ui, sans-serif";
            ctx.fillStyle = "#a50e0e";
            var span = fmtDur(v.window[1] - v.window[0]);
            var txt = {
              S1: "S1 double grant: both held k" + v.key + " for " + span,
              L1: "L1 nobody got k" + v.key + " for " + span + " after its holder stopped",
              L2: "L2 a healthy renewing holder lost k" + v.key + " after " + span,
              L3: "L3 k" + v.key + " orphaned for " + span
            }[v.kind] || (v.kind + " on k" + v.key + " for " + span);
            var tx = Math.max(x0, GUTTER) + 4;
            ctx.textBaseline = "middle";
            if (idx === 0 || x1 - x0 > ctx.measureText(txt).width) ctx.fillText(txt, tx, AXIS + BAND / 2);
          }
        }
        v.witnesses.forEach(function (w) {
          var l = byNode[w[1]];
          if (!l) return;
          var x = X(w[2]);
          if (x < GUTTER - 5 || x > W - RIGHT + 5) return;
          ctx.strokeStyle = "#d93025";
          ctx.lineWidth = 2;
          var stale = v.stale === w[0];
          ctx.beginPath(); ctx.arc(x, l.y + l.h / 2, stale ? 11 : 8, 0, 6.3); ctx.stroke();
          ctx.lineWidth = 1;
          if (stale) {
            ctx.font = "bold 11px system-ui, sans-serif";
            ctx.fillStyle = "#a50e0e";
            ctx.fillText("S2 stale write", x + 14, l.y + l.h / 2 - 10);
          }
        });
      });
      heals.forEach(function (t) {
        var x = X(t);
        if (x < GUTTER || x > W - RIGHT) return;
        ctx.strokeStyle = "#188038";
        ctx.setLineDash([4, 4]);
        ctx.beginPath(); ctx.moveTo(x, AXIS); ctx.lineTo(x, totalH - BOTTOM); ctx.stroke();
        ctx.setLineDash([]);
      });
    }

    function drawGutter() {
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, AXIS, GUTTER, totalH - AXIS);
      ctx.fillRect(W - RIGHT, AXIS, RIGHT, totalH - AXIS);
      ctx.fillStyle = "#5b6475";
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      if (D.violations.length) ctx.fillText("violations", 10, AXIS + BAND / 2);
      lanes.forEach(function (l) {
        ctx.fillStyle = l.role === "client" ? color(l.node) : "#3c4043";
        ctx.font = "bold 13px system-ui, sans-serif";
        ctx.textBaseline = "middle";
        ctx.fillText(l.name, 10, l.y + 13);
        ctx.font = "10px system-ui, sans-serif";
        ctx.fillStyle = "#5b6475";
        var role = l.role === "client" ? "client" : l.role === "server" ? "lock server" : "resource";
        ctx.fillText(role, 10 + ctx.measureText(l.name).width * 1.3 + 6, l.y + 13);
        if (l.clock && l.clock.max > 0) {
          ctx.fillStyle = "#7b1fa2";
          ctx.fillText("clock ±" + fmtDur(l.clock.max), 10, l.y + 27);
        }
        ctx.strokeStyle = "#e3e6ea";
        ctx.beginPath(); ctx.moveTo(0, l.y + l.h + 0.5); ctx.lineTo(W, l.y + l.h + 0.5); ctx.stroke();
      });
    }

    var frameMsgs = 0;
    function draw() {
      W = canvas.clientWidth || 800;
      var dpr = window.devicePixelRatio || 1;
      if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(totalH * dpr)) {
        canvas.width = Math.round(W * dpr);
        canvas.height = Math.round(totalH * dpr);
        canvas.style.height = totalH + "px";
      }
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, totalH);
      lanes.forEach(function (l, i) {
        ctx.fillStyle = i % 2 ? "#fbfbfc" : "#ffffff";
        if (l.role !== "client") ctx.fillStyle = i % 2 ? "#f6f7f9" : "#f3f4f6";
        ctx.fillRect(0, l.y, W, l.h);
      });
      ctx.save();
      ctx.beginPath(); ctx.rect(GUTTER, 0, W - GUTTER - RIGHT, totalH); ctx.clip();
      drawAxis();
      lanes.forEach(drawFaults);
      lanes.forEach(drawClock);
      ctx.textBaseline = "middle";
      lanes.forEach(function (l) {
        if (l.role === "client") drawClient(l); else drawMarks(l, l.y + 8, l.h - 16);
      });
      lanes.forEach(drawStopOverlay);
      frameMsgs = showMsgs.checked ? drawMessages() || 0 : 0;
      drawViolations();
      ctx.restore();
      drawGutter();
    }

    var pending = false;
    function redraw() {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () { pending = false; draw(); });
    }

    // ---- interaction -------------------------------------------------------------------
    canvas.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var rect = canvas.getBoundingClientRect();
      var x = ev.clientX - rect.left;
      var tm = T(Math.max(GUTTER, x));
      var f = Math.exp(Math.max(-1, Math.min(1, ev.deltaY * 0.0015)));
      setView(tm - (tm - t0) * f, tm + (t1 - tm) * f);
      redraw();
    }, { passive: false });
    var drag = null;
    canvas.addEventListener("mousedown", function (ev) {
      drag = { x: ev.clientX, t0: t0, t1: t1 };
      canvas.classList.add("dragging");
    });
    window.addEventListener("mouseup", function () { drag = null; canvas.classList.remove("dragging"); });
    window.addEventListener("mousemove", function (ev) {
      if (drag) {
        var dt = (ev.clientX - drag.x) / plotW() * (drag.t1 - drag.t0);
        setView(drag.t0 - dt, drag.t1 - dt);
        tip.hidden = true;
        redraw();
      }
    });
    canvas.addEventListener("mousemove", function (ev) {
      if (drag) return;
      var rect = canvas.getBoundingClientRect();
      var x = ev.clientX - rect.left, yy = ev.clientY - rect.top;
      var text = hit(x, yy);
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text;
      tip.hidden = false;
      tip.style.left = Math.min(x + 14, W - 300) + "px";
      tip.style.top = (yy + 14) + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    canvas.addEventListener("dblclick", function () { setView(0, end); redraw(); });
    document.getElementById("fit").addEventListener("click", function () { setView(0, end); redraw(); });
    showMsgs.addEventListener("change", redraw);
    showAttempts.addEventListener("change", redraw);
    window.addEventListener("resize", redraw);
    Array.prototype.forEach.call(document.querySelectorAll("button.focus"), function (b) {
      b.addEventListener("click", function () {
        var v = D.violations[+b.getAttribute("data-violation")];
        setView(v.focus[0], v.focus[1]);
        redraw();
        canvas.scrollIntoView({ block: "nearest" });
      });
    });

    function hit(x, yy) {
      if (x < GUTTER) return null;
      var l = null;
      lanes.forEach(function (c) { if (yy >= c.y && yy < c.y + c.h) l = c; });
      if (!l) return null;
      var t = T(x), tol = 5 * (t1 - t0) / plotW();
      var span = t1 - t0;
      var lines = [];
      var i = lowerBound(l.marks, function (e) { return e[1]; }, t - tol);
      for (var n = 0; i < l.marks.length && l.marks[i][1] <= t + tol && n < 4; i++, n++) {
        lines.push(fmtTime(l.marks[i][1], span) + "  " + l.name + " " + l.marks[i][3] + "  (#" + l.marks[i][4] + ")");
      }
      var j = visibleFrom(l.holds, function (h) { return h[2]; }, l.maxHold);
      for (; j < l.holds.length && l.holds[j][2] <= t; j++) {
        var h = l.holds[j];
        if (h[3] < t) continue;
        var s = l.name + " holds k" + h[1] + " (handle " + h[4] + (h[5] !== null ? ", token " + h[5] : "") + ")\n" +
          "from " + fmtTime(h[2], span) + " to " + fmtTime(h[3], span) + " (" + fmtDur(h[3] - h[2]) + "); ended: " + h[6];
        if (h[7] !== null) s += "\nits lease, by its own clock, ended at " + fmtTime(h[7], span);
        lines.push(s);
      }
      var k = visibleFrom(l.faults, function (f) { return f[1]; }, l.maxFault);
      for (; k < l.faults.length && l.faults[k][1] <= t + tol; k++) {
        var f = l.faults[k];
        if (f[2] + tol < t) continue;
        lines.push("fault at " + fmtTime(f[1], span) + ": " + f[5]);
      }
      if (l.clock && l.clock.max > 0) {
        var sm = l.clock.samples, q = lowerBound(sm, function (p) { return p[0]; }, t + 1) - 1;
        if (q >= 0) lines.push(l.name + "'s wall clock is " + (sm[q][1] >= 0 ? "+" : "") + fmtDur(sm[q][1]) + " off true time");
      }
      if (showAttempts.checked) {
        var a = visibleFrom(l.attempts, function (e) { return e[2]; }, l.maxAttempt);
        for (; a < l.attempts.length && l.attempts[a][2] <= t; a++) {
          var at = l.attempts[a];
          if (at[3] >= t && yy > l.y + l.h - 14) {
            lines.push("acquire k" + at[1] + " from " + fmtTime(at[2], span) + ", " + fmtDur(at[3] - at[2]) + ": " + at[4]);
          }
        }
      }
      return lines.length ? lines.join("\n") : null;
    }

    function selftest() {
      var rect = canvas.getBoundingClientRect();
      var at = function (x, yy) { return { clientX: rect.left + x, clientY: rect.top + yy, bubbles: true, cancelable: true }; };
      var span = t1 - t0;
      canvas.dispatchEvent(new WheelEvent("wheel", Object.assign({ deltaY: -400 }, at(W / 2, AXIS + BAND + 10))));
      if (!(t1 - t0 < span)) throw new Error("the wheel did not zoom in");
      var before = t0;
      canvas.dispatchEvent(new MouseEvent("mousedown", at(W / 2, AXIS + BAND + 10)));
      window.dispatchEvent(new MouseEvent("mousemove", at(W / 2 - 100, AXIS + BAND + 10)));
      window.dispatchEvent(new MouseEvent("mouseup", at(W / 2 - 100, AXIS + BAND + 10)));
      if (!(t0 > before)) throw new Error("dragging did not pan");
      var h = D.holds[0];
      if (h) {
        setView(h[2] - 1e6, h[3] + 1e6);
        draw();
        var l = byNode[h[0]];
        canvas.dispatchEvent(new MouseEvent("mousemove", at(X((h[2] + h[3]) / 2), l.y + l.h / 2)));
        if (tip.hidden || tip.textContent.indexOf(" holds k" + h[1]) < 0) {
          throw new Error("no tooltip over a hold: " + tip.textContent);
        }
      }
      var b = document.querySelector("button.focus");
      if (b) {
        b.click();
        var v = D.violations[0];
        if (Math.abs((t0 + t1) / 2 - (v.focus[0] + v.focus[1]) / 2) > (t1 - t0)) {
          throw new Error("the show button did not move the view to the violation");
        }
      }
      draw();
    }

    // ---- legend and metrics ------------------------------------------------------------
    var legend = document.getElementById("legend");
    var clientLanes = lanes.filter(function (l) { return l.role === "client"; });
    var items = clientLanes.slice(0, 6).map(function (l) {
      return ["background:" + color(l.node), l.name + " holds the lock"];
    }).concat([
      ["background:repeating-linear-gradient(135deg,#c5221f 0 2px,#fff 2px 5px)", "held after its lease ended"],
      ["background:rgba(95,99,104,.5);height:4px", "acquire attempt (red: failed, orange: unknown)"],
      ["background:none;border-top:7px solid #202124;border-left:5px solid transparent;border-right:5px solid transparent;width:0;height:0", "write sent"],
      ["background:#202124;width:3px", "release"],
      ["background:rgba(26,115,232,.25);border-left:3px solid #1a73e8", "server grant and its TTL"],
      ["background:#1a73e8;border-radius:50%;width:11px;border:1.5px solid #0b5d1e", "write accepted by the resource"],
      ["background:linear-gradient(45deg,transparent 42%,#c5221f 42% 58%,transparent 58%)", "write rejected / gave up"],
      ["background:repeating-linear-gradient(135deg,rgba(95,99,104,.45) 0 1px,rgba(95,99,104,.2) 1px 5px)", "paused / crashed"],
      ["background:rgba(251,140,0,.25);border-top:2px solid #f29900", "partitioned"],
      ["background:rgba(251,188,4,.25);border-top:2px solid #e3a600", "lossy, slow or duplicating link"],
      ["background:none;border-top:2px solid #9334e6;height:0", "clock offset from true time"],
      ["background:rgba(217,48,37,.18);border:1.5px dashed #d93025", "violation"],
      ["background:linear-gradient(160deg,transparent 45%,#1a73e8 45% 55%,transparent 55%)", "message (blue request, green reply, red ✕ dropped; toggle above)"]
    ]);
    legend.innerHTML = "";
    items.forEach(function (it) {
      var s = document.createElement("span");
      var sw = document.createElement("span");
      sw.className = "sw";
      sw.setAttribute("style", it[0]);
      s.appendChild(sw);
      s.appendChild(document.createTextNode(it[1]));
      legend.appendChild(s);
    });
    var mt = document.getElementById("metrics");
    var table = document.createElement("table");
    D.metrics.forEach(function (m) {
      var tr = document.createElement("tr");
      [m[0], m[1]].forEach(function (c) {
        var td = document.createElement("td");
        td.textContent = c;
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    var h2 = document.createElement("b");
    h2.textContent = "Lock metrics of this run";
    mt.appendChild(h2);
    mt.appendChild(table);

    // "#messages" in the address turns the messages on (a link can ask for them).
    if (/messages/.test(window.location.hash)) showMsgs.checked = true;
    if (D.violations.length) setView(D.violations[0].focus[0], D.violations[0].focus[1]);
    else setView(0, end);
    draw();
    root.setAttribute("data-render", "ok");
    // "#selftest" in the address: drive the diagram with synthetic input (wheel, drag, hover,
    // a violation's "show" button) and mark the root data-selftest="ok" or "fail: why".
    if (/selftest/.test(window.location.hash)) {
      try {
        selftest();
        root.setAttribute("data-selftest", "ok");
      } catch (e) {
        root.setAttribute("data-selftest", "fail: " + (e && e.message ? e.message : String(e)));
      }
    }
    statusEl.textContent = D.events + " events, " + D.holds.length + " holds, " + D.msgs.length + " messages" +
      (D.msgs.length ? "" : " (none recorded)") + "; drawn " + Math.round(performance.now()) +
      " ms after the page began loading";
  }

  try {
    main();
  } catch (e) {
    fail(e && e.message ? e.message : String(e));
    throw e;
  }
})();
