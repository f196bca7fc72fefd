"""What a kernel file says: its spec block read into a KernelSpec, against the op and dtype tables."""
