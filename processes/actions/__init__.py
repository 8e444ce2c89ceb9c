"""Domain operations on processes, one module per use case: create, lifecycle calls, steer,
parent reports, pending messages, tool-health diagnosis. Interfaces call these and nothing else."""
