"""What a run tells: the check table, the kernel list, the JSON document, progress."""
