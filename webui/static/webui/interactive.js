// Interactive mode: a WebSocket session (clientType "web", no local tools) speaking
// docs/protocol.md — chat with streamed replies (each message labelled by who speaks,
// speakers.js; older ones folded; an answer plain text while it streams, then sanitised
// Markdown, markdown.js), steer, pause/resume/stop, process-status events, the inbox
// panel (inbox-list, inbox-answer, inbox-dismiss), task trees (task-tree events, drawn by
// tasktree.js), Undo (process-undo: the chat's last turn is taken back, its message put back
// into the input) and the thinking-space branch map (space-get on bind, redrawn from each
// space-state event, drawn and controlled by spacemap.js; "Start a thinking space" sends
// space-suggest). Which session a visit binds: one asked for (?session=, or the process's own
// chat for ?process=), else the tab's, else the person's latest web chat that can go on (open
// or suspended, any browser of theirs; the server names it), else a new one; "New chat"
// (?new=1) and "New session" make a new one on purpose (docs/web-ui.md).
"use strict";

(function () {
  // Which statuses allow a call; mirrors processes/states.py so buttons are only offered when
  // the Brain would accept them (it still decides, and a 409 is shown as a notice).
  const ALLOWED = {
    "process-pause": ["RUNNING", "IDLE", "BLOCKED"],
    "process-resume": ["PAUSED", "SUSPENDED"],
    "process-stop": ["INIT", "RUNNING", "IDLE", "BLOCKED", "PAUSED", "SUSPENDED"],
    "process-steer": ["RUNNING", "IDLE", "BLOCKED", "PAUSED"],
    "process-undo": ["IDLE", "PAUSED", "BLOCKED"],
  };

  const root = document.getElementById("interactive");
  const $ = (id) => document.getElementById(id);
  const ui = {
    connection: $("connection"),
    project: $("project"),
    projectForm: $("project-form"),
    log: $("chat-log"),
    chatForm: $("chat-form"),
    chatInput: $("chat-input"),
    chatSend: $("chat-send"),
    chatUndo: $("chat-undo"),
    select: $("process-select"),
    status: $("process-status"),
    pending: $("process-pending"),
    closeReason: $("process-close-reason"),
    createForm: $("create-form"),
    recipe: $("create-recipe"),
    goal: $("create-goal"),
    steerForm: $("steer-form"),
    steerInput: $("steer-input"),
    steerSend: $("steer-send"),
    notice: $("notice"),
    events: $("events"),
    commands: Array.from(document.querySelectorAll("[data-command]")),
    tree: $("interactive-tree"),
    treeProcess: $("interactive-tree-process"),
    workflowForm: $("workflow-form"),
    workflowId: $("workflow-id"),
    workflowInput: $("workflow-input"),
  };

  let socket = null;
  let counter = 0;
  let chatProcessId = null;
  let boundAt = 0;
  let replaying = false; // the missed events of a resume are being shown
  const replies = new Map(); // request id -> callback(frame)
  const processes = new Map(); // process id -> {status, closeReason, goal}
  const streaming = new Map(); // process id -> the assistant bubble being streamed into
  const trees = new Map(); // process id -> its latest task tree
  let treeShown = null; // the process whose tree is drawn
  const inbox = window.InboxPanel.create(send, notice);
  const spaces = window.SpaceMap.create(
    {
      card: $("space-card"),
      revision: $("space-revision"),
      map: $("space-map"),
      legend: $("space-legend"),
      outline: $("space-outline"),
      detail: $("space-detail"),
      controls: $("space-controls"),
      splitForm: $("space-split-form"),
      splitInput: $("space-split-title"),
      split: $("space-split"),
      renameForm: $("space-rename-form"),
      renameInput: $("space-rename-title"),
      rename: $("space-rename"),
      checkpoint: $("space-checkpoint"),
      returnButton: $("space-return"),
      retry: $("space-retry"),
      open: $("space-open"),
      firstForm: $("space-first-form"),
      firstInput: $("space-first-text"),
      currentSession: () => root.dataset.session || null,
      connected: () => Boolean(socket && socket.readyState === WebSocket.OPEN),
    },
    send,
    notice,
    openNodeSession,
  );

  // --- helpers -------------------------------------------------------------------------------

  function setConnection(state, text) {
    ui.connection.dataset.state = state;
    ui.connection.textContent = text;
    root.dataset.connection = state;
  }

  function notice(text, isError) {
    ui.notice.textContent = text;
    ui.notice.classList.toggle("error", Boolean(isError));
  }

  function logEvent(text) {
    const item = document.createElement("li");
    item.textContent = new Date().toLocaleTimeString() + " " + text;
    ui.events.prepend(item);
    while (ui.events.children.length > 50) ui.events.lastChild.remove();
  }

  // onReply gets the reply; with wantsErrors it gets an error frame too (else a notice shows it).
  function send(type, data, onReply, wantsErrors) {
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      notice("Not connected.", true);
      return;
    }
    counter += 1;
    const id = "w" + counter;
    if (onReply) replies.set(id, { onReply, wantsErrors: Boolean(wantsErrors) });
    socket.send(JSON.stringify({ type, id, data: data || {} }));
  }

  // A message of the log, labelled by who speaks (speakers.js): the person's own words in
  // the chat are the only "you" bubble (class role-user); the rest say what they are.
  const spoke = new Set(); // the processes whose first user message (a worker's goal) was seen
  function bubble(role, text, processId) {
    const isChat = !processId || processId === chatProcessId;
    const first = role === "user" && !spoke.has(processId);
    if (role === "user") spoke.add(processId);
    const speaker = window.Speakers.speakerOf(role, text, processId, isChat, first);
    const item = document.createElement("li");
    const roleClass = speaker.kind === "person" ? "role-user" : role === "assistant" ? "role-assistant" : "role-other";
    item.className = "message " + roleClass + " speaker-" + speaker.kind;
    item.dataset.speaker = speaker.kind;
    if (processId) item.dataset.process = processId;
    const label = document.createElement("span");
    label.className = "role";
    label.textContent = speaker.label;
    const body = document.createElement("div");
    body.className = "text";
    // An answer is Markdown (sanitised, markdown.js); the rest is shown as it was written.
    if (role === "assistant" && text) window.Markdown.into(body, text);
    else body.textContent = text;
    if (speaker.kind === "control") {
      // An order's wording is for the model; it is there, folded, for the curious.
      const fold = document.createElement("details");
      fold.className = "fold";
      const summary = document.createElement("summary");
      summary.textContent = "the order";
      fold.append(summary, body);
      item.append(label, fold);
    } else {
      item.append(label, body);
    }
    ui.log.append(item);
    foldOldTurns();
    ui.log.scrollTop = ui.log.scrollHeight;
    return item;
  }

  // A long chat keeps its last KEEP_OPEN messages open; the older ones fold behind one line
  // ("N earlier messages"), which opens them again.
  const KEEP_OPEN = 12;
  let unfolded = false; // the person opened the earlier messages: they stay open
  function foldOldTurns() {
    if (unfolded) return;
    const open = Array.from(ui.log.children).filter((item) => item.classList.contains("message") && !item.hidden);
    if (open.length <= KEEP_OPEN) return;
    open.slice(0, open.length - KEEP_OPEN).forEach((item) => {
      item.hidden = true;
      item.dataset.folded = "true";
    });
    let toggle = ui.log.querySelector(".fold-toggle");
    if (!toggle) {
      toggle = document.createElement("li");
      toggle.className = "fold-toggle";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "link";
      button.addEventListener("click", () => {
        ui.log.querySelectorAll(".message[data-folded]").forEach((item) => {
          item.hidden = false;
          delete item.dataset.folded;
        });
        toggle.remove();
        unfolded = true;
      });
      toggle.append(button);
      ui.log.prepend(toggle);
    }
    const count = ui.log.querySelectorAll(".message[data-folded]").length;
    toggle.firstChild.textContent = "Show " + count + " earlier message" + (count === 1 ? "" : "s");
  }

  // --- processes -------------------------------------------------------------------------------

  function remember(process) {
    const known = processes.get(process.id) || {};
    processes.set(process.id, { ...known, ...process });
    let option = ui.select.querySelector('option[value="' + CSS.escape(process.id) + '"]');
    if (!option) {
      option = document.createElement("option");
      option.value = process.id;
      ui.select.append(option);
    }
    const entry = processes.get(process.id);
    const name = process.id === chatProcessId ? "chat" : entry.goal || entry.recipe || "";
    option.textContent = process.id + (name ? " — " + name.slice(0, 40) : "") + " (" + entry.status + ")";
    if (ui.select.value === process.id) showSelected();
  }

  function selected() {
    return processes.get(ui.select.value) || null;
  }

  function showSelected() {
    const process = selected();
    const status = process ? process.status : "";
    ui.status.textContent = status || "—";
    ui.status.className = "status" + (status ? " status-" + status : "");
    ui.closeReason.textContent = process && status === "CLOSED" && process.closeReason ? process.closeReason : "";
    root.dataset.processStatus = status;
    const open = socket && socket.readyState === WebSocket.OPEN;
    for (const button of ui.commands) {
      button.disabled = !open || !ALLOWED[button.dataset.command].includes(status);
    }
    ui.steerSend.disabled = !open || !ALLOWED["process-steer"].includes(status);
    if (process && trees.has(process.id)) showTree(process.id);
    const chat = chatProcessId ? processes.get(chatProcessId) : null;
    ui.chatUndo.disabled = !open || !chat || !ALLOWED["process-undo"].includes(chat.status);
  }

  function setProcessStatus(data) {
    if (!processes.has(data.processId)) return;
    // A pending count read at steer time is stale once the process moves on.
    if (data.processId === ui.select.value) ui.pending.textContent = "";
    remember({ id: data.processId, status: data.status, closeReason: data.closeReason || null });
    if (data.processId === chatProcessId) showSelected();
    if (!replaying && data.processId === chatProcessId && data.status === "CLOSED") showChatClosed(processes.get(chatProcessId));
  }

  // An undone turn leaves the log: the process's last user message with the undone text, and
  // everything the process said after it.
  function dropUndone(processId, text) {
    const mine = Array.from(ui.log.querySelectorAll(".message")).filter(
      (item) => item.dataset.process === processId,
    );
    let from = -1;
    for (let index = mine.length - 1; index >= 0; index -= 1) {
      const item = mine[index];
      if (item.classList.contains("role-user") && item.querySelector(".text").textContent === text) {
        from = index;
        break;
      }
    }
    if (from >= 0) mine.slice(from).forEach((item) => item.remove());
  }

  // --- task trees ------------------------------------------------------------------------------

  // The selected process's tree when it has one, else the one that changed last.
  function showTree(processId) {
    treeShown = processId;
    ui.treeProcess.textContent = "of " + processId;
    ui.tree.dataset.process = processId;
    window.TaskTree.render(ui.tree, trees.get(processId), {
      processUrl: (id) => "/processes/" + encodeURIComponent(id),
    });
  }

  function onTaskTree(data) {
    trees.set(data.processId, data.tree);
    const selectedHasTree = trees.has(ui.select.value);
    if (data.processId === treeShown || data.processId === ui.select.value || !selectedHasTree) {
      showTree(data.processId);
    }
  }

  // --- events ----------------------------------------------------------------------------------

  function onChatDelta(data) {
    let item = streaming.get(data.processId);
    if (!item) {
      item = bubble("assistant", "", data.processId);
      item.classList.add("streaming");
      item.dataset.deltas = "0";
      streaming.set(data.processId, item);
    }
    item.querySelector(".text").textContent += data.text;
    item.dataset.deltas = String(Number(item.dataset.deltas) + 1);
    ui.log.scrollTop = ui.log.scrollHeight;
  }

  function onChatMessage(data) {
    if (data.role === "assistant") {
      const item = streaming.get(data.processId) || bubble("assistant", "", data.processId);
      streaming.delete(data.processId);
      item.classList.remove("streaming");
      // The streamed plain text gives way to the complete answer as Markdown.
      window.Markdown.into(item.querySelector(".text"), data.text);
      item.dataset.final = "true";
      return;
    }
    if (data.role === "user") {
      // The message typed here was shown at once; the stored copy confirms it.
      for (const item of ui.log.querySelectorAll(".message.role-user.unconfirmed")) {
        if (item.querySelector(".text").textContent === data.text) {
          item.classList.remove("unconfirmed");
          return;
        }
      }
    }
    bubble(data.role, data.text, data.processId);
  }

  // A compaction folded the chat's oldest turns (or was undone): one line in the log, the
  // summary behind it, and a button that undoes it (`process-uncompact`).
  function onConversationFolded(data) {
    const compaction = data.compaction || {};
    const item = document.createElement("li");
    item.className = "message fold-line" + (compaction.undoneAt ? " undone" : "");
    item.dataset.compaction = compaction.id;
    item.dataset.process = data.processId;
    const fold = document.createElement("details");
    fold.className = "fold";
    const summary = document.createElement("summary");
    summary.textContent = compaction.undoneAt
      ? "summary " + compaction.id + " undone: the earlier turns are sent again"
      : compaction.turns + " earlier turn" + (compaction.turns === 1 ? "" : "s") + " summarised";
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = compaction.summary;
    fold.append(summary, body);
    item.append(fold);
    if (!compaction.undoneAt) {
      const undo = document.createElement("button");
      undo.type = "button";
      undo.className = "uncompact";
      undo.textContent = "Undo this summary";
      undo.addEventListener("click", () => send("process-uncompact", { processId: data.processId }));
      item.append(undo);
    }
    ui.log.append(item);
  }

  function onEvent(frame) {
    const data = frame.data || {};
    switch (frame.event) {
      case "chat-delta":
        onChatDelta(data);
        break;
      case "chat-message":
        onChatMessage(data);
        break;
      case "process-status":
        setProcessStatus(data);
        logEvent(
          data.processId + " → " + data.status + (data.closeReason ? " (" + data.closeReason + ")" : ""),
        );
        break;
      case "task-tree":
        logEvent(data.processId + " task tree updated");
        onTaskTree(data);
        break;
      case "notification":
        logEvent((data.level ? data.level + ": " : "") + data.text);
        break;
      case "conversation-folded":
        onConversationFolded(data);
        break;
      case "run": {
        // A run of this person started or finished (their own chat turns too).
        const run = data.run || {};
        const trigger = (run.trigger || {}).type;
        logEvent(run.id + " " + trigger + " " + run.status + (run.error ? ": " + run.error : ""));
        break;
      }
      case "session-status":
        logEvent("session " + data.status);
        // A reload's old socket may be let go just after the new one resumed the session:
        // that late disconnect suspends it, so the page resumes it once more.
        if (!replaying && data.status === "SUSPENDED" && Date.now() - boundAt < 5000 && root.dataset.session) {
          resumeSession(root.dataset.session);
        }
        break;
      case "inbox-item": {
        // News in the events list, and the inbox panel's items and count follow it.
        const item = data.item || {};
        logEvent("inbox " + item.id + " " + item.status + ": " + item.title);
        const news = document.getElementById("inbox-news");
        if (news && item.status === "OPEN") news.textContent = "new: " + item.id + " " + item.title;
        inbox.onItem(item);
        break;
      }
      case "space-state":
        logEvent("space " + data.space.id + " revision " + data.space.revision);
        spaces.update(data.space);
        break;
      case "tool-call":
        // The web client brings no local tools; say so instead of leaving the lane waiting.
        send("tool-result", { callId: data.callId, ok: false, error: "the web client has no local tools" });
        break;
      default:
        logEvent(frame.event);
    }
  }

  function onFrame(frame) {
    if (frame.type === "event") {
      onEvent(frame);
      return;
    }
    const callback = frame.replyTo ? replies.get(frame.replyTo) : null;
    if (frame.replyTo) replies.delete(frame.replyTo);
    if (frame.type === "error" && !(callback && callback.wantsErrors)) {
      const error = frame.data || {};
      notice(error.code + " " + error.error + ": " + error.message, true);
      return;
    }
    if (callback) callback.onReply(frame);
  }

  // --- session ---------------------------------------------------------------------------------

  function loadProcesses() {
    send("process-list", {}, (frame) => frame.data.processes.forEach(remember));
    const focus = root.dataset.focus;
    if (focus) {
      send("process-get", { processId: focus }, (frame) => {
        remember(frame.data.process);
        ui.select.value = focus;
        showSelected();
      });
    }
  }

  // The tab's session survives a reload: its id is kept in sessionStorage (per tab: a tab
  // that moved to another chat keeps it) and the page resumes it with the browser's id as the
  // machine id. Leaving suspends it (the web client's default onDisconnect), it is not stopped.
  const STORED = "vancetope.interactive.session";

  function browserId() {
    let id = localStorage.getItem("vancetope.browser");
    if (!id) {
      const random = window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2) + Date.now();
      id = "browser-" + random;
      localStorage.setItem("vancetope.browser", id);
    }
    return id;
  }

  function storedSession() {
    try {
      return JSON.parse(sessionStorage.getItem(STORED) || "null");
    } catch (error) {
      return null;
    }
  }

  function showChatClosed(process) {
    const reason = process.closeReason ? " (" + process.closeReason + ")" : "";
    notice("The chat process " + process.id + " is CLOSED" + reason + ": start a New session to chat again.", true);
    ui.chatSend.disabled = true;
  }

  function bound(session, how) {
    boundAt = Date.now();
    chatProcessId = session.chatProcessId;
    if (session.projectId && ui.project.querySelector('option[value="' + CSS.escape(session.projectId) + '"]')) {
      ui.project.value = session.projectId;
    }
    root.dataset.session = session.id;
    root.dataset.chatProcess = chatProcessId;
    root.dataset.sessionHow = how;
    sessionStorage.setItem(STORED, JSON.stringify({ sessionId: session.id, project: ui.project.value }));
    setConnection("open", (how === "resumed" ? "resumed · " : "connected · ") + session.id);
    ui.select.value = chatProcessId;
    ui.chatSend.disabled = false;
    showSelected();
    loadProcesses();
    inbox.load();
    if (ui.recipe) loadRecipes();
    // The space of this session's node, if it is one (else a 404, not shown, and the chat
    // offers to start one).
    send("space-get", {}, (frame) => {
      const isNode = frame.type === "space";
      if (isNode) spaces.update(frame.data.space);
      $("space-start-row").hidden = isNode;
    }, true);
  }

  // The branch map's explicit "Open conversation": this tab moves to that node's session
  // (resumed like a reload; a node's session has the machine id of the one it branched from).
  function openNodeSession(sessionId) {
    sessionStorage.setItem(STORED, JSON.stringify({ sessionId, project: ui.project.value }));
    location.reload();
  }

  function createSession() {
    send(
      "session-create",
      { clientType: "web", projectId: ui.project.value, fingerprint: { machineId: browserId() } },
      (frame) => {
        remember({ id: frame.data.chatProcessId, status: "IDLE" });
        bound(frame.data.session, "created");
      },
    );
  }

  // `otherwise`: the chat to go back into if this one cannot be (the tab's own was closed
  // meanwhile: the person's latest), before a new one is made.
  function resumeSession(sessionId, attempt = 1, otherwise = "") {
    send(
      "session-resume",
      { sessionId, fingerprint: { machineId: browserId() }, sinceSeq: 0 },
      (frame) => {
        if (frame.type === "error" && frame.data.error === "session-changed" && attempt < 4) {
          // The session changed while it was bound (a reloaded page's old socket applying its
          // disconnect just then): the Brain asks to try again, so do, before giving it up.
          setTimeout(() => resumeSession(sessionId, attempt + 1, otherwise), 250 * attempt);
          return;
        }
        if (frame.type === "error") {
          // Closed meanwhile: the latest chat instead if there is another, else a new one;
          // and say why.
          sessionStorage.removeItem(STORED);
          if (otherwise) {
            notice("Session " + sessionId + " could not be resumed (" + frame.data.message + "); back in " + otherwise + ".");
            resumeSession(otherwise);
            return;
          }
          notice("Session " + sessionId + " could not be resumed (" + frame.data.message + "); a new one was started.");
          createSession();
          return;
        }
        frame.data.processes.forEach(remember);
        bound(frame.data.session, "resumed");
        // The transcript so far; tool calls of then are not answered again.
        replaying = true;
        try {
          frame.data.missed.filter((event) => event.event !== "tool-call").forEach(onEvent);
        } finally {
          replaying = false;
        }
        const chat = processes.get(chatProcessId);
        if (chat && chat.status === "CLOSED") showChatClosed(chat);
      },
      true,
    );
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + root.dataset.socket);
    setConnection("connecting", "connecting…");
    socket.addEventListener("open", () => {
      const asked = root.dataset.resume;
      const fresh = root.dataset.new === "true";
      const project = root.dataset.project;
      let remembered = fresh ? null : storedSession();
      // A project asked for (?project=): the tab's own chat only if it is in that project.
      if (remembered && project && remembered.project !== project) remembered = null;
      if (fresh || asked) {
        // Asked for once (New chat, or a chat of the sessions page): a reload resumes it.
        const url = new URL(location.href);
        url.searchParams.delete("new");
        url.searchParams.delete("session");
        history.replaceState(null, "", url.pathname + url.search + url.hash);
      }
      root.dataset.new = "false";
      root.dataset.resume = "";
      // The person's latest web chat that can go on (the server's pick, webui/views.py): a
      // plain visit goes back into it rather than leaving one more idle chat behind.
      const latest = fresh ? "" : root.dataset.latest;
      root.dataset.latest = "";
      if (asked) {
        resumeSession(asked);
      } else if (remembered && remembered.sessionId) {
        if (remembered.project) ui.project.value = remembered.project;
        resumeSession(remembered.sessionId, 1, latest !== remembered.sessionId ? latest : "");
      } else if (latest) {
        resumeSession(latest);
      } else {
        createSession();
      }
    });
    socket.addEventListener("message", (message) => onFrame(JSON.parse(message.data)));
    socket.addEventListener("close", (closed) => {
      setConnection("closed", "disconnected" + (closed.code === 4401 ? " (log in again)" : ""));
      ui.chatSend.disabled = true;
      showSelected();
    });
  }

  function reconnectFresh() {
    chatProcessId = null;
    processes.clear();
    streaming.clear();
    replies.clear();
    trees.clear();
    ui.select.replaceChildren();
    ui.log.replaceChildren();
    connect();
  }

  // New session: the old one is closed (its processes stop), then a new one is opened.
  function newSession(event) {
    event.preventDefault();
    sessionStorage.removeItem(STORED);
    root.dataset.new = "true";
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      reconnectFresh();
      return;
    }
    const old = socket;
    send("session-close", {}, () => {
      old.close();
      reconnectFresh();
    }, true);
  }

  // --- user actions ----------------------------------------------------------------------------

  ui.chatForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = ui.chatInput.value.trim();
    if (!text) return;
    bubble("user", text, chatProcessId).classList.add("unconfirmed");
    ui.chatInput.value = "";
    send("chat", { text }, (frame) => {
      if (frame.data.pending > 1) notice("Queued behind " + (frame.data.pending - 1) + " message(s).");
    });
  });

  ui.chatUndo.addEventListener("click", () => {
    if (!chatProcessId) return;
    send("process-undo", { processId: chatProcessId }, (frame) => {
      const undone = frame.data.undone;
      remember(frame.data.process);
      dropUndone(chatProcessId, undone.text);
      ui.chatInput.value = undone.text;
      ui.chatInput.focus();
      const parts = ["Undone: your message #" + undone.seq + " (" + undone.messages + " messages)"];
      if (undone.stoppedProcesses.length) parts.push("stopped " + undone.stoppedProcesses.join(", "));
      if (undone.dismissedItems.length) parts.push("dismissed " + undone.dismissedItems.join(", "));
      undone.notUndone.forEach((note) => parts.push("not undone: " + note.text));
      notice(parts.join("; ") + ".");
      logEvent(chatProcessId + " undo of message #" + undone.seq);
    });
  });

  ui.chatInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      ui.chatForm.requestSubmit();
    }
  });

  ui.steerForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const process = selected();
    const message = ui.steerInput.value.trim();
    if (!process || !message) return;
    send("process-steer", { processId: process.id, message }, (frame) => {
      ui.steerInput.value = "";
      ui.pending.textContent = "pending: " + frame.data.pending;
      notice("Steered " + frame.data.processId + " (" + frame.data.pending + " pending).");
    });
  });

  for (const button of ui.commands) {
    button.addEventListener("click", () => {
      const process = selected();
      if (!process) return;
      send(button.dataset.command, { processId: process.id }, (frame) => {
        remember(frame.data.process);
        notice(frame.type + ": " + frame.data.process.id + " is " + frame.data.process.status + ".");
      });
    });
  }

  // workflow-start runs the workflow in this session: its process joins the list, selected.
  if (ui.workflowForm) {
    ui.workflowForm.addEventListener("submit", (event) => {
      event.preventDefault();
      let input;
      try {
        input = JSON.parse(ui.workflowInput.value || "{}");
      } catch (error) {
        notice("The input is not JSON: " + error.message, true);
        return;
      }
      send("workflow-start", { workflowId: ui.workflowId.value, input }, (frame) => {
        remember(frame.data.process);
        ui.select.value = frame.data.process.id;
        showSelected();
        notice("Started " + frame.data.process.id + " (run " + frame.data.runId + ").");
      });
    });
  }

  // New process: one of the project's recipes with a goal, created in this session
  // (process-create); it joins the list, selected.
  function loadRecipes() {
    send("recipes-list", {}, (frame) => {
      const options = frame.data.recipes
        .filter((recipe) => recipe.category !== "service")
        .map((recipe) => {
          const option = document.createElement("option");
          option.value = recipe.name;
          option.textContent = recipe.name + " (" + recipe.engine + ")";
          return option;
        });
      ui.recipe.replaceChildren(...options);
      if (ui.recipe.querySelector('option[value="deep-think"]')) ui.recipe.value = "deep-think";
    });
  }

  if (ui.createForm) {
    ui.createForm.addEventListener("submit", (event) => {
      event.preventDefault();
      send("process-create", { recipe: ui.recipe.value, goal: ui.goal.value.trim() }, (frame) => {
        remember(frame.data.process);
        ui.select.value = frame.data.process.id;
        ui.goal.value = "";
        showSelected();
        notice("Created " + frame.data.process.id + " (" + frame.data.process.recipe + ").");
      });
    });
  }

  ui.select.addEventListener("change", () => {
    ui.pending.textContent = "";
    showSelected();
  });
  ui.projectForm.addEventListener("submit", newSession);

  // Start a thinking space: this chat becomes its root and its agent suggests the first
  // branches (space-suggest); the map shows at once, the suggestions as they come.
  $("space-start").addEventListener("click", () => {
    send("space-suggest", {}, (frame) => {
      spaces.update(frame.data.space);
      $("space-start-row").hidden = true;
      notice("Started thinking space " + frame.data.space.id + "; the Brain suggests its first branches.");
    });
  });


  connect();
})();
