/* fencecall's launcher: in one exec, what a sh, util-linux's prlimit and nsenter did one
 * after the other before a limited or sandboxed program, and the making of a conversation's
 * network namespace that a holder (setpriv, a bwrap and a cat) did. Built by setup.py beside
 * _launch.py; without it fencecall starts those programs as before.
 *
 *     fencecall-launch [--keep=FD[,FD]...] [--join=CGROUP.PROCS]... [--fsize=N] [--nproc=N]
 *                      [--as=N] [--userns=FD --netns=FD | --new-netns=SOCKET]
 *                      -- PROGRAM [ARGUMENT...]
 *
 * With --keep, closes every descriptor from 3 up but those listed, as Python's close_fds
 * would (fencecall starts it with the listed ones inheritable and close_fds off: Python's
 * own closing, up to 3.13 at least, asks close_range for an empty range when two kept
 * descriptors are neighbours, is refused, and then closes every open descriptor of a batch
 * one by one). Writes its pid into each cgroup.procs (so every process PROGRAM starts is in
 * the groups), sets each rlimit (soft and hard, as prlimit does), then either enters the
 * user and network namespaces that the descriptors FD refer to with its own uid and gid
 * (nsenter --preserve-credentials) and closes them, so they do not reach PROGRAM, or, with
 * --new-netns, makes a user namespace (its uid and gid mapped to themselves, setgroups
 * denied, as bwrap --unshare-user does) and a network namespace it owns, brings the
 * loopback up, and sends descriptors of both over the Unix socket SOCKET (one message, for
 * fencecall to take when another sandbox is to join them), then closes it. Then it execs
 * PROGRAM, found on PATH as execvp does (without its fallback to sh for a file that is not
 * a program). Exits 126 when a step fails, 127 when PROGRAM cannot run.
 *
 * It is built without the C library (-ffreestanding -nostdlib -static), on system calls
 * alone: it runs for every sandboxed process, and a static glibc's start-up (reading the
 * processor's features and cache sizes with cpuid, which traps to the hypervisor in a
 * virtual machine, and finding its own executable) cost more than everything it does. The
 * system calls are written for x86-64 and AArch64; elsewhere it does not build and the
 * programs it replaces stand in. */
#define _GNU_SOURCE
/* Headers for constants and types only: nothing of the C library is linked. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "fencecall-launch makes its system calls for x86-64 and AArch64 only"
#endif

/* ------------------------------------------------------------------ system calls */

static long sys6(long n, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    long result;
    __asm__ volatile("syscall" : "=a"(result)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return result;
#else
    register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
                  x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e,
                  x5 __asm__("x5") = f;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
#endif
}

/* The errno of the last system call that failed. */
static int error_number;

/* The system call's result, or -1 with error_number set. */
static long checked(long result) {
    if (result < 0 && result > -4096) {
        error_number = (int)-result;
        return -1;
    }
    return result;
}

#define SYS(n, a, b, c) checked(sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0))

static long write_all(int fd, const char *text, size_t length) {
    while (length > 0) {
        long done = SYS(__NR_write, fd, text, length);
        if ((done < 0 && error_number != EINTR) || done == 0)
            return -1;
        if (done > 0) {
            text += done;
            length -= (size_t)done;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ strings */

/* The compiler may call these for a struct's initialisation or copy. Their bytes go through
 * volatile pointers, so that no compiler turns the loops back into calls to themselves. */
void *memset(void *target, int value, size_t length) {
    volatile unsigned char *at = target;
    while (length--)
        *at++ = (unsigned char)value;
    return target;
}

void *memcpy(void *target, const void *source, size_t length) {
    volatile unsigned char *to = target;
    const volatile unsigned char *from = source;
    while (length--)
        *to++ = *from++;
    return target;
}

static size_t length_of(const char *text) {
    size_t length = 0;
    while (text[length] != '\0')
        length++;
    return length;
}

static int starts(const char *text, const char *prefix) {
    while (*prefix != '\0')
        if (*text++ != *prefix++)
            return 0;
    return 1;
}

static int same(const char *one, const char *other) {
    return starts(one, other) && one[length_of(other)] == '\0';
}

/* VALUE's decimal digits, written backwards from END; the first of them. */
static char *decimal(unsigned long long value, char *end) {
    *--end = '\0';
    do
        *--end = (char)('0' + value % 10);
    while (value /= 10);
    return end;
}

/* A whole number of the command line, or -1 with error_number set to EINVAL. */
static long long number(const char *text) {
    long long value = 0;
    if (*text == '\0')
        return error_number = EINVAL, -1;
    for (; *text != '\0'; text++) {
        if (*text < '0' || *text > '9' || value > (0x7fffffffffffffffLL - 9) / 10)
            return error_number = EINVAL, -1;
        value = value * 10 + (*text - '0');
    }
    return value;
}

/* ------------------------------------------------------------------ messages */

static const char *me = "fencecall-launch";

static const struct {
    int number;
    const char *text;
} reasons[] = {
    {EPERM, "Operation not permitted"}, {ENOENT, "No such file or directory"},
    {ESRCH, "No such process"}, {EINTR, "Interrupted system call"},
    {EIO, "Input/output error"}, {E2BIG, "Argument list too long"},
    {ENOEXEC, "Exec format error"}, {EBADF, "Bad file descriptor"},
    {EAGAIN, "Resource temporarily unavailable"}, {ENOMEM, "Cannot allocate memory"},
    {EACCES, "Permission denied"}, {EFAULT, "Bad address"}, {EBUSY, "Device or resource busy"},
    {EEXIST, "File exists"}, {ENOTDIR, "Not a directory"}, {EISDIR, "Is a directory"},
    {EINVAL, "Invalid argument"}, {ENFILE, "Too many open files in system"},
    {EMFILE, "Too many open files"}, {ETXTBSY, "Text file busy"},
    {EFBIG, "File too large"}, {ENOSPC, "No space left on device"},
    {EROFS, "Read-only file system"}, {ENAMETOOLONG, "File name too long"},
    {ENOSYS, "Function not implemented"}, {ELOOP, "Too many levels of symbolic links"},
    {EUSERS, "Too many users"}, {EOPNOTSUPP, "Operation not supported"},
};

/* Write the pieces, up to a NULL, as one line on stderr. */
static void say(const char *first, ...) {
    char line[1024];
    size_t used = 0;
    va_list pieces;
    va_start(pieces, first);
    for (const char *piece = first; piece != NULL; piece = va_arg(pieces, const char *))
        for (const char *at = piece; *at != '\0' && used < sizeof line - 1; at++)
            line[used++] = *at;
    va_end(pieces);
    line[used++] = '\n';
    write_all(2, line, used);
}

static const char *reason(int code, char *buffer, size_t size) {
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].number == code)
            return reasons[i].text;
    char *digits = decimal((unsigned long long)code, buffer + size);
    digits -= 6;
    memcpy(digits, "error ", 6);
    return digits;
}

static int fail(const char *what, const char *detail) {
    char buffer[32];
    say(me, ": ", what, " ", detail, ": ", reason(error_number, buffer, sizeof buffer), NULL);
    return 126;
}

/* ------------------------------------------------------------------ the launcher */

/* Write TEXT to the file at PATH; 0, or -1 with error_number set. */
static int write_file(const char *path, const char *text) {
    int fd = (int)SYS(__NR_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t length = length_of(text);
    long written = SYS(__NR_write, fd, text, length);
    int saved = error_number;
    SYS(__NR_close, fd, 0, 0);
    error_number = saved;
    return written == (long)length ? 0 : (written >= 0 ? (error_number = EIO, -1) : -1);
}

/* An rlimit as prlimit64 reads and writes it. */
struct limit {
    unsigned long long current, maximum;
};

static int set_limit(int resource, const char *value) {
    long long n = number(value);
    struct limit limit = {(unsigned long long)n, (unsigned long long)n};
    if (n < 0 || checked(sys6(__NR_prlimit64, 0, resource, (long)&limit, 0, 0, 0)) != 0)
        return fail("cannot set the limit", value);
    return 0;
}

/* Enter the user and network namespaces of USER and NET, then close both. The network one
 * first, while this process still has the rights it had outside; the user one first if that
 * is refused (as nsenter does). */
static int enter(int user, int net) {
    if (SYS(__NR_setns, net, CLONE_NEWNET, 0) != 0) {
        if (SYS(__NR_setns, user, CLONE_NEWUSER, 0) != 0 ||
                SYS(__NR_setns, net, CLONE_NEWNET, 0) != 0)
            return fail("cannot enter", "the namespaces");
    } else if (SYS(__NR_setns, user, CLONE_NEWUSER, 0) != 0) {
        return fail("cannot enter", "the user namespace");
    }
    SYS(__NR_close, user, 0, 0);
    SYS(__NR_close, net, 0, 0);
    return 0;
}

/* Exec PROGRAM, looked for in the folders of PATH when its name has no slash (as execvp
 * does: "/bin:/usr/bin" without a PATH, an empty entry for the working folder, a folder
 * that refuses access remembered and the search gone on). Returns only on failure. */
static void run(char **argv, char **environment) {
    const char *program = argv[0], *path = "/bin:/usr/bin";
    char candidate[4096];
    int refused = 0;
    for (const char *at = program; *at != '\0'; at++)
        if (*at == '/') {
            SYS(__NR_execve, program, argv, environment);
            return;
        }
    for (char **entry = environment; *entry != NULL; entry++)
        if (starts(*entry, "PATH="))
            path = *entry + 5;
    size_t name = length_of(program);
    for (const char *folder = path;; folder++) {
        const char *end = folder;
        while (*end != '\0' && *end != ':')
            end++;
        size_t length = (size_t)(end - folder);
        if (length + name + 2 <= sizeof candidate) {
            memcpy(candidate, folder, length);
            if (length > 0)
                candidate[length++] = '/';
            memcpy(candidate + length, program, name + 1);
            SYS(__NR_execve, candidate, argv, environment);
            if (error_number == EACCES)
                refused = 1;
            else if (error_number != ENOENT && error_number != ENOTDIR &&
                     error_number != ESTALE && error_number != ENODEV &&
                     error_number != ETIMEDOUT)
                return;
        }
        if (*end == '\0')
            break;
        folder = end;
    }
    error_number = refused ? EACCES : ENOENT;
}

#define MOST_KEPT 64

/* The descriptors of LIST ("4,7,5"), sorted, into KEPT; their count, or -1 when LIST is not
 * a list of at most MOST_KEPT descriptors from 3 up. */
static int kept_list(const char *list, int *kept) {
    int count = 0;
    for (const char *at = list;; at++) {
        char digits[16];
        size_t length = 0;
        while (*at != '\0' && *at != ',' && length < sizeof digits - 1)
            digits[length++] = *at++;
        digits[length] = '\0';
        long long fd = number(digits);
        if (fd < 3 || fd > 0x7fffffff || count == MOST_KEPT || (*at != '\0' && *at != ','))
            return error_number = EINVAL, -1;
        int place = count++;
        for (; place > 0 && kept[place - 1] > fd; place--)
            kept[place] = kept[place - 1];
        kept[place] = (int)fd;
        if (*at == '\0')
            return count;
    }
}

/* Close every descriptor from FIRST to LAST; close_range, else one by one (Linux before
 * 5.9), up to the limit of open files. */
static void close_from(unsigned int first, unsigned int last) {
    if (first > last || checked(sys6(__NR_close_range, first, last, 0, 0, 0, 0)) == 0 ||
            error_number != ENOSYS)
        return;
    struct limit limit = {1024, 1024};
    sys6(__NR_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&limit, 0, 0);
    for (unsigned long long fd = first; fd <= last && fd < limit.current; fd++)
        sys6(__NR_close, (long)fd, 0, 0, 0, 0, 0);
}

/* Close every descriptor from 3 up but the COUNT in KEPT (sorted). */
static void close_all_but(const int *kept, int count) {
    unsigned int next = 3;
    for (int i = 0; i < count; i++) {
        if ((unsigned int)kept[i] > next)
            close_from(next, (unsigned int)kept[i] - 1);
        if ((unsigned int)kept[i] >= next)
            next = (unsigned int)kept[i] + 1;
    }
    close_from(next, ~0U);
}

/* ------------------------------------------------------------------ namespaces */

/* Bring the loopback interface of this network namespace up (the kernel gives it 127.0.0.1
 * and ::1 then). */
static int loopback_up(void) {
    struct ifreq request;
    int fd = (int)SYS(__NR_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail("cannot open", "a socket");
    memset(&request, 0, sizeof request);
    memcpy(request.ifr_name, "lo", 3);
    int code = 0;
    if (SYS(__NR_ioctl, fd, SIOCGIFFLAGS, &request) != 0)
        code = fail("cannot read the flags of", "lo");
    request.ifr_flags |= IFF_UP;
    if (code == 0 && SYS(__NR_ioctl, fd, SIOCSIFFLAGS, &request) != 0)
        code = fail("cannot bring up", "lo");
    SYS(__NR_close, fd, 0, 0);
    return code;
}

/* "ID ID 1\n": a map of ID to itself. */
static const char *identity_map(unsigned long id, char *buffer, size_t size) {
    char digits[24];
    const char *text = decimal(id, digits + sizeof digits);
    size_t length = length_of(text), used = 0;
    if (2 * length + 4 > size)
        return "";
    for (int twice = 0; twice < 2; twice++) {
        memcpy(buffer + used, text, length);
        used += length;
        buffer[used++] = ' ';
    }
    memcpy(buffer + used, "1\n", 3);
    return buffer;
}

/* Make a user namespace (this process's uid and gid mapped to themselves, setgroups denied,
 * as bwrap --unshare-user does) and a network namespace it owns, with the loopback up. */
static int make_namespaces(void) {
    char map[64];
    long uid = sys6(__NR_getuid, 0, 0, 0, 0, 0, 0), gid = sys6(__NR_getgid, 0, 0, 0, 0, 0, 0);
    if (SYS(__NR_unshare, CLONE_NEWUSER | CLONE_NEWNET, 0, 0) != 0)
        return fail("cannot make", "a user and a network namespace");
    if (write_file("/proc/self/setgroups", "deny\n") != 0 && error_number != ENOENT)
        return fail("cannot write", "/proc/self/setgroups");
    if (write_file("/proc/self/uid_map", identity_map((unsigned long)uid, map, sizeof map)) != 0)
        return fail("cannot write", "/proc/self/uid_map");
    if (write_file("/proc/self/gid_map", identity_map((unsigned long)gid, map, sizeof map)) != 0)
        return fail("cannot write", "/proc/self/gid_map");
    return loopback_up();
}

/* Send descriptors of this process's user and network namespaces over the Unix socket
 * SOCKET, in one message of one byte, then close them and it. */
static int send_namespaces(int socket) {
    int fds[2] = {(int)SYS(__NR_openat, AT_FDCWD, "/proc/self/ns/user", O_RDONLY | O_CLOEXEC),
                  (int)SYS(__NR_openat, AT_FDCWD, "/proc/self/ns/net", O_RDONLY | O_CLOEXEC)};
    union {
        char bytes[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } control;
    char byte = 'n';
    struct iovec part = {&byte, 1};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    memset(&control, 0, sizeof control);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    struct cmsghdr *header = (struct cmsghdr *)control.bytes;
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(header), fds, sizeof fds);
    int code = 0;
    if (fds[0] < 0 || fds[1] < 0)
        code = fail("cannot open", "the new namespaces");
    else if (SYS(__NR_sendmsg, socket, &message, MSG_NOSIGNAL) != 1)
        code = fail("cannot send", "the new namespaces");
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            SYS(__NR_close, fds[i], 0, 0);
    SYS(__NR_close, socket, 0, 0);
    return code;
}

static int launch(int argc, char **argv, char **environment) {
    char pid[32];
    int user = -1, net = -1, inbox = -1, at = 1, code = 0, kept[MOST_KEPT], keeping = -1;
    /* the digits end just before pid[30], where the newline goes */
    char *digits = decimal((unsigned long long)sys6(__NR_getpid, 0, 0, 0, 0, 0, 0),
                           pid + sizeof pid - 1);
    pid[sizeof pid - 2] = '\n';
    pid[sizeof pid - 1] = '\0';
    for (; at < argc && !same(argv[at], "--") && code == 0; at++) {
        const char *arg = argv[at], *value = arg;
        while (*value != '\0' && *value != '=')
            value++;
        value += *value == '=';
        if (starts(arg, "--keep="))
            code = (keeping = kept_list(value, kept)) < 0 ? fail("not descriptors:", value) : 0;
        else if (starts(arg, "--join="))
            code = write_file(value, digits) == 0 ? 0 : fail("cannot join", value);
        else if (starts(arg, "--fsize="))
            code = set_limit(RLIMIT_FSIZE, value);
        else if (starts(arg, "--nproc="))
            code = set_limit(RLIMIT_NPROC, value);
        else if (starts(arg, "--as="))
            code = set_limit(RLIMIT_AS, value);
        else if (starts(arg, "--userns="))
            code = (user = (int)number(value)) < 0 ? fail("not a descriptor:", value) : 0;
        else if (starts(arg, "--netns="))
            code = (net = (int)number(value)) < 0 ? fail("not a descriptor:", value) : 0;
        else if (starts(arg, "--new-netns="))
            code = (inbox = (int)number(value)) < 0 ? fail("not a descriptor:", value) : 0;
        else
            code = (error_number = EINVAL, fail("unknown option", arg));
    }
    if (code != 0)
        return code;
    if (at + 1 >= argc) {
        say(me, ": no program to run after --", NULL);
        return 126;
    }
    if ((user >= 0) != (net >= 0) || (user >= 0 && inbox >= 0)) {
        say(me, ": --userns and --netns go together, and not with --new-netns", NULL);
        return 126;
    }
    if (keeping >= 0)
        close_all_but(kept, keeping);
    if (user >= 0 && (code = enter(user, net)) != 0)
        return code;
    if (inbox >= 0 && ((code = make_namespaces()) != 0 || (code = send_namespaces(inbox)) != 0))
        return code;
    run(argv + at + 1, environment);
    char buffer[32];
    say(me, ": cannot run ", argv[at + 1], ": ", reason(error_number, buffer, sizeof buffer),
        NULL);
    return 127;
}

/* ------------------------------------------------------------------ start */

static int main_of(int argc, char **argv, char **environment) {
    if (argc < 3) {
        say("usage: ", me, " [--keep=FD[,FD]...] [--join=PROCS]... [--fsize=N] [--nproc=N] "
            "[--as=N] [--userns=FD --netns=FD | --new-netns=SOCKET] -- PROGRAM [ARGUMENT...]",
            NULL);
        return 126;
    }
    return launch(argc, argv, environment);
}

/* Called by _start with the stack as the kernel left it: argc, argv..., NULL, envp... */
__attribute__((noreturn, used)) void start_c(long *stack) {
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    sys6(__NR_exit_group, main_of(argc, argv, argv + argc + 1), 0, 0, 0, 0, 0);
    __builtin_unreachable();
}

#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n"
        "  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n  call start_c\n  hlt\n");
#else
__asm__(".text\n.global _start\n_start:\n"
        "  mov x29, #0\n  mov x30, #0\n  mov x0, sp\n  and sp, x0, #-16\n  bl start_c\n");
#endif
