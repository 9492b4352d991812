// Loopback TCP_STREAM probe: a sender thread send()s MSG-byte messages for SECS seconds,
// a receiver thread recv()s into a 128 KiB buffer. Prints per-side CPU per message,
// bytes per recv, voluntary/involuntary switches per side. Optional pinning.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static int msg, secs, pin_s = -1, pin_r = -1, port;
static volatile int stop;
static struct rusage ru_s, ru_r;
static long long sends, recvs, rbytes;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void pin(int c) { if (c < 0) return; cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *rx(void *a) {
  int l = *(int *)a; pin(pin_r);
  int fd = accept(l, 0, 0); char *buf = malloc(131072); ssize_t n;
  while ((n = recv(fd, buf, 131072, 0)) > 0) { recvs++; rbytes += n; }
  getrusage(RUSAGE_THREAD, &ru_r); close(fd); return 0;
}
int main(int argc, char **argv) {
  msg = atoi(argv[1]); secs = atoi(argv[2]);
  if (argc > 3) pin_s = atoi(argv[3]);
  if (argc > 4) pin_r = atoi(argv[4]);
  int l = socket(AF_INET, SOCK_STREAM, 0); int one = 1; setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  bind(l, (void *)&a, sizeof a); socklen_t al = sizeof a; getsockname(l, (void *)&a, &al); listen(l, 1);
  pthread_t t; pthread_create(&t, 0, rx, &l);
  pin(pin_s);
  int fd = socket(AF_INET, SOCK_STREAM, 0); connect(fd, (void *)&a, sizeof a);
  char *buf = calloc(1, msg); double t0 = now(), end = t0 + secs; struct rusage r0; getrusage(RUSAGE_THREAD, &r0);
  while (1) { for (int i = 0; i < 256; i++) { if (send(fd, buf, msg, 0) != msg) { perror("send"); return 1; } sends++; } if (now() >= end) break; }
  double el = now() - t0; getrusage(RUSAGE_THREAD, &ru_s); shutdown(fd, SHUT_WR); pthread_join(t, 0);
  double cs = (ru_s.ru_utime.tv_sec - r0.ru_utime.tv_sec + ru_s.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 + (ru_s.ru_utime.tv_usec - r0.ru_utime.tv_usec + ru_s.ru_stime.tv_usec - r0.ru_stime.tv_usec);
  double cr = (ru_r.ru_utime.tv_sec + ru_r.ru_stime.tv_sec) * 1e6 + ru_r.ru_utime.tv_usec + ru_r.ru_stime.tv_usec;
  printf("msg=%d pin=%d,%d secs=%.2f Mbit/s=%.1f sender_busy=%.2f receiver_busy=%.2f sends=%lld sender_us_per_send=%.3f sender_sys_share=%.2f recvs=%lld bytes_per_recv=%.0f receiver_us_per_recv=%.3f receiver_us_per_KiB=%.4f sender_vcsw_per_send=%.4f sender_ivcsw_per_send=%.4f recv_vcsw_per_recv=%.3f recv_ivcsw_per_recv=%.3f\n",
    msg, pin_s, pin_r, el, rbytes * 8 / el / 1e6, cs / 1e6 / el, cr / 1e6 / el, sends, cs / sends,
    (ru_s.ru_stime.tv_sec * 1e6 + ru_s.ru_stime.tv_usec) / (cs + 1e-9), recvs, (double)rbytes / recvs, cr / recvs, cr / (rbytes / 1024.0),
    (double)(ru_s.ru_nvcsw - r0.ru_nvcsw) / sends, (double)(ru_s.ru_nivcsw - r0.ru_nivcsw) / sends, (double)ru_r.ru_nvcsw / recvs, (double)ru_r.ru_nivcsw / recvs);
  return 0;
}
