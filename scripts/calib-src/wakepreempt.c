// Wakeup preemption of a hog by the sleepers it wakes, all pinned to one vCPU
// (docs/CALIBRATION.md "Wakeup preemption of a hog waker").
// A client thread loops: X us of CPU, then a 1-byte write to server i's pipe
// (round robin over K servers). Each server loops: read 1 byte, S us of CPU.
// Prints the client's involuntary switches per write (getrusage RUSAGE_THREAD):
// the share of its wakeups that preempt it, plus its slice-end preemptions.
// The CPU spins count rdtsc time and skip gaps above 2 us (time off the CPU),
// so the spin is CPU time without a syscall: clock_gettime(CLOCK_THREAD_CPUTIME_ID)
// would call update_curr() through task_sched_runtime() and end the client's
// slice early (FIDELITY F-028).
// Usage: wakepreempt K S_US X_US SECONDS [CPU [SERVER_NICE]]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
static int K, S, X, CPU, NICE;
static double DUR, tpu;
static int fds[64][2];
static long served[64];
static double wall(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void calib(void) { double a = wall(); unsigned long long c = __rdtsc(); while (wall() - a < 0.2); tpu = (__rdtsc() - c) / ((wall() - a) * 1e6); }
static void spin(int us) {
    unsigned long long tgt = us * tpu, gap = 2 * tpu, acc = 0, last = __rdtsc();
    while (acc < tgt) { unsigned long long t = __rdtsc(), d = t - last; if (d < gap) acc += d; last = t; }
}
static void pin(void) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(CPU, &s); sched_setaffinity(0, sizeof s, &s); }
static void *srv(void *a) {
    long i = (long)a; char b;
    pin();
    if (NICE) setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), NICE);
    while (read(fds[i][0], &b, 1) == 1 && b != 'q') { spin(S); served[i]++; }
    return 0;
}
int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: wakepreempt K S_US X_US SECONDS [CPU [SERVER_NICE]]\n"); return 2; }
    K = atoi(argv[1]); S = atoi(argv[2]); X = atoi(argv[3]); DUR = atof(argv[4]); CPU = argc > 5 ? atoi(argv[5]) : 1; NICE = argc > 6 ? atoi(argv[6]) : 0;
    if (K < 1 || K > 64) { fprintf(stderr, "wakepreempt: K must be 1..64\n"); return 2; }
    if (S < 0 || X < 0 || !(DUR > 0)) { fprintf(stderr, "wakepreempt: S_US and X_US must be >= 0 and SECONDS > 0\n"); return 2; }
    if (NICE < -20 || NICE > 19) { fprintf(stderr, "wakepreempt: SERVER_NICE must be -20..19\n"); return 2; }
    calib();
    pthread_t t[64];
    for (long i = 0; i < K; i++) { if (pipe(fds[i])) return 1; pthread_create(&t[i], 0, srv, (void *)i); }
    pin();
    usleep(100000);
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    double t0 = wall();
    long n = 0;
    while (wall() - t0 < DUR) { spin(X); if (write(fds[n % K][1], "x", 1) != 1) return 1; n++; }
    getrusage(RUSAGE_THREAD, &r1);
    long done = 0;
    for (int i = 0; i < K; i++) done += served[i];
    printf("K=%d S=%d X=%d writes=%ld served=%ld nivcsw_per_write=%.4f nvcsw_per_write=%.4f\n", K, S, X, n, done,
           (double)(r1.ru_nivcsw - r0.ru_nivcsw) / n, (double)(r1.ru_nvcsw - r0.ru_nvcsw) / n);
    for (int i = 0; i < K; i++) if (write(fds[i][1], "q", 1) != 1) return 1;
    for (int i = 0; i < K; i++) pthread_join(t[i], 0);
    return 0;
}
