// netperf TCP_RR / UDP_RR's pattern: one transaction in flight between a
// client and a server process over loopback, REQ-byte requests and RSP-byte
// responses (TCP with TCP_NODELAY, as netperf sets it). Prints transactions/s
// and the CPU time (user + system) of each side per transaction.
// Usage: tcprr tcp|udp N [REQ RSP [SRV_CPU CL_CPU]]  (CPU -1: not pinned)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void pin(int c) { if (c < 0) return; cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, sizeof s, &s); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static double cpu_s(struct rusage *r) { return r->ru_utime.tv_sec + r->ru_utime.tv_usec / 1e6 + r->ru_stime.tv_sec + r->ru_stime.tv_usec / 1e6; }
static void full(int fd, char *b, int n, int tcp) {
  for (int got = 0; got < n;) { int k = tcp ? (int)read(fd, b + got, n - got) : (int)recv(fd, b, n, 0); if (k <= 0) exit(1); got += tcp ? k : n; }
}
int main(int argc, char **argv) {
  int tcp = strcmp(argv[1], "udp") != 0; long n = atol(argv[2]);
  int req = argc > 3 ? atoi(argv[3]) : 1, rsp = argc > 4 ? atoi(argv[4]) : 1;
  int srv_cpu = argc > 5 ? atoi(argv[5]) : -1, cl_cpu = argc > 6 ? atoi(argv[6]) : -1;
  char buf[65536]; memset(buf, 1, sizeof buf);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  int one = 1, ls = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (void *)&a, sizeof a)) { perror("bind"); return 1; }
  socklen_t al = sizeof a; getsockname(ls, (void *)&a, &al);
  if (tcp) listen(ls, 1);
  int ready[2]; if (pipe(ready)) return 1;
  pid_t srv = fork();
  if (!srv) {  // netserver
    pin(srv_cpu);
    int fd = ls; struct sockaddr_in peer; socklen_t pl = sizeof peer;
    if (tcp) { fd = accept(ls, NULL, NULL); setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
    for (long i = 0; i < n; i++) {
      if (tcp) full(fd, buf, req, 1); else if (recvfrom(fd, buf, req, 0, (void *)&peer, &pl) <= 0) exit(1);
      if ((tcp ? write(fd, buf, rsp) : sendto(fd, buf, rsp, 0, (void *)&peer, pl)) != rsp) exit(1);
    }
    struct rusage r; getrusage(RUSAGE_SELF, &r); if (write(ready[1], &r, sizeof r) != sizeof r) exit(1);
    exit(0);
  }
  pin(cl_cpu);
  int fd = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  if (connect(fd, (void *)&a, sizeof a)) { perror("connect"); return 1; }
  if (tcp) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct rusage r0; getrusage(RUSAGE_SELF, &r0); double t0 = now();
  for (long i = 0; i < n; i++) {
    if (write(fd, buf, req) != req) return 1;
    full(fd, buf, rsp, tcp);
  }
  double t1 = now(); struct rusage r1, rs; getrusage(RUSAGE_SELF, &r1);
  if (read(ready[0], &rs, sizeof rs) != sizeof rs) return 1;
  waitpid(srv, NULL, 0);
  printf("mode=%s n=%ld trans_s=%.0f cl_cpu_us=%.3f srv_cpu_us=%.3f\n", tcp ? "TCP_RR" : "UDP_RR", n, n / (t1 - t0),
         (cpu_s(&r1) - cpu_s(&r0)) / n * 1e6, cpu_s(&rs) / n * 1e6);
  return 0;
}
