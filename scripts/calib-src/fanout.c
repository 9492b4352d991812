// Which of several woken tasks runs first. Run under `taskset -c CPU` so that every task shares one CPU.
// A waker W (comm "waker") writes one byte to each of K sleepers' pipes in order 0..K-1 (K wakeups,
// WF_SYNC), spins A_US, then reads K bytes back from its own pipe (blocking). Each sleeper ("sleeperI"),
// woken, spins B_US and writes one byte back. HOGS processes ("hog") spin for ever. Spins count TSC
// time. Prints the rounds per second and W's voluntary / involuntary switches per round (getrusage()).
// Which sleeper runs first in each round is read from a sched_switch trace of the run (scripts/fanout).
// With positive lag, each wakee placed by place_entity() lowers the queue's average vruntime, so the
// last one woken lands earliest. crates/engine/tests/wakeup_preemption.rs compares the model with it.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#include <x86intrin.h>
#include <sys/prctl.h>
#include <sys/resource.h>
static double tsc_per_us;
static void spin(double us){ unsigned long long e=__rdtsc()+(unsigned long long)(us*tsc_per_us); while(__rdtsc()<e); }
int main(int argc,char**argv){
  if(argc<6){fprintf(stderr,"usage: fanout K HOGS A_US B_US SECONDS\n");return 2;}
  int k=atoi(argv[1]), h=atoi(argv[2]); double a=atof(argv[3]), b=atof(argv[4]); int secs=atoi(argv[5]);
  if(k<1||k>32||h<0||h>32||a<=0||b<=0||secs<=0){fprintf(stderr,"fanout: K must be 1-32, HOGS 0-32, A_US, B_US and SECONDS above 0\n");return 2;}
  unsigned long long t0=__rdtsc(); usleep(100000); tsc_per_us=(__rdtsc()-t0)/100000.0;
  pid_t kids[64]; int nk=0; int back[2]; if(pipe(back)) return 1; char c=1, buf[64];
  for(int i=0;i<h;i++){ if((kids[nk++]=fork())==0){ prctl(PR_SET_NAME,"hog"); for(;;); } }
  int in[32][2];
  for(int i=0;i<k;i++){ if(pipe(in[i])) return 1; if((kids[nk++]=fork())==0){ char nm[16]; snprintf(nm,16,"sleeper%d",i); prctl(PR_SET_NAME,nm);
      for(;;){ if(read(in[i][0],&c,1)!=1) exit(0); spin(b); if(write(back[1],&c,1)!=1) exit(0);} } }
  prctl(PR_SET_NAME,"waker");
  struct rusage r0,r1; getrusage(RUSAGE_SELF,&r0);
  unsigned long long end=__rdtsc()+(unsigned long long)(secs*1e6*tsc_per_us); long n=0;
  while(__rdtsc()<end){ for(int i=0;i<k;i++) if(write(in[i][1],&c,1)!=1) goto out;
    spin(a); int got=0; while(got<k){ int r=read(back[0],buf,k-got); if(r<=0) goto out; got+=r;} n++; }
 out:
  getrusage(RUSAGE_SELF,&r1);
  for(int i=0;i<nk;i++) kill(kids[i],9);
  if(n==0){fprintf(stderr,"fanout: no round completed\n");return 1;}
  printf("k=%d hogs=%d a_us=%g b_us=%g rounds_per_s=%.0f waker_vol=%.4f waker_invol=%.4f\n",k,h,a,b,n/(double)secs,
    (r1.ru_nvcsw-r0.ru_nvcsw)/(double)n,(r1.ru_nivcsw-r0.ru_nivcsw)/(double)n);
  return 0; }
