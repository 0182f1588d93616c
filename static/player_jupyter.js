
// -- the step player's host in Jupyter (anywidget): specviz.rooms.notebook.Player sends player.js and this
// file as one ES module. The widget's traits: ``data`` (the player's data, specviz.replay.player.payload) and
// ``step`` (the step shown, both ways: Python reads it, and setting it moves the player). Keys step the
// player while the widget has focus (click it first), so the notebook's own keys keep working.
export default {
  render({model, el}) {
    const box = document.createElement("div");
    box.tabIndex = 0;
    el.appendChild(box);
    const data = () => Object.assign({}, model.get("data"), {start: model.get("step")});
    const player = svMount(box, data(), {
      keys: box,
      // Graphviz in WebAssembly, shipped in the package and sent by the kernel (only without a server-side dot)
      graphviz: model.get("_graphviz")
        ? () => svGraphviz(() => URL.createObjectURL(new Blob([model.get("_graphviz")], {type: "text/javascript"})))
        : undefined,
      onStep: (k, playing) => { if (!playing) { model.set("step", k); model.save_changes(); } },
    });
    const onData = () => player.update(data());
    const onStep = () => { if (model.get("step") !== player.step()) player.go(model.get("step")); };
    model.on("change:data", onData);
    model.on("change:step", onStep);
    return () => { model.off("change:data", onData); model.off("change:step", onStep); player.destroy(); };
  },
};
