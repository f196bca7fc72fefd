"""A kernel run: the runner that drives a backend, one launch, the race detector's schedules and verdicts."""
