"""The front: the command line, its commands, a run's life and its workers, the settings."""
