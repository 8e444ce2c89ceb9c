"""The WebSocket protocol of docs/protocol.md as pydantic models: `inbound` (the frames a client
sends) and `outbound` (every reply and event the Brain sends, and the objects in them)."""
