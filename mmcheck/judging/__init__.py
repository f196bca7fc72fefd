"""A launch judged: the comparison, Freivalds' check, the diagnosis, and how a case turned out."""
