"""A kernel timed: the method, its statistics, its witness, and the CPU baseline."""
