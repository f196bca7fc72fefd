// mmsandbox: runs a compiler in the sandbox (sandbox.h), built and called by sandbox.py.
//
// Usage: mmsandbox --protect LETTERS --memory BYTES --cpu SECONDS [--read PATH]... [--write PATH]... -- ARGV...
// LETTERS: l (Landlock), s (seccomp), or - for neither.  A protection asked for that cannot be applied ends
// it with status 125 and a line on stderr saying why: a compile never runs less protected than promised.
#include "sandbox.h"

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    std::vector<std::string> reads, writes;
    std::string protect;
    rlim_t memory = 0, cpu = 0;
    int i = 1;
    for (; i + 1 < argc && strcmp(argv[i], "--") != 0; i += 2) {
        std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--read") reads.push_back(value);
        else if (flag == "--write") writes.push_back(value);
        else if (flag == "--protect") protect = value;
        else if (flag == "--memory") memory = strtoull(value.c_str(), nullptr, 10);
        else if (flag == "--cpu") cpu = strtoull(value.c_str(), nullptr, 10);
        else break;
    }
    if (i >= argc - 1 || strcmp(argv[i], "--") != 0) {
        fprintf(stderr, "mmsandbox: usage: mmsandbox [options] -- ARGV...\n");
        return 125;
    }
    using namespace mmsandbox;
    limit(RLIMIT_CORE, 0);
    limit(RLIMIT_FSIZE, rlim_t(1) << 30);
    if (memory) limit(RLIMIT_AS, memory);
    if (cpu) limit(RLIMIT_CPU, cpu);
    writes.push_back("/dev/null");
    if (protect.find('l') != std::string::npos) {
        std::string failed = restrict_files(reads, writes, true);
        if (!failed.empty()) {
            fprintf(stderr, "mmsandbox: %s\n", failed.c_str());
            return 125;
        }
    }
    if (protect.find('s') != std::string::npos) {
        Program filter;
        std::string failed = build_filter(compiler_allowed(), SCMP_ACT_ERRNO(EPERM), filter);
        if (failed.empty()) failed = install(filter);
        if (!failed.empty()) {
            fprintf(stderr, "mmsandbox: %s\n", failed.c_str());
            return 125;
        }
    }
    execvp(argv[i + 1], argv + i + 1);
    fprintf(stderr, "mmsandbox: cannot run %s: %s\n", argv[i + 1], strerror(errno));
    return 127;
}
