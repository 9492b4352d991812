// How late a nanosleep() wakes, with the default timer slack or another
// (prctl(PR_SET_TIMERSLACK)), alone on vCPU 1 or with a busy loop pinned there.
// Usage: timerslack SLACK_NS(-1 = default, 0 = 1 ns) HOG(0|1) SLEEP_US N [RUN_US]
// Prints the overshoot (time asleep minus SLEEP_US) percentiles. (docs/CALIBRATION.md "Timer slack")
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static long long ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static int cmp(const void*a,const void*b){long long x=*(long long*)a,y=*(long long*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){ long slack=atol(argv[1]); int hog=atoi(argv[2]); long sl=atol(argv[3]); int n=atoi(argv[4]); long ru=argc>5?atol(argv[5]):0;
 pid_t h=0; if(hog){ if(!(h=fork())){pin(1);volatile unsigned long x=0;for(;;)x++;} }
 pin(1); if(slack>=0) prctl(PR_SET_TIMERSLACK, slack?slack:1); usleep(100000);
 long long *lat=malloc(n*sizeof *lat);
 for(int i=0;i<n;i++){ long long t=ns(); struct timespec s={sl/1000000,(sl%1000000)*1000}; nanosleep(&s,0); lat[i]=ns()-t-sl*1000; long long t0=ns(); while(ns()-t0<ru*1000LL);}
 if(h){kill(h,9);wait(0);} qsort(lat,n,sizeof *lat,cmp);
 printf("slack=%ld hog=%d sleep_us=%ld run_us=%ld: overshoot us p10 %.1f p50 %.1f p90 %.1f p99 %.1f\n",slack,hog,sl,ru,lat[n/10]/1e3,lat[n/2]/1e3,lat[9*n/10]/1e3,lat[99*n/100]/1e3); return 0; }
