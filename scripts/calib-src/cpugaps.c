// What the machine takes from a running task: a busy loop pinned to one CPU
// reads the TSC and records every gap above 1 us (an interrupt, a VM exit, the
// host running something else on the vCPU's thread), for SECONDS. The gaps at
// the tick's phase (the peak of gap start times modulo the tick period) are
// the tick; the rest are the other interruptions. Unlike irq tracepoints, this
// sees a guest's VM exits and host work, which the running task is charged
// for (no IRQ_TIME_ACCOUNTING; steal is only what the host reports).
// (docs/CALIBRATION.md "Machine noise", session 26)
// Usage: cpugaps SECONDS [CPU [TICK_US]]
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>
#define MAXG 2000000
static double wall(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double gs[MAXG], gd[MAXG];
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void summary(const char *what, double *v, int n, double dur) {
    double tot = 0;
    for (int i = 0; i < n; i++) tot += v[i];
    if (!n) { printf("%s: none\n", what); return; }
    qsort(v, n, sizeof *v, cmp);
    printf("%s: %.1f/s, mean %.1f us, p10 %.1f p50 %.1f p90 %.1f p99 %.1f us, %.2f ms/s\n", what, n / dur, tot / n, v[n / 10],
           v[n / 2], v[n * 9 / 10], v[n * 99 / 100], tot / 1e3 / dur);
}
int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: cpugaps SECONDS [CPU [TICK_US]]\n"); return 2; }
    double dur = atof(argv[1]);
    int cpu = argc > 2 ? atoi(argv[2]) : 1;
    double tick = argc > 3 ? atof(argv[3]) : 4000;
    if (!(dur > 0) || !(tick >= 40)) { fprintf(stderr, "cpugaps: SECONDS must be > 0 and TICK_US >= 40\n"); return 2; }
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) { perror("sched_setaffinity"); return 1; }
    double a = wall(); unsigned long long c0 = __rdtsc();
    while (wall() - a < 0.2);
    double tpu = (__rdtsc() - c0) / ((wall() - a) * 1e6);
    int n = 0;
    unsigned long long start = __rdtsc(), end = start + (unsigned long long)(dur * 1e6 * tpu), last = start;
    for (;;) {
        unsigned long long t = __rdtsc();
        if (t > end) break;
        double d = (t - last) / tpu;
        if (d > 1.0 && n < MAXG) { gs[n] = (last - start) / tpu; gd[n] = d; n++; }
        last = t;
    }
    // The tick's phase: the 20 us bin of start time modulo the period holding most gaps.
    int bins = (int)(tick / 20), best = 0;
    int *h = calloc(bins, sizeof *h);
    for (int i = 0; i < n; i++) h[(int)(gs[i] / 20) % bins]++;
    for (int b = 1; b < bins; b++) if (h[b] > h[best]) best = b;
    static double tk[MAXG], ot[MAXG];
    int nt = 0, no = 0;
    for (int i = 0; i < n; i++) {
        int b = (int)(gs[i] / 20) % bins, dist = abs(b - best);
        if (dist > bins / 2) dist = bins - dist;
        if (dist <= 1) tk[nt++] = gd[i]; else ot[no++] = gd[i];
    }
    printf("cpu %d, %.1f s, tick period %.0f us\n", cpu, dur, tick);
    summary("tick-phase gaps", tk, nt, dur);
    summary("other gaps", ot, no, dur);
    return 0;
}
