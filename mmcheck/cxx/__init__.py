"""The C++ front end: libclang reading a user's kernel file, always in a sandboxed child process (child.py), never
in mmcheck's own.  The file is code from someone else: what libclang reads of it and of what it includes is
limited to the compile's file rules (the system, the toolchain, the kernel's folder), to a time and a memory
bound, and an LLVM abort or a hang ends the child, not the run.  client.py asks the child; what comes back is
plain data (JSON).  front.py is what the child's readers share: the parse and libclang's functions the Python
bindings do not wrap."""
