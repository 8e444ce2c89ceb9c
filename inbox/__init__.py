"""The inbox: items a top-level process posts for its person (results to read, approvals,
questions), answered over the WebSocket, REST, the web UI, the CLI or the admin; an answer
becomes an INBOX_ANSWER pending message of the process that posted the item."""
