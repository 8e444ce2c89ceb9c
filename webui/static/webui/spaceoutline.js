// Beside the branch map (spacemap.js): its legend (one swatch per colour, with what it means)
// and the space as an outline of branch titles, nested as the branches are, each with its
// state in words; a title selects the branch, "Enter" opens that branch's conversation.
"use strict";

window.SpaceOutline = (function () {
  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function swatch(colour) {
    const mark = element("span", "space-swatch");
    mark.style.background = colour;
    return mark;
  }

  // The legend, drawn once: the colours and labels of spacemap.js.
  function legend(container, colours, labels) {
    if (!container || container.childElementCount) return;
    const list = element("ul", "space-legend-list");
    for (const [kind, colour] of Object.entries(colours)) {
      const item = element("li");
      item.dataset.look = kind;
      item.append(swatch(colour), document.createTextNode(" " + labels[kind]));
      list.append(item);
    }
    container.append(list);
  }

  // The outline of `space`: hooks.look(node) names its colour, hooks.select(id) selects it on
  // the map, hooks.enter(node) opens its conversation; hooks.current() is this tab's session.
  function outline(container, space, hooks) {
    if (!container) return;
    const children = new Map();
    for (const node of space.nodes) {
      if (!children.has(node.parentId)) children.set(node.parentId, []);
      children.get(node.parentId).push(node);
    }
    function branch(node) {
      const kind = hooks.look(node);
      const item = element("li", "space-branch");
      item.dataset.node = node.id;
      const line = element("div", "space-branch-line");
      const title = element("button", "link space-branch-title", node.title);
      title.type = "button";
      title.addEventListener("click", () => hooks.select(node.id));
      line.append(swatch(hooks.colours[kind]), title, element("small", "space-branch-state", hooks.labels[kind]));
      if (node.sessionId === hooks.current()) {
        line.append(element("small", "space-here", "you are here"));
      } else {
        const enter = element("button", "secondary space-enter", "Enter");
        enter.type = "button";
        enter.setAttribute("aria-label", "Enter the branch " + node.title);
        enter.addEventListener("click", () => hooks.enter(node));
        line.append(enter);
      }
      item.append(line);
      const kids = children.get(node.id) || [];
      if (kids.length) item.append(element("ul", "space-outline-list", null));
      kids.forEach((kid) => item.lastChild.append(branch(kid)));
      return item;
    }
    const root = space.nodes.find((node) => node.id === space.rootNodeId) || space.nodes[0];
    const list = element("ul", "space-outline-list space-outline-root");
    if (root) list.append(branch(root));
    container.replaceChildren(list);
  }

  return { legend, outline };
})();
