// qkvcalc's interactive page: point at a cell to light the cells it was computed from and read
// its arithmetic; presenter mode (p; the prose folded under w); the weights of each head as a
// picture; two languages.
// Everything it shows comes from the page itself: the cells' data-* attributes (written from
// the trace by qkvcalc/render/page.py) and the JSON block #qkv-data. Text goes in as text
// (textContent), never as markup; nothing is evaluated.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("qkv-data").textContent);
  var roots = Array.prototype.slice.call(document.querySelectorAll(".qkvcalc[data-page]"));
  var state = { root: roots[0], present: false, slide: 0, typed: "", lit: [], on: null };

  function ui(key, root) {
    var lang = (root || state.root).getAttribute("lang");
    return (data.ui[lang] || data.ui[data.langs[0]])[key] || "";
  }
  function fill(text, values) {
    return text.replace(/\{(\w+)\}/g, function (all, name) {
      return name in values ? String(values[name]) : all;
    });
  }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  // ---- pointing at a cell -------------------------------------------------------------------
  var panel = el("div", { "class": "qkv-arith", role: "status", "aria-live": "polite" });
  panel.hidden = true;
  document.body.appendChild(panel);

  function expand(list) {  // "1-3,6" -> [1, 2, 3, 6]
    var out = [];
    list.split(",").forEach(function (part) {
      var ends = part.split("-").map(Number);
      for (var v = ends[0]; v <= ends[ends.length - 1]; v++) out.push(v);
    });
    return out;
  }
  function sources(cell) {
    var prefix = state.root.getAttribute("data-page");
    var found = [];
    (cell.getAttribute("data-from") || "").split(" ").forEach(function (group) {
      if (!group) return;
      var parts = group.split(":");
      expand(parts[1]).forEach(function (i) {
        expand(parts[2]).forEach(function (j) {
          var node = document.getElementById(prefix + "c" + parts[0] + "-" + i + "-" + j);
          if (node) found.push(node);
        });
      });
    });
    return found;
  }
  function clear() {
    state.lit.forEach(function (node) { node.classList.remove("qkv-from"); });
    if (state.on) state.on.classList.remove("qkv-on");
    state.lit = [];
    state.on = null;
  }
  function title(cell) {
    var section = cell.closest("section");
    var name = section ? section.getAttribute("data-name") || "" : "";
    var where = section ? section.getAttribute("data-place") || "" : "";
    var head = name + "[" + cell.getAttribute("data-cell") + "] = " + cell.textContent;
    return where ? head + "   (" + where + ")" : head;
  }
  function show(lines, near) {
    // the note goes in the page's flow, right under the table (or picture) pointed at: it
    // pushes the notes under the table down instead of hiding them; the page scrolls by what
    // moving it changed above, so that the cell stays under the pointer
    panel.textContent = lines.filter(Boolean).join("\n");
    var block = near.closest(".scroll") || near;
    var before = near.getBoundingClientRect().top;
    if (panel.previousSibling !== block) block.parentNode.insertBefore(panel, block.nextSibling);
    panel.hidden = false;
    var moved = near.getBoundingClientRect().top - before;
    if (moved) window.scrollBy(0, moved);
  }
  function point(cell) {
    clear();
    state.on = cell;
    cell.classList.add("qkv-on");
    state.lit = sources(cell);
    state.lit.forEach(function (node) { node.classList.add("qkv-from"); });
    var arith = cell.getAttribute("data-arith");
    var why = cell.getAttribute("data-why");
    show([title(cell), arith || ui("why_" + why)], cell);
  }
  function cellOf(target) {
    return target && target.closest ? target.closest("td[data-cell]") : null;
  }
  document.addEventListener("mouseover", function (event) {
    var cell = cellOf(event.target);
    if (cell && cell !== state.on) point(cell);
  });
  document.addEventListener("focusin", function (event) {
    var cell = cellOf(event.target);
    if (cell) point(cell);
  });
  document.addEventListener("click", function (event) {  // a tap on a touch screen
    var cell = cellOf(event.target);
    if (cell) cell.focus();
  });

  // keyboard: Tab reaches one cell of each table, the arrows move inside it
  roots.forEach(function (root) {
    root.querySelectorAll("table").forEach(function (table) {
      var cells = table.querySelectorAll("td[data-cell]");
      cells.forEach(function (cell, k) { cell.tabIndex = k === 0 ? 0 : -1; });
    });
  });
  function move(cell, key) {
    var row = cell.parentElement;
    var target = null;
    if (key === "ArrowLeft" || key === "ArrowRight") {
      var step = key === "ArrowLeft" ? "previousElementSibling" : "nextElementSibling";
      target = cell[step];
      while (target && !target.hasAttribute("data-cell")) target = target[step];
    } else {
      var rows = Array.prototype.slice.call(row.parentElement.children);
      var at = rows.indexOf(row);
      var by = key === "ArrowUp" ? -1 : 1;
      for (var r = at + by; r >= 0 && r < rows.length && !target; r += by) {
        var candidate = rows[r].children[cell.cellIndex];
        if (candidate && candidate.hasAttribute("data-cell")) target = candidate;
      }
    }
    if (!target) return;
    cell.tabIndex = -1;
    target.tabIndex = 0;
    target.focus();
  }

  // ---- presenter mode -----------------------------------------------------------------------
  function slides() {
    return Array.prototype.slice.call(state.root.querySelectorAll(":scope > section"));
  }
  function writeFragment() {
    var parts = [];
    if (state.present) parts.push("present=" + (state.slide + 1));
    if (data.langs.length > 1) parts.push("lang=" + state.root.getAttribute("lang"));
    if (!parts.length && !/^#(present|lang)=/.test(location.hash)) return;  // a link's own
    var hash = parts.length ? "#" + parts.join("&") : location.pathname + location.search;
    history.replaceState(null, "", hash);
  }
  function group(section) {  // a decode step's or a block of keys' stages go together
    var step = section.getAttribute("data-step"), block = section.getAttribute("data-block");
    return step !== null ? "step " + step : block !== null ? "block " + block : null;
  }
  function jump(by) {  // the first stage of the next (by = 1) or this/previous (-1) step or block
    var all = slides();
    var here = group(all[state.slide]);
    var k = state.slide;
    if (by > 0) {
      while (k < all.length - 1 && (group(all[k]) === here || group(all[k]) === null)) k++;
      if (group(all[k]) === null || group(all[k]) === here) return;
    } else {
      var first = k;
      if (here !== null) while (first > 0 && group(all[first - 1]) === here) first--;
      if (first === k) {  // already at its first stage: the previous step's first
        first = k - 1;
        while (first >= 0 && group(all[first]) === null) first--;
        if (first < 0) return;
        var previous = group(all[first]);
        while (first > 0 && group(all[first - 1]) === previous) first--;
      }
      k = first;
    }
    go(k);
  }
  function go(index) {
    var all = slides();
    state.slide = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (section, k) {
      section.classList.toggle("qkv-current", k === state.slide);
      section.classList.remove("qkv-open");
    });
    clear();
    panel.hidden = true;
    whyButton(all[state.slide]);
    writeFragment();
    window.scrollTo(0, 0);
    fit();
  }
  // A screen shows the stage's table and its arithmetic; the prose (the why and the notes) is
  // folded under one button (or w), in place, and the screen's type is made smaller until the
  // table and the arithmetic fit the window (a projector's 1280×720 included).
  var PROSE = ":scope > .why, :scope > ul.notes";
  function whyButton(section) {
    if (!section || !section.querySelector(PROSE)) return;
    var button = section.querySelector(":scope > .qkv-why");
    if (!button) {
      button = el("button", { type: "button", "class": "qkv-why" });
      button.addEventListener("click", function () { toggleWhy(); });
      section.insertBefore(button, section.querySelector(PROSE));
    }
    var open = section.classList.contains("qkv-open");
    button.textContent = ui(open ? "why_close" : "why_open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function toggleWhy() {
    var section = slides()[state.slide];
    if (!state.present || !section || !section.querySelector(PROSE)) return;
    section.classList.toggle("qkv-open");
    whyButton(section);
  }
  function columns(work, room) {  // the arithmetic's lines in as many columns as fit beside
    work.style.columnCount = "";
    work.style.width = "max-content";
    var box = work.getBoundingClientRect().width, style = getComputedStyle(work);
    work.style.width = "";
    var pad = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    var gap = parseFloat(style.columnGap) || parseFloat(style.fontSize);
    var lines = work.textContent.split("\n").length;
    var count = Math.floor((room - pad + gap) / (box - pad + gap));
    if (count > 1) work.style.columnCount = String(Math.min(count, lines));
  }
  function fit() {
    var body = document.body;
    body.style.fontSize = "";
    var section = slides()[state.slide];
    if (!state.present || !section) return;
    var works = section.querySelectorAll(":scope > pre.work");
    var size = parseFloat(getComputedStyle(body).fontSize);
    for (;;) {
      works.forEach(function (work) { columns(work, section.clientWidth); });
      if (section.getBoundingClientRect().bottom <= window.innerHeight || size <= 12) break;
      size -= 1;
      body.style.fontSize = size + "px";
    }
  }
  window.addEventListener("resize", function () { if (state.present) fit(); });
  function present(on, index) {
    state.present = on;
    document.body.classList.toggle("qkv-present", on);
    presentButton.textContent = on ? ui("document") : ui("present");
    presentButton.setAttribute("aria-pressed", on ? "true" : "false");
    if (on) {
      go(index === undefined ? state.slide : index);
    } else {
      slides().forEach(function (section) {
        section.classList.remove("qkv-current", "qkv-open");
        section.querySelectorAll(":scope > pre.work").forEach(function (work) {
          work.style.columnCount = "";
        });
      });
      document.body.style.fontSize = "";
      writeFragment();
      var current = slides()[state.slide];
      if (current) current.scrollIntoView();
    }
  }

  var bar = el("nav", { "class": "qkv-bar" });
  var presentButton = el("button", { type: "button", "aria-pressed": "false",
                                     "data-qkv": "present" });
  presentButton.addEventListener("click", function () { present(!state.present); });
  var helpButton = el("button", { type: "button", "data-qkv": "help", "aria-haspopup": "dialog" },
                      "?");
  helpButton.addEventListener("click", function () { toggleHelp(); });
  bar.appendChild(presentButton);
  var langButton = null;
  if (data.langs.length > 1) {
    langButton = el("button", { type: "button", "data-qkv": "lang" });
    langButton.addEventListener("click", function () {
      var next = roots[(roots.indexOf(state.root) + 1) % roots.length];
      useLang(next.getAttribute("lang"));
    });
    bar.appendChild(langButton);
  }
  bar.appendChild(helpButton);
  document.body.insertBefore(bar, document.body.firstChild);

  var help = el("div", { "class": "qkv-help", role: "dialog", "aria-modal": "false",
                         tabindex: "-1" });
  help.hidden = true;
  document.body.appendChild(help);
  function fillHelp() {
    help.textContent = "";
    help.setAttribute("aria-label", ui("keys_title"));
    help.appendChild(el("h2", {}, ui("keys_title")));
    var list = el("dl");
    [["p", "key_present"], ["→  Space  Enter", "key_next"], ["←  Backspace  b", "key_back"],
     ["1 … 9  Enter", "key_number"], ["Home  End", "key_first_last"],
     ["]  [", "key_group"], ["w", "key_why"], ["?", "key_help"],
     ["Esc  q", "key_exit"], ["Tab  ← ↑ → ↓", "key_cells"]].forEach(function (pair) {
      var term = el("dt");
      pair[0].split("  ").forEach(function (key) { term.appendChild(el("kbd", {}, key)); });
      list.appendChild(term);
      list.appendChild(el("dd", {}, ui(pair[1])));
    });
    help.appendChild(list);
  }
  function toggleHelp(force) {
    help.hidden = force === undefined ? !help.hidden : !force;
    if (!help.hidden) help.focus();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key;
    var cell = cellOf(document.activeElement);
    var onButton = document.activeElement && document.activeElement.tagName === "BUTTON";
    if (key === "?") { toggleHelp(); event.preventDefault(); return; }
    if (key === "Escape") {
      if (!help.hidden) toggleHelp(false);
      else if (state.present) present(false);
      else { clear(); panel.hidden = true; }
      event.preventDefault();
      return;
    }
    if (key === "p" || key === "P") { present(!state.present); event.preventDefault(); return; }
    if (key === "q" && state.present) { present(false); event.preventDefault(); return; }
    if (!state.present) {
      if (cell && /^Arrow/.test(key)) { move(cell, key); event.preventDefault(); }
      return;
    }
    if (/^[0-9]$/.test(key)) { state.typed += key; event.preventDefault(); return; }
    if (key === "Enter" && state.typed) {
      var number = parseInt(state.typed, 10);
      state.typed = "";
      if (number >= 1 && number <= slides().length) go(number - 1);
      event.preventDefault();
      return;
    }
    if (key === "Backspace" && state.typed) {
      state.typed = state.typed.slice(0, -1);
      event.preventDefault();
      return;
    }
    state.typed = "";
    var forward = key === " " || key === "Enter";  // as in --step; a button keeps its own
    if (key === "ArrowRight" || key === "PageDown" || (forward && !onButton)) go(state.slide + 1);
    else if (key === "ArrowLeft" || key === "PageUp" || key === "Backspace" || key === "b") {
      go(state.slide - 1);
    }
    else if (key === "w" || key === "W") toggleWhy();
    else if (key === "]") jump(1);
    else if (key === "[") jump(-1);
    else if (key === "Home") go(0);
    else if (key === "End") go(slides().length - 1);
    else if (cell && (key === "ArrowUp" || key === "ArrowDown")) move(cell, key);
    else return;
    event.preventDefault();
  });

  // ---- the weights as pictures: a heatmap and lines between tokens -----------------------------
  function heat(w) {
    w = Math.min(Math.max(w, 0), 1);
    var c = [30, 90, 200].map(function (v) { return Math.round(255 - w * (255 - v)); });
    return "rgb(" + c.join(",") + ")";
  }
  function pictureCell(root, pic, headIndex, i, j, near) {
    var head = pic.heads[headIndex];
    var prefix = root.getAttribute("data-page");
    var at = head.rows[i];  // [the page number of its weights, its row there]
    var cell = at ? document.getElementById(prefix + "c" + at[0] + "-" + at[1] + "-" + (j + 1))
                  : null;
    if (cell) {
      if (state.present) present(false);
      cell.scrollIntoView({ block: "center" });
      cell.focus();
      return;
    }
    var said = fill(ui("picture_cell"), { query: pic.queries[i], key: pic.keys[j],
                                          weight: head.weights[i][j] });
    show([said, ui("not_shown")], near);
  }
  function buildPicture(root) {
    var pic = data.pictures;
    if (!pic) return;
    function say(key) { return ui(key, root); }
    var section = el("section", { "class": "qkv-picture", "data-picture": "weights" });
    var heading = el("h2", {}, say("picture_title"));
    section.appendChild(heading);
    section.appendChild(el("p", { "class": "why" }, say("picture_why")));
    if (pic.n > pic.queries.length || pic.m > pic.keys.length) {
      section.appendChild(el("p", {}, fill(say("picture_part"), {
        n: pic.queries.length, total_n: pic.n, m: pic.keys.length, total_m: pic.m })));
    }
    var controls = el("div", { "class": "controls", role: "group" });
    var view = { head: 0, kind: "heatmap" };
    var named = pic.heads.length > 1 || pic.heads[0].head !== null;  // one button a head
    var headButtons = !named ? [] : pic.heads.map(function (h, k) {
      var b = el("button", { type: "button", "data-head": h.head,
                             "aria-pressed": k === 0 ? "true" : "false" },
                 fill(say("head"), { head: h.head }));
      b.addEventListener("click", function () { view.head = k; draw(); });
      return b;
    });
    headButtons.forEach(function (b) { controls.appendChild(b); });
    var kinds = ["heatmap", "lines"].map(function (kind) {
      var b = el("button", { type: "button", "data-view": kind,
                             "aria-pressed": kind === view.kind ? "true" : "false" }, say(kind));
      b.addEventListener("click", function () { view.kind = kind; draw(); });
      controls.appendChild(b);
      return b;
    });
    section.appendChild(controls);
    var legend = el("p", { "class": "legend" });
    legend.appendChild(el("span", {}, say("legend")));
    legend.appendChild(el("span", {}, "0"));
    legend.appendChild(el("span", { "class": "ramp", "aria-hidden": "true" }));
    legend.appendChild(el("span", {}, "1"));
    section.appendChild(legend);
    var frame = el("div", { "class": "scroll figure" });
    section.appendChild(frame);

    function draw() {
      headButtons.forEach(function (b, k) { b.setAttribute("aria-pressed", k === view.head); });
      kinds.forEach(function (b) {
        b.setAttribute("aria-pressed", b.getAttribute("data-view") === view.kind);
      });
      frame.textContent = "";
      var w = pic.heads[view.head].weights;
      var n = pic.queries.length, m = pic.keys.length;
      var label = 110;
      var picture;
      if (view.kind === "heatmap") {
        var size = Math.max(8, Math.min(56, Math.floor(640 / Math.max(n, m))));
        picture = svg("svg", { width: label + m * size + 10, height: label + n * size + 10,
                               role: "img", "data-view": "heatmap" });
        pic.keys.forEach(function (t, j) {
          var text = svg("text", { x: 0, y: 0, transform: "translate(" + (label + j * size +
            size * 0.7) + "," + (label - 4) + ") rotate(-60)" });
          text.textContent = t;
          picture.appendChild(text);
        });
        pic.queries.forEach(function (t, i) {
          var text = svg("text", { x: label - 4, y: label + i * size + size * 0.7,
                                   "text-anchor": "end" });
          text.textContent = t;
          picture.appendChild(text);
          for (var j = 0; j < m; j++) {
            var rect = svg("rect", { x: label + j * size, y: label + i * size, width: size,
                                     height: size, fill: heat(w[i][j]), stroke: "#ddd",
                                     "data-cell": (i + 1) + "," + (j + 1) });
            var tip = svg("title");
            tip.textContent = pic.queries[i] + " → " + pic.keys[j] + ": " + w[i][j];
            rect.appendChild(tip);
            picture.appendChild(rect);
          }
        });
      } else {
        var gap = Math.max(14, Math.min(44, Math.floor(700 / Math.max(n, m))));
        var left = 150, right = 450;
        picture = svg("svg", { width: 600, height: Math.max(n, m) * gap + 20, role: "img",
                               "data-view": "lines" });
        pic.queries.forEach(function (t, i) {
          var text = svg("text", { x: left - 8, y: 15 + i * gap, "text-anchor": "end",
                                   "data-query": i + 1 });
          text.textContent = t;
          picture.appendChild(text);
        });
        pic.keys.forEach(function (t, j) {
          var text = svg("text", { x: right + 8, y: 15 + j * gap });
          text.textContent = t;
          picture.appendChild(text);
        });
        for (var i = 0; i < n; i++) {
          for (var j = 0; j < m; j++) {
            if (!(w[i][j] > 0)) continue;
            var line = svg("line", { x1: left, y1: 10 + i * gap, x2: right, y2: 10 + j * gap,
                                     stroke: "rgb(30,90,200)",
                                     "stroke-width": Math.max(1, 8 * w[i][j]),
                                     "stroke-opacity": Math.max(0.15, w[i][j]),
                                     "data-cell": (i + 1) + "," + (j + 1) });
            var hint = svg("title");
            hint.textContent = pic.queries[i] + " → " + pic.keys[j] + ": " + w[i][j];
            line.appendChild(hint);
            picture.appendChild(line);
          }
        }
      }
      function open(place) {
        var ij = place.getAttribute("data-cell").split(",").map(Number);
        pictureCell(root, pic, view.head, ij[0] - 1, ij[1] - 1, place);
      }
      picture.addEventListener("click", function (event) {
        var place = event.target.closest("[data-cell]");
        if (place) open(place);
      });
      // the keyboard: Tab reaches one square (or line), the arrows move, Enter opens its cell
      var marks = picture.querySelectorAll("[data-cell]");
      marks.forEach(function (mark, k) {
        mark.setAttribute("tabindex", k === 0 ? "0" : "-1");
        mark.setAttribute("focusable", "true");
      });
      picture.addEventListener("keydown", function (event) {
        var place = event.target.closest ? event.target.closest("[data-cell]") : null;
        if (!place) return;
        if (event.key === "Enter") { open(place); event.preventDefault(); return; }
        if (state.present || !/^Arrow/.test(event.key)) return;
        var ij = place.getAttribute("data-cell").split(",").map(Number);
        var next = null;
        if (view.kind === "heatmap") {
          var di = { ArrowUp: -1, ArrowDown: 1 }[event.key] || 0;
          var dj = { ArrowLeft: -1, ArrowRight: 1 }[event.key] || 0;
          next = picture.querySelector('[data-cell="' + (ij[0] + di) + "," + (ij[1] + dj) + '"]');
        } else {
          var all = Array.prototype.slice.call(marks);
          var by = event.key === "ArrowUp" || event.key === "ArrowLeft" ? -1 : 1;
          next = all[all.indexOf(place) + by] || null;
        }
        event.preventDefault();
        if (!next) return;
        place.setAttribute("tabindex", "-1");
        next.setAttribute("tabindex", "0");
        next.focus();
      });
      frame.appendChild(picture);
    }
    draw();
    // after the forward weights (the last of them: every head's, every step's), before the
    // stages that follow them and any backward pass
    var weights = root.querySelectorAll(':scope > section[data-stage="weights"]');
    var after = weights.length ? weights[weights.length - 1].nextSibling : null;
    root.insertBefore(section, after || root.querySelector(":scope > section.final"));
  }

  // ---- languages ------------------------------------------------------------------------------
  function useLang(lang) {
    var next = roots.filter(function (r) { return r.getAttribute("lang") === lang; })[0];
    if (!next) return;
    clear();
    panel.hidden = true;
    roots.forEach(function (r) { r.hidden = r !== next; });
    state.root = next;
    document.documentElement.setAttribute("lang", lang);
    presentButton.textContent = state.present ? ui("document") : ui("present");
    presentButton.title = ui("key_present");
    helpButton.title = ui("keys_title");
    helpButton.setAttribute("aria-label", ui("keys_title"));
    if (langButton) {
      var other = roots[(roots.indexOf(next) + 1) % roots.length].getAttribute("lang");
      langButton.textContent = data.names[other];
      langButton.setAttribute("lang", other);
      langButton.title = ui("language");
    }
    fillHelp();
    if (state.present) go(state.slide);
    else writeFragment();
  }

  roots.forEach(buildPicture);
  var wanted = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    var kv = part.split("=");
    if (kv.length === 2) wanted[kv[0]] = kv[1];
  });
  useLang(wanted.lang && data.langs.indexOf(wanted.lang) >= 0 ? wanted.lang
          : roots[0].getAttribute("lang"));
  var at = parseInt(wanted.present, 10);
  if (at >= 1) present(true, at - 1);
  // a link to #present=N (or #lang=ko) followed on the page itself, not only on load
  window.addEventListener("hashchange", function () {
    var asked = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) asked[kv[0]] = kv[1];
    });
    if (asked.lang && asked.lang !== state.root.getAttribute("lang") &&
        data.langs.indexOf(asked.lang) >= 0) useLang(asked.lang);
    var slide = parseInt(asked.present, 10);
    if (slide >= 1) present(true, slide - 1);
    else if (state.present && !("present" in asked)) present(false);
  });
  document.documentElement.setAttribute("data-qkv-ready", "1");
})();
