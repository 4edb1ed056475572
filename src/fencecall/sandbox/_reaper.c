/* The reaper of reaper.py as a small C program: the same arguments, the same steps as its
 * Python script (_SCRIPT), without an interpreter to start for every shell.
 *
 *     fencecall-reaper NAME=VALUE PARENT-PID PROGRAM [ARGUMENT...]
 *
 * A child subreaper whose parent-death signal is SIGTERM: it runs PROGRAM with NAME=VALUE
 * added to its environment, adopts every orphan below it, and once PROGRAM exits (or SIGTERM
 * or SIGHUP comes) SIGKILLs all that is left below it, for at most 5 seconds, then exits with
 * PROGRAM's status (128 + the signal that ended it or came). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t bash_pid;
static int status = -1;

/* Reap every child that ended (noting PROGRAM's status); 0 once none is left. */
static int reap(void) {
    for (;;) {
        int code;
        pid_t pid = waitpid(-1, &code, WNOHANG);
        if (pid < 0)
            return errno == EINTR ? 1 : 0;
        if (pid == 0)
            return 1;
        if (pid == bash_pid && status < 0)  /* not when we killed it */
            status = WIFEXITED(code) ? WEXITSTATUS(code) : 128 + WTERMSIG(code);
    }
}

/* Grows a list of pids. */
struct pids {
    pid_t *at;
    size_t count, size;
};

static void add(struct pids *list, pid_t pid) {
    if (list->count == list->size) {
        size_t size = list->size ? 2 * list->size : 64;
        pid_t *grown = realloc(list->at, size * sizeof *grown);
        if (grown == NULL)
            return;
        list->at = grown;
        list->size = size;
    }
    list->at[list->count++] = pid;
}

static ssize_t read_file(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    ssize_t n;
    while (got < size - 1 && (n = read(fd, buffer + got, size - 1 - got)) > 0)
        got += (size_t)n;
    close(fd);
    buffer[got] = '\0';
    return (ssize_t)got;
}

/* SIGKILL the children of every thread of PID, and add them to TODO. */
static void kill_children(pid_t pid, struct pids *todo) {
    char path[64], buffer[65536];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (tasks == NULL)
        return;
    struct dirent *task;
    while ((task = readdir(tasks)) != NULL) {
        if (task->d_name[0] < '0' || task->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.20s/children", (int)pid, task->d_name);
        if (read_file(path, buffer, sizeof buffer) < 0)
            continue;
        for (char *word = strtok(buffer, " \n"); word; word = strtok(NULL, " \n")) {
            pid_t child = (pid_t)atoi(word);
            kill(child, SIGKILL);
            add(todo, child);
        }
    }
    closedir(tasks);
}

/* The parent pid in /proc/PID/stat, or -1. */
static pid_t parent_of(const char *pid) {
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%.20s/stat", pid);
    if (read_file(path, stat, sizeof stat) < 0)
        return -1;
    char *end = strrchr(stat, ')');
    int ppid;
    return end != NULL && sscanf(end + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : -1;
}

/* SIGKILL every process below this one: from /proc/PID/task/TID/children where the kernel
 * lists them, else from every process's parent in /proc/PID/stat. */
static void kill_below(void) {
    struct pids todo = {0}, all = {0}, parents = {0};
    if (access("/proc/thread-self/children", F_OK) == 0) {
        add(&todo, getpid());
        while (todo.count)
            kill_children(todo.at[--todo.count], &todo);
    } else {
        DIR *proc = opendir("/proc");
        struct dirent *entry;
        while (proc != NULL && (entry = readdir(proc)) != NULL) {
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
                continue;
            pid_t ppid = parent_of(entry->d_name);
            if (ppid >= 0) {
                add(&all, (pid_t)atoi(entry->d_name));
                add(&parents, ppid);
            }
        }
        if (proc != NULL)
            closedir(proc);
        add(&todo, getpid());
        while (todo.count) {
            pid_t pid = todo.at[--todo.count];
            for (size_t i = 0; i < all.count && i < parents.count; i++)
                if (parents.at[i] == pid) {
                    kill(all.at[i], SIGKILL);
                    add(&todo, all.at[i]);
                }
        }
    }
    free(todo.at);
    free(all.at);
    free(parents.at);
}

static double now(void) {
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    return (double)at.tv_sec + (double)at.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s NAME=VALUE PARENT-PID PROGRAM [ARGUMENT...]\n", argv[0]);
        return 2;
    }
    const char *setting = argv[1];
    pid_t parent = (pid_t)atoi(argv[2]);
    sigset_t wake, blocked, mask;
    sigemptyset(&wake);
    sigaddset(&wake, SIGCHLD);
    sigaddset(&wake, SIGTERM);
    sigaddset(&wake, SIGHUP);
    blocked = wake;
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &mask);  /* taken by sigwaitinfo */
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);  /* a signal we catch, not setpriv's KILL */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);  /* orphans below come to us, not to init */
    if (getppid() != parent)  /* fencecall died before the signal was set */
        return 128 + SIGTERM;
    bash_pid = fork();
    if (bash_pid == 0) {
        signal(SIGPIPE, SIG_DFL);  /* as the Python reaper does for the shell */
        signal(SIGXFSZ, SIG_DFL);
        sigprocmask(SIG_SETMASK, &mask, NULL);
        char *name = strdup(setting), *value = strchr(name, '=');
        if (value != NULL)
            *value++ = '\0';
        setenv(name, value != NULL ? value : "", 1);
        execvp(argv[3], argv + 3);
        dprintf(2, "reaper: cannot run %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    if (bash_pid < 0) {
        dprintf(2, "reaper: cannot fork: %s\n", strerror(errno));
        return 127;
    }
    /* the child's pipes: a copy kept here would hide its end-of-file from fencecall */
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3 && null >= 0; fd++)
        dup2(null, fd);
    if (null > 2)
        close(null);
    while (status < 0) {
        int signo = sigwaitinfo(&wake, NULL);
        if (signo == SIGCHLD)
            reap();
        else if (signo > 0)
            status = 128 + signo;
    }
    /* no child left means nothing left below: a subreaper's descendants all descend from
     * one */
    double deadline = now() + 5;
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    struct timespec poll = {0, 50 * 1000 * 1000};
    while (reap() && now() < deadline) {
        kill_below();
        sigtimedwait(&child, NULL, &poll);
    }
    return status;
}
