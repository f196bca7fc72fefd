"""A kernel compiled, and what every compile and child goes through: the sandbox, its processes, atomic writes."""
