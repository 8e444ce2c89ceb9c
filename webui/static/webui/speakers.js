// Who speaks in the interactive chat: the rules of webui/speakers.py (a test runs both on the
// same messages). Only the person's own words in their chat are a "you" bubble; a worker's
// goal, a [control: …] order, a child's report, an inbox answer passed on, an event and a
// thinking-space notice get their own label.
"use strict";

(function (root) {
  const TAGS = [
    [/^\[control: ([^\]\n]+)\]/, "control", (m) => "control: " + m[1]],
    [/^\[report from (tp_\d+)[^\]\n]*: (\w+)\]/, "report", (m) => "report of " + m[1] + ": " + m[2]],
    [/^\[inbox answer (inb_\d+)\]/, "inbox-answer", (m) => "inbox answer " + m[1]],
    [/^\[unblocked by ([^\]\n]+)\]/, "event", (m) => "event " + m[1]],
    [/^\[thinking: ([^\]\n]+)\]/, "space", (m) => "space: " + m[1]],
  ];

  // {kind, label} of one message; isChat: the process is the session's chat process; first:
  // the first user message seen of a worker (its goal).
  function speakerOf(role, text, processId, isChat, first) {
    if (role === "assistant") return { kind: "assistant", label: isChat ? "brain" : processId + " answers" };
    if (role === "tool") return { kind: "tool", label: "tool result" };
    if (role === "system") return { kind: "system", label: "system prompt" };
    for (const [pattern, kind, label] of TAGS) {
      const match = pattern.exec(text || "");
      if (match) return { kind, label: label(match) };
    }
    if (!isChat) return first ? { kind: "goal", label: "goal of " + processId } : { kind: "control", label: "steer" };
    return { kind: "person", label: "you" };
  }

  root.Speakers = { speakerOf };
  if (typeof module !== "undefined") module.exports = root.Speakers;
})(typeof window !== "undefined" ? window : globalThis);
