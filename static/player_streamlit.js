// The step player's host in the app (the component "specviz.player" of specviz/app/ui/player.py, which says
// what goes back and forth). A rerun sends {digest, start} and, only when this tab does not hold them
// yet, the frames (data.z: gzip + base64); the tab keeps them by digest.
import {svGraphviz, svMount, svStepKey} from "./player.js";

const DATA = new Map();  // digest -> the player's data, for this tab
const LAYOUTS = new Map();  // DOT text -> laid-out figure, shared by every player of the tab
const MOUNTED = new WeakMap();  // the component's element -> {player, digest, start, component, box}
const GEN = new WeakMap();  // the component's element -> the number of its newest call
const CSS = new URL("player.css", import.meta.url).href;
const GRAPHVIZ = new URL("graphviz.umd.js", import.meta.url).href;
const graphviz = () => svGraphviz(() => GRAPHVIZ);

async function unpack(z) {
  const bytes = Uint8Array.from(atob(z), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

// Whether a click or key on `target` takes this tab to another page (a link to another path, in this tab).
function leavesPage(target) {
  const a = target instanceof Element ? target.closest("a[href]") : null;
  if (!a || a.hasAttribute("download") || (a.target && a.target !== "_self")) return false;
  try {
    return new URL(a.href, location.href).pathname !== location.pathname;
  } catch (_) {
    return false;
  }
}

export default async function (component) {
  const {data, parentElement} = component;
  const gen = (GEN.get(parentElement) || 0) + 1;  // this call; a newer one may start while it waits
  GEN.set(parentElement, gen);
  if (data.z && !DATA.has(data.digest)) {
    DATA.set(data.digest, unpack(data.z));  // a promise: a call right after this one waits for the same frames
    if (DATA.size > 16) DATA.delete(DATA.keys().next().value);
  }
  const held = await DATA.get(data.digest);
  if (!held) {  // this tab does not hold the frames (e.g. its scripts were reloaded): ask for them once
    component.setTriggerValue("missing", data.digest);
    return undefined;
  }
  const D = Object.assign({}, held, {start: data.start});
  let m = MOUNTED.get(parentElement);
  if (!m) {
    let timer = null, pending = null;
    m = {digest: data.digest, start: data.start, component, box: document.createElement("div")};
    const send = () => {
      clearTimeout(timer);
      if (pending === null) return;
      m.sent = pending; pending = null;
      m.component.setStateValue("step", m.sent);
    };
    // A step not sent yet goes before anything else the viewer does on the page: a click or a key sent
    // after it would carry the widgets' values of before its own rerun, and a step request arriving
    // after that rerun would carry them too and undo it (Streamlit reads an old value as an edit).
    // A step not sent when the viewer leaves the page is dropped: sent then, it asks for a rerun of this
    // page's fragment after the switch to another page has gone out, and Streamlit runs it on the new page:
    // its elements land in the new page's tree and the frontend stops with "Bad delta path index" (a blank
    // page). A link (the sidebar's pages, a page link) or the browser's back/forward leaves the page.
    m.drop = () => { clearTimeout(timer); pending = null; };
    m.flush = (ev) => {
      if (pending === null || ev.composedPath().includes(m.box)) return;
      if (leavesPage(ev.target)) { m.drop(); return; }
      if (ev.type === "keydown" && (ev.target === document.body || ev.target === document.documentElement)) return;
      // A step key the player takes (focus on the page, outside any field): the next step, not an edit. Sending
      // the pending step then reran the page at every keyboard step once focus sat on an element of the page.
      if (ev.type === "keydown" && svStepKey(ev)) return;
      send();
    };
    document.addEventListener("pointerdown", m.flush, true);
    document.addEventListener("keydown", m.flush, true);
    window.addEventListener("popstate", m.drop);
    const host = {
      layoutCache: LAYOUTS, graphviz,
      onStep: (k, playing) => {
        clearTimeout(timer);
        pending = playing ? null : k;
        if (!playing) timer = setTimeout(send, 1000);  // a click anywhere else sends it at once (flush)
      },
    };
    const link = document.createElement("link");
    link.rel = "stylesheet"; link.href = CSS;
    parentElement.append(link, m.box);  // parentElement is the component's shadow root
    m.player = svMount(m.box, D, host);
    MOUNTED.set(parentElement, m);
  } else {
    m.component = component;
    // New frames, or the page moved the step itself (not an echo of a step this player sent).
    if (m.digest !== data.digest || (data.start !== m.start && data.start !== m.sent && data.start !== m.player.step())) {
      m.player.update(D);
    }
    m.digest = data.digest; m.start = data.start;
  }
  // Streamlit calls the cleanup of a call that a newer one replaced, too: only the newest one unmounts.
  return () => {
    if (GEN.get(parentElement) !== gen) return;
    document.removeEventListener("pointerdown", m.flush, true);
    document.removeEventListener("keydown", m.flush, true);
    window.removeEventListener("popstate", m.drop);
    m.drop();  // unmounted: a step still waiting would rerun a page that is gone
    m.player.destroy(); m.box.remove(); MOUNTED.delete(parentElement); GEN.delete(parentElement);
  };
}
