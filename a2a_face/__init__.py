"""The Brain as A2A agents: every recipe marked `a2a` is an agent of each project that sees it,
its card at `/a2a/<project>/<recipe>/.well-known/agent-card.json`, its JSON-RPC endpoint at
`/a2a/<project>/<recipe>`. An A2A task is a think process, a follow-up message a steer, a
cancel a stop (docs/ecosystem.md)."""
