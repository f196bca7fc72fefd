# Kernel files that tests drive themselves (a crash, a hang, a race): not test files of this suite.
collect_ignore_glob = ["kernels/*.cu", "emu/kernels/*.cu"]
