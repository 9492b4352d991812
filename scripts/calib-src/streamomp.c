/* STREAM-shaped OpenMP kernels (Copy, Scale, Add, Triad; one parallel for
 * each, so one barrier each), NTIMES repetitions. Our own code, written to the
 * STREAM benchmark's published structure. Usage: streamomp N NTIMES
 * Prints: kernels=K bytes=B seconds=S */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    int nt = argc > 2 ? atoi(argv[2]) : 10;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c), s = 3.0;
#pragma omp parallel for
    for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.0; }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 0; k < nt; k++) {
#pragma omp parallel for
        for (long j = 0; j < n; j++) c[j] = a[j];
#pragma omp parallel for
        for (long j = 0; j < n; j++) b[j] = s * c[j];
#pragma omp parallel for
        for (long j = 0; j < n; j++) c[j] = a[j] + b[j];
#pragma omp parallel for
        for (long j = 0; j < n; j++) a[j] = b[j] + s * c[j];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("kernels=%d bytes=%.0f seconds=%.4f check=%.1f\n", 4 * nt, (double)nt * n * 8 * 10, secs, a[n / 2]);
    return 0;
}
