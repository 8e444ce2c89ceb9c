"""Observability kernel: OpenTelemetry traces (tracing), Prometheus metrics (metrics) and the
context of the turn running in this thread, which JSON logs carry (logs). It imports no app:
the lane, the capabilities, the tool kernel and the triggers call it."""
