"""Experiments: configuration, workloads, engines, the runner and what it writes."""
