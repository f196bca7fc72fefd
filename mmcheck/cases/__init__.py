"""A case made ready to launch: its shape, its inputs, its buffers and arguments, its reference."""
