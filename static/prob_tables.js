// Editable p / q tables as one element (the chain page's p and q, target-only's p) (the component "specviz.prob_tables" of
// specviz/app/ui/prob_tables.py, which says what goes back and forth): numbers in, one "edit" state value out
// ({ver, table, row, col, text, n}) when a cell's text is committed (Enter, Tab, an arrow key or leaving the
// cell). Every label and number is set with textContent / value: data, never markup.
const CSS = `
.pq { display: flex; flex-wrap: wrap; gap: 12px 32px; font-family: "Source Sans Pro", "Source Sans 3", Helvetica, Arial,
      "Noto Sans CJK SC", "Microsoft YaHei", sans-serif; font-size: 16px; color: #31333F; }
.pq-box { flex: 1 1 300px; min-width: 0; overflow: auto; max-height: 480px; }
.pq-head { margin: 0 0 8px 0; line-height: 1.5; }
.pq-head code { font-family: "Source Code Pro", ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85em;
                background: #f0f2f6; color: #09AB3B; padding: 1px 4px; border-radius: 4px; }
.pq-table { border-collapse: collapse; width: 100%; font-size: 14px; }
.pq-table th, .pq-table td { border: 1px solid #e6e9ef; padding: 0; height: 35px; }
.pq-table thead th { font-weight: 400; color: #808495; background: #fafafa; text-align: right; padding: 0 8px; }
.pq-table tbody th { font-weight: 400; color: #808495; background: #fafafa; text-align: left; padding: 0 8px; white-space: nowrap; }
.pq-table input { box-sizing: border-box; width: 100%; min-width: 4.2em; height: 34px; border: 0; padding: 0 8px; margin: 0;
                  font: inherit; font-variant-numeric: tabular-nums; text-align: right; background: transparent; color: inherit; }
.pq-table input:focus { outline: 2px solid #ff4b4b; outline-offset: -2px; background: #fff; }
.pq-table input.typed { background: #fff4e0; }
`;

const MOUNTED = new WeakMap();
let EDITS = Date.now();  // edits of this tab (from the clock: a reloaded tab never repeats an old number)  // the component's element -> {inputs, data, component}

function shown(v, digits) {
  return v === null || v === undefined || Number.isNaN(Number(v)) ? "" : Number(v).toFixed(digits);
}

function heading(parts) {
  const h = document.createElement("div");
  h.className = "pq-head";
  for (const [kind, text] of parts) {
    const el = document.createElement(kind === "b" ? "strong" : kind === "c" ? "code" : "span");
    el.textContent = text;
    h.append(el);
  }
  return h;
}

// The shape (tables, rows, columns, labels): while it stays, a rerun only refreshes the numbers, so the
// cell being edited keeps its focus.
const shapeOf = (data) => JSON.stringify(data.tables.map((t) => [t.name, t.head, t.columns, t.rows]));

function build(root, data, m) {
  const style = document.createElement("style");
  style.textContent = CSS;
  const wrap = document.createElement("div");
  wrap.className = "pq";
  const grid = {};  // table name -> rows of inputs
  for (const t of data.tables) {
    const box = document.createElement("div");
    box.className = "pq-box";
    box.append(heading(t.head));
    const table = document.createElement("table");
    table.className = "pq-table";
    table.dataset.table = t.name;
    const hr = table.createTHead().insertRow();
    hr.append(document.createElement("th"));
    for (const c of t.columns) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = c;
      hr.append(th);
    }
    const body = table.createTBody();
    grid[t.name] = t.rows.map((label, r) => {
      const tr = body.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = label;
      tr.append(th);
      return t.columns.map((col, c) => {
        const inp = document.createElement("input");
        inp.type = "text";
        inp.inputMode = "decimal";
        inp.autocomplete = "off";
        inp.spellcheck = false;
        inp.setAttribute("aria-label", `${t.name} · ${label} · ${col}`);
        inp.dataset.table = t.name;
        inp.dataset.row = String(r);
        inp.dataset.col = String(c);
        inp.addEventListener("focus", () => { inp.value = inp.dataset.raw; inp.select(); });
        inp.addEventListener("blur", () => {
          if (!inp.isConnected) return;  // removed by a new shape: its text went with the old tables
          commit(inp, m);
          inp.value = inp.dataset.shown;
        });
        inp.addEventListener("keydown", (ev) => keydown(ev, inp, m));
        tr.insertCell().append(inp);
        return inp;
      });
    });
    box.append(table);
    wrap.append(box);
  }
  root.replaceChildren(style, wrap);
  m.grid = grid;
}

function fill(m, data) {
  for (const t of data.tables) {
    const typed = new Map((t.typed || []).map(([r, c, text]) => [`${r},${c}`, text || ""]));
    t.values.forEach((row, r) => row.forEach((v, c) => {
      const inp = m.grid[t.name][r][c];
      const focused = inp.getRootNode().activeElement === inp;
      if (focused && inp.value !== inp.dataset.raw) return;  // being typed into: keep the viewer's text
      const text = typed.get(`${r},${c}`);
      inp.dataset.raw = v === null ? (text || "") : String(v);  // a refused text that is no number stays as typed
      inp.dataset.shown = v === null && text ? text : shown(v, data.digits);
      inp.classList.toggle("typed", typed.has(`${r},${c}`));
      inp.value = focused ? inp.dataset.raw : inp.dataset.shown;
      if (focused) inp.select();
    }));
  }
}

function commit(inp, m) {
  const text = inp.value.trim();
  if (text === inp.dataset.raw || text === inp.dataset.shown) return;
  inp.dataset.raw = text;  // an answer with other numbers replaces it
  EDITS += 1;  // the same text typed again later is a new edit
  m.component.setStateValue("edit", {ver: m.data.ver, table: inp.dataset.table, row: Number(inp.dataset.row),
                                     col: Number(inp.dataset.col), text: text.slice(0, 64), n: EDITS});
}

function keydown(ev, inp, m) {
  const rows = m.grid[inp.dataset.table];
  const r = Number(inp.dataset.row), c = Number(inp.dataset.col);
  const go = {ArrowUp: [r - 1, c], ArrowDown: [r + 1, c], Enter: [r + (ev.shiftKey ? -1 : 1), c]}[ev.key];
  if (ev.key === "Escape") {
    inp.value = inp.dataset.raw;
    inp.select();
    return;
  }
  if (!go) return;  // Tab / Shift+Tab move between cells as the browser does (the blur commits)
  ev.preventDefault();
  commit(inp, m);
  const next = rows[go[0]] && rows[go[0]][go[1]];
  if (next) next.focus(); else inp.select();
}

export default function (component) {
  const {data, parentElement} = component;
  let m = MOUNTED.get(parentElement);
  if (!m) {
    m = {};
    MOUNTED.set(parentElement, m);
  }
  m.component = component;
  const shape = shapeOf(data);
  if (m.shape !== shape) {
    build(parentElement, data, m);
    m.shape = shape;
  }
  m.data = data;
  fill(m, data);
  return undefined;
}
