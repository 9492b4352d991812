/* memtier-like closed-loop memcached client: T threads, C connections each,
 * one "get" in flight per connection, epoll per thread (schedlab's memcached
 * built-in models this shape). Usage: memload HOST PORT THREADS CONNS SECONDS
 * Prints: requests=N */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in addr;
static int conns, secs;
static long total[256];
static const char req[] = "get k\r\n";

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void *worker(void *arg) {
    long id = (long)arg, n = 0;
    int ep = epoll_create1(0);
    for (int i = 0; i < conns; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        if (connect(s, (struct sockaddr *)&addr, sizeof addr)) { perror("connect"); exit(1); }
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = s};
        epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
        if (write(s, req, sizeof req - 1) < 0) exit(1);
    }
    double end = now() + secs;
    struct epoll_event evs[64];
    char buf[4096];
    while (now() < end) {
        int k = epoll_wait(ep, evs, 64, 100);
        for (int i = 0; i < k; i++) {
            int s = evs[i].data.fd;
            if (read(s, buf, sizeof buf) <= 0) exit(1);
            n++;
            if (write(s, req, sizeof req - 1) < 0) exit(1);
        }
    }
    total[id] = n;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: memload HOST PORT THREADS CONNS SECONDS\n"); return 2; }
    addr.sin_family = AF_INET;
    addr.sin_port = htons(atoi(argv[2]));
    inet_pton(AF_INET, argv[1], &addr.sin_addr);
    int t = atoi(argv[3]);
    conns = atoi(argv[4]);
    secs = atoi(argv[5]);
    pthread_t th[256];
    for (long i = 0; i < t; i++) pthread_create(&th[i], 0, worker, (void *)i);
    long n = 0;
    for (int i = 0; i < t; i++) { pthread_join(th[i], 0); n += total[i]; }
    printf("requests=%ld\n", n);
    return 0;
}
