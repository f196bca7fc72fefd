// mmsandbox: runs a compiler in the sandbox (sandbox.h), built and called by sandbox.py.
//
// Usage: mmsandbox --protect LETTERS --memory BYTES --cpu SECONDS --wall SECONDS [--read PATH]... [--write PATH]...
//        -- ARGV...
// LETTERS: l (Landlock), s (seccomp), or - for neither.  A protection asked for that cannot be applied ends
// it with status 125 and a line on stderr saying why: a compile never runs less protected than promised.
// The compiler runs in a child, which this process waits for: past --wall seconds (0: no bound) it kills its
// process group, itself with it (children.py makes it lead one, and the compiler's stages inherit it), after a
// line "mmsandbox --wall SECONDS: ..." on stderr; otherwise it ends as the compiler ended.
#include "sandbox.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

struct Options {
    std::vector<std::string> reads, writes;
    std::string protect;
    rlim_t memory = 0, cpu = 0;
    unsigned wall = 0;
};

// The compile itself, in the child: limited, sandboxed, then the compiler; returns only where that failed.
int compile(Options& options, char** argv) {
    using namespace mmsandbox;
    if (options.memory) limit(RLIMIT_AS, options.memory);
    if (options.cpu) limit(RLIMIT_CPU, options.cpu);
    options.writes.push_back("/dev/null");
    if (options.protect.find('l') != std::string::npos) {
        std::string failed = restrict_files(options.reads, options.writes, true);
        if (!failed.empty()) {
            fprintf(stderr, "mmsandbox: %s\n", failed.c_str());
            return 125;
        }
    }
    if (options.protect.find('s') != std::string::npos) {
        Program filter;
        std::string failed = build_filter(compiler_allowed(), SCMP_ACT_ERRNO(EPERM), filter);
        if (failed.empty()) failed = install(filter);
        if (!failed.empty()) {
            fprintf(stderr, "mmsandbox: %s\n", failed.c_str());
            return 125;
        }
    }
    execvp(argv[0], argv);
    fprintf(stderr, "mmsandbox: cannot run %s: %s\n", argv[0], strerror(errno));
    return 127;
}

double now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// The child's wait status, waited for at most ``wall`` seconds (0: for ever) with SIGCHLD blocked in ``chld``;
// past that the process group is killed, this process with it.
int wait_bounded(pid_t child, unsigned wall, const sigset_t& chld) {
    double deadline = now() + wall;
    for (;;) {
        int status;
        if (waitpid(child, &status, WNOHANG) == child) return status;
        double left = deadline - now();
        if (wall && left <= 0) {
            fprintf(stderr, "mmsandbox --wall %u: the compile did not end within %u s; its processes are killed\n",
                    wall, wall);
            fflush(stderr);
            kill(0, SIGKILL);
        }
        timespec slice{time_t(left), long((left - double(time_t(left))) * 1e9)};
        sigtimedwait(&chld, nullptr, wall ? &slice : nullptr);
    }
}

// This process ended as the child did: with its exit status, or by its signal.
int end_as(int status) {
    if (!WIFSIGNALED(status)) return WEXITSTATUS(status);
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    raise(sig);
    return 128 + sig;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    int i = 1;
    for (; i + 1 < argc && strcmp(argv[i], "--") != 0; i += 2) {
        std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--read") options.reads.push_back(value);
        else if (flag == "--write") options.writes.push_back(value);
        else if (flag == "--protect") options.protect = value;
        else if (flag == "--memory") options.memory = strtoull(value.c_str(), nullptr, 10);
        else if (flag == "--cpu") options.cpu = strtoull(value.c_str(), nullptr, 10);
        else if (flag == "--wall") options.wall = unsigned(strtoul(value.c_str(), nullptr, 10));
        else break;
    }
    if (i >= argc - 1 || strcmp(argv[i], "--") != 0) {
        fprintf(stderr, "mmsandbox: usage: mmsandbox [options] -- ARGV...\n");
        return 125;
    }
    // The group killed past --wall is this process's own: children.py makes it so, and a caller that did not
    // (a shell) must not lose its own group to it.
    if (getpgrp() != getpid()) setpgid(0, 0);
    mmsandbox::limit(RLIMIT_CORE, 0);
    mmsandbox::limit(RLIMIT_FSIZE, rlim_t(1) << 30);
    // SIGCHLD blocked before the fork, so that a child that ends at once is not missed by the wait.
    sigset_t chld, before;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &before);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "mmsandbox: cannot start the compiler: %s\n", strerror(errno));
        return 125;
    }
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &before, nullptr);
        _exit(compile(options, argv + i + 1));
    }
    return end_as(wait_bounded(child, options.wall, chld));
}
