// The thinking-space branch map of the interactive page (docs/spaces.md): the space drawn
// centre-out as SVG (the root in the middle, each depth one ring further out, every subtree in
// its own wedge), one colour per state; selecting a node only changes the map's selection and
// shows its Handoffs beside the map; "Open conversation" is the explicit action that moves the
// page to that node's session. The controls (split, checkpoint, return, rename, retry) are
// sent as the space-* frames through the page's socket; the map is redrawn from each reply
// and each space-state event, whole; its legend and the outline of branch titles (each one
// entered by its title) are spaceoutline.js's. The selected node's activity (its chat
// process's message count, and a pulse on the map while a turn runs) is read with process-get
// every few seconds; a blank branch (no message yet) takes the person's first prompt instead of
// being opened empty: space-prompt admits it to that node's session, and only then the page
// opens it.
"use strict";

window.SpaceMap = (function () {
  const SVG = "http://www.w3.org/2000/svg";
  const RING = 90; // distance between two depths, in SVG units
  const RADIUS = 22; // a node's circle
  const ACTIVITY_MS = 1500; // how often the selected node's activity is read
  // A node in one of these takes no first prompt (docs/spaces.md).
  const NO_PROMPT = ["returned", "returning", "forkHandoffPending"];
  // The colours of docs/spaces.md (blue, amber, teal, violet, indigo, gray).
  const COLOURS = {
    active: "#2563eb",
    checkpoint: "#d97706",
    pending: "#0d9488",
    refreshing: "#7c3aed",
    returning: "#4338ca",
    returned: "#6b7280",
  };
  const LABELS = {
    active: "active",
    checkpoint: "active, with a checkpoint",
    pending: "waiting for its fork Handoff",
    refreshing: "refreshing its checkpoint",
    returning: "returning",
    returned: "returned",
  };

  // The map's colour key of a node.
  function look(node) {
    if (node.state === "returned") return "returned";
    if (node.state === "returning") return "returning";
    if (node.state === "forkHandoffPending") return "pending";
    if (node.checkpointRefreshingAt) return "refreshing";
    if (node.checkpointHandoff) return "checkpoint";
    return "active"; // active, and dormant (not begun) is drawn as active
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attributes) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    return node;
  }

  // Positions: each leaf gets an equal share of the circle, a node the middle of its leaves.
  function layout(space) {
    const children = new Map();
    for (const node of space.nodes) {
      if (!children.has(node.parentId)) children.set(node.parentId, []);
      children.get(node.parentId).push(node);
    }
    const leaves = new Map();
    function count(node) {
      const kids = children.get(node.id) || [];
      const total = kids.length ? kids.reduce((sum, kid) => sum + count(kid), 0) : 1;
      leaves.set(node.id, total);
      return total;
    }
    const root = space.nodes.find((node) => node.id === space.rootNodeId) || space.nodes[0];
    const places = new Map();
    if (!root) return { places, depth: 0 };
    count(root);
    let depth = 0;
    function place(node, from, to, level) {
      const angle = (from + to) / 2;
      const radius = level * RING;
      depth = Math.max(depth, level);
      places.set(node.id, { x: radius * Math.cos(angle), y: radius * Math.sin(angle), node });
      let start = from;
      for (const kid of children.get(node.id) || []) {
        const share = ((to - from) * leaves.get(kid.id)) / leaves.get(node.id);
        place(kid, start, start + share, level + 1);
        start += share;
      }
    }
    place(root, -Math.PI / 2, -Math.PI / 2 + 2 * Math.PI, 0);
    return { places, depth };
  }

  function create(parts, send, notice, openSession) {
    let space = null;
    let selectedId = null;
    // The selected node's chat process as last read: {nodeId, messages, pending, status}.
    let activity = null;
    // The node and title last put into the rename field.
    let titleShown = { id: null, title: null };

    function known(item) {
      return Boolean(item && activity && activity.nodeId === item.id);
    }

    function blank(item) {
      return known(item) && activity.messages === 0 && activity.pending === 0 && !NO_PROMPT.includes(item.state);
    }

    function readActivity() {
      const item = node(selectedId);
      if (!item || parts.card.hidden || !parts.connected()) return;
      send(
        "process-get",
        { processId: item.chatProcessId },
        (frame) => {
          if (frame.type !== "process" || selectedId !== item.id) return;
          const process = frame.data.process;
          activity = {
            nodeId: item.id,
            messages: process.conversationLength,
            pending: process.pending,
            status: process.status,
          };
          showActivity();
        },
        true,
      );
    }
    setInterval(readActivity, ACTIVITY_MS);

    // The message count beside the map, the pulse on the map, and the first-prompt form.
    function showActivity() {
      const item = node(selectedId);
      const running = known(item) && activity.status === "RUNNING";
      for (const group of parts.map.querySelectorAll(".space-node")) {
        group.classList.toggle("running", running && group.dataset.node === selectedId);
      }
      const line = parts.detail.querySelector(".space-activity");
      if (line) {
        line.dataset.messages = known(item) ? String(activity.messages) : "";
        line.dataset.running = String(running);
        line.querySelector(".space-count").textContent = known(item)
          ? activity.messages + (activity.messages === 1 ? " message" : " messages")
          : "reading…";
      }
      const first = Boolean(item && blank(item));
      parts.firstForm.hidden = !first;
      parts.open.hidden = first;
    }

    function node(id) {
      return space ? space.nodes.find((candidate) => candidate.id === id) || null : null;
    }

    function draw() {
      parts.card.hidden = !space;
      if (!space) return;
      parts.card.dataset.space = space.id;
      parts.card.dataset.revision = String(space.revision);
      parts.revision.textContent = space.id + " · revision " + space.revision;
      const { places, depth } = layout(space);
      const extent = depth * RING + RADIUS + 46;
      const picture = svg("svg", {
        viewBox: [-extent, -extent, 2 * extent, 2 * extent].join(" "),
        role: "img",
        "aria-label": "branch map of " + space.id,
        class: "space-svg",
      });
      for (const { x, y, node: item } of places.values()) {
        const parent = item.parentId ? places.get(item.parentId) : null;
        if (parent) picture.append(svg("line", { x1: parent.x, y1: parent.y, x2: x, y2: y, class: "space-edge" }));
      }
      for (const { x, y, node: item } of places.values()) {
        const kind = look(item);
        const group = svg("g", {
          class: "space-node" + (item.id === selectedId ? " selected" : ""),
          "data-node": item.id,
          "data-look": kind,
          "data-state": item.state,
          tabindex: 0,
          role: "button",
          "aria-label": item.title + " (" + LABELS[kind] + ")",
        });
        group.append(svg("circle", { cx: x, cy: y, r: RADIUS, fill: COLOURS[kind] }));
        const label = svg("text", { x, y: y + RADIUS + 14, "text-anchor": "middle", class: "space-label" });
        label.textContent = item.title.length > 18 ? item.title.slice(0, 17) + "…" : item.title;
        group.append(label);
        group.addEventListener("click", () => select(item.id));
        group.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            select(item.id);
          }
        });
        picture.append(group);
      }
      parts.map.replaceChildren(picture);
      window.SpaceOutline.legend(parts.legend, COLOURS, LABELS);
      window.SpaceOutline.outline(parts.outline, space, {
        look,
        colours: COLOURS,
        labels: LABELS,
        select,
        enter: (item) => openSession(item.sessionId),
        current: parts.currentSession,
      });
      showSelected();
    }

    function handoff(title, text) {
      const box = element("div", "space-handoff");
      box.append(element("h4", null, title));
      box.append(element("p", text ? "space-handoff-text" : "hint", text || "none yet"));
      return box;
    }

    function showSelected() {
      const item = node(selectedId);
      parts.detail.dataset.node = item ? item.id : "";
      parts.detail.dataset.session = item ? item.sessionId : "";
      parts.controls.hidden = !item;
      if (!item) {
        parts.detail.replaceChildren(element("p", "hint", "Select a branch to see its Handoffs."));
        return;
      }
      const kind = look(item);
      const heading = element("h3", null, item.title);
      const state = element("p", "space-state-line");
      const swatch = element("span", "space-swatch");
      swatch.style.background = COLOURS[kind];
      state.append(swatch, document.createTextNode(" " + LABELS[kind] + " · " + item.id + " · " + item.sessionId));
      parts.detail.replaceChildren(
        heading,
        state,
        handoff("Inherited Handoff", item.inheritedHandoff),
        handoff("Checkpoint", item.checkpointHandoff),
        handoff("Returned Handoff", item.returnedHandoff),
      );
      const line = element("p", "space-activity");
      line.append(element("span", "space-count", ""), element("span", "space-pulse", ""));
      line.lastChild.setAttribute("aria-label", "a turn is running");
      parts.detail.insertBefore(line, heading.nextSibling.nextSibling);
      showActivity();
      // What a person types stays through a redraw; a new selection or a new title replaces it.
      if (titleShown.id !== item.id || titleShown.title !== item.title) {
        parts.renameInput.value = item.title;
        titleShown = { id: item.id, title: item.title };
      }
      const sealed = item.state === "returned";
      const busy = sealed || item.state === "returning";
      parts.split.disabled = busy || item.state === "forkHandoffPending";
      parts.rename.disabled = busy;
      parts.checkpoint.disabled = busy || item.state === "forkHandoffPending" || Boolean(item.checkpointRefreshingAt);
      parts.returnButton.disabled = busy || item.id === space.rootNodeId || item.state === "forkHandoffPending";
      parts.retry.hidden = item.state !== "forkHandoffPending";
      parts.open.disabled = item.sessionId === parts.currentSession();
    }

    function select(id) {
      if (id !== selectedId) activity = null;
      selectedId = id;
      for (const group of parts.map.querySelectorAll(".space-node")) {
        group.classList.toggle("selected", group.dataset.node === id);
      }
      showSelected();
      readActivity();
    }

    // A newer whole space replaces the drawn one (an older revision is ignored).
    function update(next) {
      if (!next || (space && space.id === next.id && next.revision < space.revision)) return;
      space = next;
      if (!node(selectedId)) selectedId = null;
      draw();
    }

    function request(type, data, done) {
      const item = node(selectedId);
      if (!item) return;
      send(type, { nodeId: item.id, revision: space.revision, ...(data || {}) }, (frame) => {
        update(frame.data.space);
        notice(type + ": " + item.id + " at revision " + frame.data.space.revision + ".");
        if (done) done();
      });
    }

    parts.splitForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const title = parts.splitInput.value.trim();
      if (title) request("space-split", { title }, () => (parts.splitInput.value = ""));
    });
    parts.renameForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const title = parts.renameInput.value.trim();
      if (title) request("space-rename", { title });
    });
    parts.checkpoint.addEventListener("click", () => request("space-checkpoint"));
    parts.returnButton.addEventListener("click", () => request("space-return"));
    parts.retry.addEventListener("click", () => {
      const item = node(selectedId);
      if (!item) return;
      send("space-fork-retry", { nodeId: item.id }, (frame) => {
        update(frame.data.space);
        notice("space-fork-retry: asked the parent's agent again for " + item.id + "'s Handoff.");
      });
    });
    // A blank branch's first prompt: admitted to its session, then the page opens it.
    parts.firstForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const item = node(selectedId);
      const text = parts.firstInput.value.trim();
      if (!item || !text) return;
      send(
        "space-prompt",
        { nodeId: item.id, text },
        (frame) => {
          if (frame.type === "error") {
            notice("space-prompt: " + frame.data.message, true);
            return;
          }
          parts.firstInput.value = "";
          notice("space-prompt: " + item.id + " has its first prompt; opening it.");
          openSession(item.sessionId);
        },
        true,
      );
    });
    parts.open.addEventListener("click", () => {
      const item = node(selectedId);
      if (item) openSession(item.sessionId);
    });

    return { update, select, current: () => space };
  }

  return { create, look, COLOURS, LABELS };
})();
