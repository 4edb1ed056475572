/* fencecall's launcher: in one exec, what a sh, util-linux's prlimit and nsenter did one
 * after the other before a limited or sandboxed program; and the holder of a conversation's
 * network namespace, in place of setpriv, a bwrap and a cat. Built by setup.py beside
 * _launch.py; without it fencecall starts those programs as before.
 *
 *     fencecall-launch [--join=CGROUP.PROCS]... [--fsize=N] [--nproc=N] [--as=N]
 *                      [--userns=FD --netns=FD] -- PROGRAM [ARGUMENT...]
 *
 * Writes its pid into each cgroup.procs (so every process PROGRAM starts is in the groups),
 * sets each rlimit (soft and hard, as prlimit does), enters the user and network namespaces
 * that the descriptors FD refer to with its own uid and gid (nsenter --preserve-credentials)
 * and closes them, so they do not reach PROGRAM; then execs PROGRAM. Exits 126 when a step
 * fails, 127 when PROGRAM cannot run.
 *
 *     fencecall-launch --hold LABEL PARENT-PID
 *
 * The holder: SIGKILLed when its parent dies, and exits at once unless its parent is
 * PARENT-PID (it died before that was set). It makes a user namespace (its uid and gid
 * mapped to themselves, setgroups denied, as bwrap --unshare-user does) and a network
 * namespace it owns, brings the loopback up, then copies its stdin to its stdout until the
 * end of stdin: an echo says the namespaces are ready. LABEL is a mark in its argv, for
 * whoever looks for holders; it is not used here. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *me = "fencecall-launch";

static int fail(const char *what, const char *detail) {
    dprintf(2, "%s: %s %s: %s\n", me, what, detail, strerror(errno));
    return 126;
}

/* Write TEXT to the file at PATH; 0, or -1 with errno set. */
static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t length = strlen(text);
    ssize_t written = write(fd, text, length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == (ssize_t)length ? 0 : -1;
}

/* A whole number of the command line, or -1 with errno set. */
static long long number(const char *text) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno == 0 && (end == text || *end != '\0' || value < 0))
        errno = EINVAL;
    return errno ? -1 : value;
}

static int set_limit(int resource, const char *value) {
    long long n = number(value);
    struct rlimit limit = {(rlim_t)n, (rlim_t)n};
    if (n < 0 || setrlimit(resource, &limit) != 0)
        return fail("cannot set the limit", value);
    return 0;
}

/* Enter the user and network namespaces of USER and NET, then close both. The network one
 * first, while this process still has the rights it had outside; the user one first if that
 * is refused (as nsenter does). */
static int enter(int user, int net) {
    if (setns(net, CLONE_NEWNET) != 0) {
        if (setns(user, CLONE_NEWUSER) != 0 || setns(net, CLONE_NEWNET) != 0)
            return fail("cannot enter", "the namespaces");
    } else if (setns(user, CLONE_NEWUSER) != 0) {
        return fail("cannot enter", "the user namespace");
    }
    close(user);
    close(net);
    return 0;
}

static int launch(int argc, char **argv) {
    char pid[32];
    int user = -1, net = -1, at = 1, code = 0;
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    for (; at < argc && strcmp(argv[at], "--") != 0 && code == 0; at++) {
        const char *arg = argv[at], *value = strchr(arg, '=');
        value = value != NULL ? value + 1 : "";
        if (strncmp(arg, "--join=", 7) == 0)
            code = write_file(value, pid) == 0 ? 0 : fail("cannot join", value);
        else if (strncmp(arg, "--fsize=", 8) == 0)
            code = set_limit(RLIMIT_FSIZE, value);
        else if (strncmp(arg, "--nproc=", 8) == 0)
            code = set_limit(RLIMIT_NPROC, value);
        else if (strncmp(arg, "--as=", 5) == 0)
            code = set_limit(RLIMIT_AS, value);
        else if (strncmp(arg, "--userns=", 9) == 0)
            code = (user = (int)number(value)) < 0 ? fail("not a descriptor:", value) : 0;
        else if (strncmp(arg, "--netns=", 8) == 0)
            code = (net = (int)number(value)) < 0 ? fail("not a descriptor:", value) : 0;
        else
            code = (errno = EINVAL, fail("unknown option", arg));
    }
    if (code != 0)
        return code;
    if (at + 1 >= argc) {
        dprintf(2, "%s: no program to run after --\n", me);
        return 126;
    }
    if ((user >= 0) != (net >= 0)) {
        dprintf(2, "%s: --userns and --netns go together\n", me);
        return 126;
    }
    if (user >= 0 && (code = enter(user, net)) != 0)
        return code;
    execvp(argv[at + 1], argv + at + 1);
    dprintf(2, "%s: cannot run %s: %s\n", me, argv[at + 1], strerror(errno));
    return 127;
}

/* Bring the loopback interface of this network namespace up (the kernel gives it 127.0.0.1
 * and ::1 then). */
static int loopback_up(void) {
    struct ifreq request;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail("cannot open", "a socket");
    memset(&request, 0, sizeof request);
    strcpy(request.ifr_name, "lo");
    int code = 0;
    if (ioctl(fd, SIOCGIFFLAGS, &request) != 0)
        code = fail("cannot read the flags of", "lo");
    request.ifr_flags |= IFF_UP;
    if (code == 0 && ioctl(fd, SIOCSIFFLAGS, &request) != 0)
        code = fail("cannot bring up", "lo");
    close(fd);
    return code;
}

static int hold(const char *parent) {
    char map[64], buffer[4096];
    uid_t uid = getuid();
    gid_t gid = getgid();
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != (pid_t)number(parent))  /* the parent died before the signal was set */
        return 128 + SIGKILL;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
        return fail("cannot make", "a user and a network namespace");
    if (write_file("/proc/self/setgroups", "deny\n") != 0 && errno != ENOENT)
        return fail("cannot write", "/proc/self/setgroups");
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/uid_map", map) != 0)
        return fail("cannot write", "/proc/self/uid_map");
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", map) != 0)
        return fail("cannot write", "/proc/self/gid_map");
    int code = loopback_up();
    if (code != 0)
        return code;
    ssize_t got;
    while ((got = read(0, buffer, sizeof buffer)) != 0) {
        if (got < 0 && errno != EINTR)
            return 1;
        if (got > 0 && write(1, buffer, (size_t)got) != got)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--hold") == 0)
        return hold(argv[3]);
    if (argc < 3) {
        dprintf(2, "usage: %s [--join=PROCS]... [--fsize=N] [--nproc=N] [--as=N] "
                   "[--userns=FD --netns=FD] -- PROGRAM [ARGUMENT...]\n"
                   "       %s --hold LABEL PARENT-PID\n", me, me);
        return 126;
    }
    return launch(argc, argv);
}
