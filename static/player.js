// The step player: one module for every host (the app, the exported HTML file, the Jupyter widget).
// svMount(root, D, host) builds the player inside ``root`` from ``D`` (specviz.replay.player.payload) and returns
// {update(D), go(k), step(), destroy()}. Everything in D is data: it reaches the page only through
// textContent, setAttribute and <img> (an SVG shown by <img> runs no script). Hosts pass:
//   host.onStep(k, playing)  the step shown changed by the viewer (debounced by the host if it costs a round trip)
//   host.keys          the element whose keydown events step this player (default: root's document)
//   host.graphviz()    a promise of Graphviz in WebAssembly (for D.dots), or undefined
//   host.layoutCache   a Map(DOT text -> data URL) shared by players of one page
// Graphviz in WebAssembly from ``src`` (a script URL of the host: the app's server, or the package's file
// the Jupyter kernel sent): one <script> per page, loaded once; resolves to the Graphviz object.
let svGraphvizLoad = null;
export function svGraphviz(src) {
  if (!svGraphvizLoad) {
    svGraphvizLoad = new Promise((resolve, reject) => {
      const NAME = "@hpcc-js/wasm/graphviz";
      if (window[NAME]) { window[NAME].Graphviz.load().then(resolve, reject); return; }
      const s = document.createElement("script");
      s.src = src(); s.async = true; s.dataset.svGraphviz = "";
      s.onload = () => window[NAME].Graphviz.load().then(resolve, reject);
      s.onerror = () => { s.remove(); svGraphvizLoad = null; reject(new Error("Graphviz did not load")); };
      document.head.appendChild(s);
    });
  }
  return svGraphvizLoad;
}

// The player's action for a key press ("next", "back", "play", "first", "last"), or null: keys that belong to
// something else of the page (typing, a select, a slider or combobox; ``except``, the player's own scrubber, is
// the player's) and keys with a modifier are not the player's.
export function svStepKey(ev, except) {
  const el = ev.composedPath ? ev.composedPath()[0] : ev.target;
  if (el && el !== except && el !== (el.ownerDocument && el.ownerDocument.body) && el.tagName) {
    const tag = el.tagName, type = (el.type || "").toLowerCase(), role = el.getAttribute && el.getAttribute("role");
    if (tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable) return null;
    if (tag === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(type)) return null;
    if (role === "slider" || role === "combobox" || role === "listbox" || role === "option" || role === "spinbutton") return null;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return null;
  return {ArrowRight: "next", ArrowLeft: "back", " ": "play", Spacebar: "play", Home: "first", End: "last"}[ev.key] || null;
}

export function svMount(root, D, host) {
  "use strict";
  host = host || {};
  const doc = root.ownerDocument || document;
  const win = doc.defaultView || window;
  const SVGNS = "http://www.w3.org/2000/svg";
  const ICONS = {first: "M6 6h2v12H6zm3.5 6 8.5 6V6z", back: "M15.4 7.4 14 6l-6 6 6 6 1.4-1.4L10.8 12z",
                 play: "M8 5v14l11-7z", pause: "M6 19h4V5H6v14zm8-14v14h4V5h-4z", next: "M8.6 16.6 10 18l6-6-6-6-1.4 1.4 4.6 4.6z",
                 last: "m6 18 8.5-6L6 6v12zM16 6v12h2V6h-2z",
                 link: "M3.9 12c0-1.7 1.4-3.1 3.1-3.1h4V7H7a5 5 0 0 0 0 10h4v-1.9H7c-1.7 0-3.1-1.4-3.1-3.1zM8 13h8v-2H8v2zm9-6h-4v1.9h4c1.7 0 3.1 1.4 3.1 3.1s-1.4 3.1-3.1 3.1h-4V17h4a5 5 0 0 0 0-10z"};
  const mk = (tag, cls, attrs) => {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    return e;
  };
  const icon = (name) => {
    const s = doc.createElementNS(SVGNS, "svg"); s.setAttribute("viewBox", "0 0 24 24"); s.setAttribute("data-sv-icon", name);
    const p = doc.createElementNS(SVGNS, "path"); p.setAttribute("d", ICONS[name]); s.appendChild(p);
    return s;
  };
  // -- the skeleton (fixed markup, built node by node) --
  const wrap = mk("div", "sv-wrap");
  const bar = mk("div", "bar");
  const btns = {};
  for (const name of ["first", "back", "play", "next", "last"]) {
    const b = mk("button", "", {type: "button", "data-sv-btn": name});
    b.appendChild(icon(name));
    if (name === "play") { const ps = icon("pause"); ps.style.display = "none"; b.appendChild(ps); b.appendChild(mk("span", "", {"data-sv-playtext": ""})); }
    btns[name] = b; bar.appendChild(b);
  }
  const sel = mk("select", "", {"data-sv-speed": ""});
  const scrub = mk("input", "", {type: "range", min: "0", value: "0", step: "1", "data-sv-scrub": ""});
  const stepEl = mk("span", "step", {"data-sv-step": ""});
  const linkBtn = mk("button", "", {type: "button", "data-sv-btn": "link"}); linkBtn.appendChild(icon("link")); linkBtn.hidden = true;
  bar.append(sel, scrub, stepEl, linkBtn);
  const linkBox = mk("input", "linkbox", {type: "text", readonly: "", "data-sv-link": ""}); linkBox.hidden = true;
  const capEl = mk("div", "cap", {"data-sv-caption": ""});
  const main = mk("div", "main");
  const fig = mk("div", "fig"), img = mk("img", "", {"data-sv-img": "", alt: ""}), figmsg = mk("div", "figmsg", {"data-sv-figmsg": ""});
  figmsg.hidden = true; fig.append(img, figmsg);
  const side = mk("div", "side"), img2 = mk("img", "", {"data-sv-img2": "", alt: ""}), box = mk("div", "", {"data-sv-rows": ""});
  img2.hidden = true; side.append(img2, box);
  main.append(fig, side);
  const keysEl = mk("div", "keys", {"data-sv-keys": ""});
  wrap.append(bar, linkBox, capEl, main, keysEl);
  root.classList.add("sv-player");
  root.appendChild(wrap);

  let N = 0, cur = 0, L = {}, srcs = [], playing = false, timer = null, t0 = 0, k0 = 0, speed = 1;
  let wanted = -1, pending = false, prefetching = 0;
  const cache = host.layoutCache || new Map();
  // An SVG text as an <img> source (an image runs no script and loads nothing).
  const asImage = (svg) => "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg.slice(Math.max(0, svg.indexOf("<svg"))));

  function setData(d) {
    D = d; L = D.labels; N = D.frames.length;
    cur = Math.max(0, Math.min(N - 1, D.start | 0));
    speed = D.speed || 1;
    srcs = D.svgs ? D.svgs.map(asImage) : new Array((D.dots || []).length).fill(null);
    prefetching += 1;  // a prefetch of older data stops
    root.classList.toggle("present", !!D.present);
    for (const [name, tip] of [["first", L.first], ["back", L.back], ["next", L.next], ["last", L.last], ["play", L.play]]) {
      btns[name].title = tip; btns[name].setAttribute("aria-label", tip);
    }
    sel.replaceChildren();
    for (const s of D.speeds) {
      const o = doc.createElement("option"); o.value = String(s); o.textContent = `${s} ${L.per_s}`;
      if (s === speed) o.selected = true; sel.appendChild(o);
    }
    sel.setAttribute("aria-label", L.speed);
    scrub.max = String(N - 1); scrub.setAttribute("aria-label", L.step);
    keysEl.textContent = L.keys;
    linkBtn.hidden = !(D.links && D.links.length === N);
    linkBtn.title = L.link || ""; linkBtn.setAttribute("aria-label", L.link || "");
    if (linkBtn.hidden) linkBox.hidden = true;
  }

  function fitFigure() {
    // Keep the whole picture inside the window (a projector is 720 px tall): the window's height minus
    // where the picture starts on the page and a small margin.
    const vh = win.innerHeight, top = img.getBoundingClientRect().top;
    const room = Math.max(Math.round(vh * 0.4), Math.round(vh - top - 14));
    img.style.maxHeight = room + "px";
    // A small tree on a large screen grows (up to 1.6x) to use the room, but never past it, and never
    // taller than the width allows (no empty band above and below a wide figure).
    if (img.naturalHeight) {
      const byWidth = img.naturalWidth ? Math.round(fig.clientWidth * img.naturalHeight / img.naturalWidth) : room;
      img.style.height = Math.max(40, Math.min(room, Math.round(img.naturalHeight * 1.6), byWidth)) + "px";
    }
  }
  img.addEventListener("load", fitFigure);
  win.addEventListener("resize", fitFigure);

  // -- figures: SVG laid out by the server (D.svgs) or DOT laid out here by Graphviz in WebAssembly --
  function layout(gv, k) {
    if (srcs[k]) return srcs[k];
    const dot = D.dots[k];
    let src = cache.get(dot);
    if (src === undefined) {
      let svg = null;
      try { svg = gv.layout(dot, "svg", "dot"); } catch (e) { svg = null; }
      src = svg ? asImage(svg) : "";
      if (cache.size > 600) cache.delete(cache.keys().next().value);
      cache.set(dot, src);
    }
    srcs[k] = src;
    return src;
  }
  const figState = (state) => {
    root.dataset.svFigure = state;
    figmsg.hidden = state !== "error";
    figmsg.textContent = state === "error" ? L.nofig : "";
  };
  function prefetch(gv) {
    // The other frames while the viewer reads this one (small slices: a click never waits long).
    const mine = ++prefetching;
    let j = 0;
    (function idle() {
      if (mine !== prefetching) return;
      const t = performance.now();
      while (j < srcs.length && performance.now() - t < 12) { if (srcs[j] === null) layout(gv, j); j++; }
      if (j < srcs.length) setTimeout(idle, 0);
    })();
  }
  let loaded = null;
  function showFigure(k) {
    wanted = k;
    if (srcs[k] === null && D.dots) {
      const cached = cache.get(D.dots[k]);
      if (cached !== undefined) srcs[k] = cached;
      else if (loaded) layout(loaded, k);
    }
    if (srcs[k] !== null) {
      if (!srcs[k]) { figState("error"); return; }
      if (img.getAttribute("src") !== srcs[k]) img.setAttribute("src", srcs[k]);
      figState("ready");
      if (D.dots && loaded && srcs.includes(null)) setTimeout(() => prefetch(loaded), 50);
      return;
    }
    figState("layout");
    if (pending) return;
    if (!host.graphviz) { figState("error"); return; }
    pending = true;
    host.graphviz().then((gv) => { loaded = gv; pending = false; showFigure(wanted); },
                         () => { pending = false; figState("error"); });
  }

  // A chip or a table cell: its text, its state's colours (a chip without a known state is pending), its hover.
  function cell(el, text, state, title) {
    const c = D.colors[state] || (el.className === "chip" ? D.colors.pending : null);
    if (c) { el.style.background = c[0]; el.style.color = c[1]; }
    el.textContent = text;
    if (title) el.title = title;
    return el;
  }

  function draw() {
    const f = D.frames[cur];
    stepEl.textContent = `${L.step} ${cur}/${N - 1}`;
    capEl.textContent = f.caption;
    showFigure(f.svg);
    img.alt = f.alt || "";
    if (f.svg2 === null || f.svg2 === undefined) { img2.hidden = true; img2.removeAttribute("src"); }
    else { const src2 = asImage(D.svgs2[f.svg2]); if (img2.getAttribute("src") !== src2) img2.setAttribute("src", src2); img2.hidden = false; }
    scrub.value = String(cur);
    if (!linkBox.hidden && D.links) linkBox.value = D.links[cur];
    box.replaceChildren();
    for (const r of f.rows) {
      const row = mk("div", "row");
      const lab = mk("span", "lab"); lab.textContent = r.label; row.appendChild(lab);
      // The values are one group: beside the label when they fit there, else all on the lines below it, never
      // a chip wrapped back under the label (where it reads as the start of another row).
      const vals = mk("span", "vals"); row.appendChild(vals);
      if (r.code !== undefined) { const c = mk("span", "code"); c.textContent = r.code; vals.appendChild(c); }
      for (const ch of (r.chips || [])) {
        if (typeof ch === "string") { const t = mk("span"); t.textContent = ch; vals.appendChild(t); }
        else vals.appendChild(cell(mk("span", "chip"), ch[0], ch[1], ch[2]));
      }
      box.appendChild(row);
    }
    main.classList.toggle("has-table", !!(f.table && f.table.length));
    if (f.table && f.table.length) {
      // A small table of text cells (first row the header); a cell's state colours it, like a chip.
      const tbl = mk("table", "tbl", {"data-sv-table": ""});
      f.table.forEach((cells, i) => {
        const tr = mk("tr");
        for (const [text, state, title] of cells) tr.appendChild(cell(mk(i === 0 ? "th" : "td"), text, state, title));
        tbl.appendChild(tr);
      });
      box.appendChild(tbl);
    }
    btns.play.querySelector('[data-sv-icon="play"]').style.display = playing ? "none" : "";
    btns.play.querySelector('[data-sv-icon="pause"]').style.display = playing ? "" : "none";
    btns.play.querySelector("[data-sv-playtext]").textContent = playing ? L.pause : L.play;
    btns.play.title = playing ? L.pause : L.play;
    root.dataset.svCur = String(cur);
  }

  function go(k, quiet) {
    const was = cur;
    cur = Math.max(0, Math.min(N - 1, k));
    draw();
    if (!quiet && cur !== was && host.onStep) host.onStep(cur, playing);
  }
  function stop() { const was = playing; playing = false; if (timer) clearTimeout(timer); timer = null; draw(); if (was && host.onStep) host.onStep(cur, false); }
  function tick() {
    // Step j lands at t0 + j / speed (not "sleep then step"), so the rate holds the labelled speed.
    const j = Math.floor((performance.now() - t0) * speed / 1000 + 0.02);
    go(k0 + j);
    if (cur >= N - 1) { stop(); return; }
    timer = setTimeout(tick, Math.max(0, t0 + (j + 1) * 1000 / speed - performance.now()));
  }
  function play() {
    if (playing) { stop(); return; }
    if (cur >= N - 1) go(0);
    playing = true; k0 = cur; t0 = performance.now();
    draw();
    timer = setTimeout(tick, 1000 / speed);
  }
  linkBtn.addEventListener("click", () => {
    linkBox.hidden = false; linkBox.value = D.links[cur]; linkBox.focus(); linkBox.select();
    try { navigator.clipboard.writeText(D.links[cur]).catch(() => {}); } catch (e) {}
  });
  const act = {first: () => { stop(); go(0); }, back: () => { stop(); go(cur - 1); }, next: () => { stop(); go(cur + 1); },
               last: () => { stop(); go(N - 1); }, play: play};
  for (const name of Object.keys(act)) btns[name].addEventListener("click", act[name]);
  sel.addEventListener("change", () => {
    speed = Number(sel.value);
    if (playing) { clearTimeout(timer); k0 = cur; t0 = performance.now(); timer = setTimeout(tick, 1000 / speed); }
  });
  // Read the slider first: stop() redraws, and drawing puts the current step back into the slider.
  scrub.addEventListener("input", () => { const k = Number(scrub.value); stop(); go(k); });

  function onKey(ev) {
    if (!root.isConnected) return;
    const k = svStepKey(ev, scrub);
    if (k) { act[k](); ev.preventDefault(); }
  }
  const keys = host.keys || doc;
  // Capture phase: a focused widget of the page (e.g. a toggle) may stop the key from bubbling.
  keys.addEventListener("keydown", onKey, true);

  setData(D);
  draw();
  fitFigure();
  return {
    update(d) {  // new data: new frames, or the same frames at a step the server asked for
      if (playing) { playing = false; clearTimeout(timer); timer = null; }
      setData(d); draw(); fitFigure();
    },
    go(k) { go(k, true); },
    step() { return cur; },
    destroy() { stop(); keys.removeEventListener("keydown", onKey, true); win.removeEventListener("resize", fitFigure); wrap.remove(); },
  };
}
