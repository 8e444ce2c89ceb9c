// The interactive page's inbox panel: the user's OPEN items over the session's WebSocket
// (inbox-list), answered (inbox-answer: an APPROVAL's decision and comment, a QUESTION's option
// or text) or dismissed (inbox-dismiss) in place; inbox-item events keep it and its count fresh.
// An item's body is shown as sanitised Markdown (markdown.js), as on the inbox page.
"use strict";

window.InboxPanel = (function () {
  function button(text, onClick, className) {
    const node = document.createElement("button");
    node.type = "button";
    node.textContent = text;
    if (className) node.className = className;
    node.addEventListener("click", onClick);
    return node;
  }

  // `send(type, data, onReply)` sends a frame over the page's socket; `notice(text)` reports.
  function create(send, notice) {
    const $ = (id) => document.getElementById(id);
    const ui = {
      toggle: $("inbox-toggle"),
      count: $("inbox-count"),
      panel: $("inbox-panel"),
      items: $("inbox-panel-items"),
    };
    const open = new Map(); // item id -> item, the OPEN ones, oldest first

    function answer(item, value) {
      send("inbox-answer", { itemId: item.id, answer: value }, (frame) => {
        const answered = frame.data.item;
        open.delete(answered.id);
        render();
        const note = frame.data.delivered ? "." : " (not delivered: " + answered.originNote + ").";
        notice(answered.id + " answered" + note);
      });
    }

    function dismiss(item) {
      send("inbox-dismiss", { itemId: item.id }, () => {
        open.delete(item.id);
        render();
        notice(item.id + " dismissed.");
      });
    }

    function card(item) {
      const node = document.createElement("li");
      node.className = "inbox-item";
      node.dataset.item = item.id;
      node.dataset.kind = item.kind;
      const title = document.createElement("strong");
      title.textContent = item.title;
      // Posted by a process, or by a system client's run (the brain linker's approvals).
      const origin = document.createElement("a");
      const from = item.originProcessId || item.originRunId;
      origin.href = (item.originProcessId ? "/processes/" : "/runs/") + encodeURIComponent(from);
      origin.textContent = from;
      const facts = document.createElement("small");
      if (item.askedBy) {
        // A worker's question its parent posted: from the worker, through the parent.
        const asker = document.createElement("a");
        asker.href = "/processes/" + encodeURIComponent(item.askedBy);
        asker.textContent = item.askedBy;
        facts.append(" " + item.id + " · " + item.kind + " · from ", asker, ", through ", origin);
      } else {
        facts.append(" " + item.id + " · " + item.kind + " · from ", origin);
      }
      node.append(title, facts);
      if (item.body) {
        const body = document.createElement("div");
        body.className = "body";
        node.append(window.Markdown.into(body, item.body));
      }
      const buttons = document.createElement("div");
      buttons.className = "buttons";
      if (item.kind === "APPROVAL" || item.kind === "QUESTION") {
        const input = document.createElement("input");
        input.type = "text";
        input.placeholder = item.kind === "APPROVAL" ? "Comment (optional)" : "Your answer";
        input.setAttribute("aria-label", input.placeholder);
        node.append(input);
        const typed = () => input.value.trim();
        if (item.kind === "APPROVAL") {
          for (const [decision, label, style] of [["approve", "Approve", ""], ["reject", "Reject", "danger"]]) {
            const value = () => (typed() ? { decision, comment: typed() } : { decision });
            buttons.append(button(label, () => answer(item, value()), style));
          }
        } else {
          for (const option of item.options || []) {
            buttons.append(button(option, () => answer(item, { choice: option }), "secondary"));
          }
          buttons.append(button("Answer", () => typed() && answer(item, { text: typed() })));
        }
      }
      buttons.append(button("Dismiss", () => dismiss(item), "secondary"));
      node.append(buttons);
      return node;
    }

    function render() {
      ui.count.textContent = String(open.size);
      ui.toggle.dataset.count = String(open.size);
      ui.toggle.setAttribute("aria-label", "Inbox, " + open.size + " open items");
      const cards = Array.from(open.values()).map(card);
      if (!cards.length) {
        const empty = document.createElement("li");
        empty.className = "empty hint";
        empty.textContent = "No open items.";
        cards.push(empty);
      }
      ui.items.replaceChildren(...cards);
    }

    function load() {
      send("inbox-list", { status: "OPEN" }, (frame) => {
        open.clear();
        for (const item of frame.data.items.slice().reverse()) open.set(item.id, item);
        ui.toggle.disabled = false;
        render();
      });
    }

    function onItem(item) {
      if (item.status === "OPEN") open.set(item.id, item);
      else open.delete(item.id);
      render();
    }

    ui.toggle.addEventListener("click", () => {
      ui.panel.hidden = !ui.panel.hidden;
      ui.toggle.setAttribute("aria-expanded", String(!ui.panel.hidden));
      if (!ui.panel.hidden) load();
    });

    return { load, onItem };
  }

  return { create };
})();
