// What a wakeup costs the waker. Run under `taskset -c CPU` so that every task shares one CPU:
//   wakecost K ROUNDS
// K children block reading their own pipes as SCHED_IDLE tasks, so that a wakeup never preempts
// the parent. Each round the parent writes one byte to K pipes nobody reads (no wakeup), then one
// byte to each child's pipe (K wakeups), then K more bytes to the unread pipes, timing each batch
// with the TSC; it drains the unread pipes and sleeps 300 us so that the children read and block
// again. Prints the mean time per write of each batch. The first batch follows the sleep (caches
// partly cold); the third is the plain write's cost.
// docs/CALIBRATION.md "What a wakeup costs the waker".
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#include <sched.h>
#include <x86intrin.h>

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: wakecost K ROUNDS\n"); return 2; }
  int k = atoi(argv[1]);
  long rounds = atol(argv[2]);
  if (k < 1 || k > 32 || rounds <= 0) { fprintf(stderr, "wakecost: K must be 1-32 and ROUNDS above 0\n"); return 2; }
  char c = 1, b[64];
  unsigned long long t0 = __rdtsc();
  usleep(100000);
  double tpu = (__rdtsc() - t0) / 100000.0;
  int p[32][2], q[32][2];
  pid_t kid[32];
  for (int i = 0; i < k; i++) {
    if (pipe(p[i]) || pipe(q[i])) return 1;
    if ((kid[i] = fork()) == 0) {
      struct sched_param sp = {0};
      sched_setscheduler(0, SCHED_IDLE, &sp);
      for (;;)
        if (read(p[i][0], b, sizeof b) <= 0) exit(0);
    }
  }
  usleep(100000);
  double pre = 0, wake = 0, post = 0;
  for (long r = 0; r < rounds; r++) {
    unsigned long long a = __rdtsc();
    for (int i = 0; i < k; i++) if (write(q[i][1], &c, 1) != 1) return 1;
    unsigned long long m = __rdtsc();
    for (int i = 0; i < k; i++) if (write(p[i][1], &c, 1) != 1) return 1;
    unsigned long long n = __rdtsc();
    for (int i = 0; i < k; i++) if (write(q[i][1], &c, 1) != 1) return 1;
    unsigned long long e = __rdtsc();
    for (int i = 0; i < k; i++) if (read(q[i][0], b, sizeof b) <= 0) return 1;
    pre += (m - a) / tpu;
    wake += (n - m) / tpu;
    post += (e - n) / tpu;
    usleep(300);
  }
  for (int i = 0; i < k; i++) kill(kid[i], 9);
  printf("k=%d us_per_write: no_reader_after_sleep=%.3f waking=%.3f no_reader=%.3f\n", k, pre / rounds / k, wake / rounds / k, post / rounds / k);
  return 0;
}
