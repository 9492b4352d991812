// scripts/calib-src/syncprobe.c: build with `gcc -O2 -pthread -o syncprobe syncprobe.c`; run `./syncprobe MODE` (0 pipe, 1 epoll AF_UNIX, 2 epoll TCP, 3 read TCP) on a quiet 2-CPU machine (docs/FIDELITY.md F-649).
// Does a wakeup carry WF_SYNC? Waker W spins pinned to CPU 0 (nr_running 1
// there); CPU 1 runs a nice-19 spinner (busy, light load). The wakee T blocks
// (pipe read, or epoll_wait on a socketpair / a loopback TCP socket) with
// task_cpu 1 and affinity {0,1}; W then writes. With WF_SYNC,
// wake_affine_idle() returns W's CPU (sync && nr_running == 1) and T wakes on
// CPU 0; without it wake_affine_weight() keeps the lightly loaded CPU 1.
#define _GNU_SOURCE
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdatomic.h>
#include <time.h>

static int mode; // 0 pipe read, 1 epoll on unix socketpair, 2 epoll on loopback tcp, 3 plain read on tcp
static int rfd, wfd, ep;
static atomic_int ready, go_count, on0, on1;
static int N = 400;

static void pin(int a, int b) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(a, &s); if (b >= 0) CPU_SET(b, &s); sched_setaffinity(0, sizeof s, &s); }
static void spin_us(long us) { struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); do clock_gettime(CLOCK_MONOTONIC, &b); while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us); }

static void *wakee(void *x) {
    char buf[64];
    for (int i = 0; i < N; i++) {
        pin(1, -1);            // move to CPU 1
        while (sched_getcpu() != 1) sched_yield();
        pin(0, 1);             // allow both, stay on 1 while blocking
        atomic_store(&ready, 1);
        if (mode == 1 || mode == 2) { struct epoll_event ev; epoll_wait(ep, &ev, 1, -1); }
        int c = sched_getcpu();
        if (read(rfd, buf, sizeof buf) <= 0) exit(1);
        if (c == 0) atomic_fetch_add(&on0, 1); else atomic_fetch_add(&on1, 1);
    }
    return 0;
}
static void *spinner(void *x) { pin(1, -1); setpriority(PRIO_PROCESS, syscall(SYS_gettid), 19); for (;;) ; return x; }

int main(int argc, char **argv) {
    mode = atoi(argv[1]);
    int fds[2];
    if (mode == 0) { if (pipe(fds)) return 1; rfd = fds[0]; wfd = fds[1]; }
    else if (mode == 1) { if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) return 1; rfd = fds[0]; wfd = fds[1]; }
    else {
        int l = socket(AF_INET, SOCK_STREAM, 0), one = 1; struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        bind(l, (void *)&a, sizeof a); socklen_t len = sizeof a; getsockname(l, (void *)&a, &len); listen(l, 1);
        wfd = socket(AF_INET, SOCK_STREAM, 0); connect(wfd, (void *)&a, sizeof a); rfd = accept(l, 0, 0);
        setsockopt(wfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (mode == 1 || mode == 2) { ep = epoll_create1(0); struct epoll_event ev = { .events = EPOLLIN, .data.fd = rfd }; epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev); }
    pthread_t s, t; pthread_create(&s, 0, spinner, 0);
    pin(0, -1);
    pthread_create(&t, 0, wakee, 0);
    for (int i = 0; i < N; i++) {
        while (!atomic_load(&ready)) ;
        atomic_store(&ready, 0);
        spin_us(300);  // let the wakee block; the waker stays busy (nr_running 1 on CPU 0)
        if (write(wfd, "x", 1) != 1) return 1;
        spin_us(200);
    }
    pthread_join(t, 0);
    printf("mode=%d (%s) woke on CPU0 %d, CPU1 %d\n", mode, (const char*[]){"pipe read","epoll unix","epoll tcp","read tcp"}[mode], on0, on1);
    return 0;
}
