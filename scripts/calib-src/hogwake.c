// Wakeup preemption among hogs: run under `taskset -c CPU` so that every task shares one CPU. HOGS
// processes spin forever; a waker W spins A_US, wakes a sleeper S through a pipe (1 byte, WF_SYNC)
// and blocks reading its own pipe; S spins B_US, wakes W the same way and blocks. Spins count TSC
// time, so no syscall but the pipes'. Prints the rounds per second and, per round, W's and S's
// voluntary and involuntary context switches (W: getrusage(); S: /proc/PID/status). Whether the
// woken task preempts its waker, and whom the CPU goes to when the waker blocks, are the kernel's
// EEVDF wakeup check and pick with the hogs' lag in the picture.
// scripts/hogwake runs it; crates/engine/tests/wakeup_preemption.rs compares the model with it.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#include <x86intrin.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <string.h>
static double tsc_per_us;
static void spin(double us){ unsigned long long e=__rdtsc()+(unsigned long long)(us*tsc_per_us); while(__rdtsc()<e); }
int main(int argc,char**argv){
  if(argc<5){fprintf(stderr,"usage: hogwake HOGS A_US B_US SECONDS\n");return 2;}
  int h=atoi(argv[1]); double a=atof(argv[2]), b=atof(argv[3]); int secs=atoi(argv[4]);
  if(h<0||h>64||a<=0||b<=0||secs<=0){fprintf(stderr,"hogwake: HOGS must be 0-64, A_US, B_US and SECONDS above 0\n");return 2;}
  unsigned long long t0=__rdtsc(); usleep(100000); tsc_per_us=(__rdtsc()-t0)/100000.0;
  pid_t hp[64];
  for(int i=0;i<h;i++){ if((hp[i]=fork())==0){ prctl(PR_SET_NAME,"hog"); for(;;); } }
  int ws[2], sw[2]; if(pipe(ws)||pipe(sw)) return 1; char c=1;
  pid_t s=fork();
  if(s==0){ prctl(PR_SET_NAME,"sleeper"); for(;;){ if(read(ws[0],&c,1)!=1) exit(0); spin(b); if(write(sw[1],&c,1)!=1) exit(0);} }
  prctl(PR_SET_NAME,"waker");
  unsigned long long end=__rdtsc()+(unsigned long long)(secs*1e6*tsc_per_us); long n=0;
  while(__rdtsc()<end){ spin(a); if(write(ws[1],&c,1)!=1) break; if(read(sw[0],&c,1)!=1) break; n++; }
  struct rusage ru; getrusage(RUSAGE_SELF,&ru);
  long sv=-1, si=-1; char path[64], line[256]; snprintf(path,sizeof path,"/proc/%d/status",s);
  FILE*f=fopen(path,"r"); while(f&&fgets(line,sizeof line,f)){ sscanf(line,"voluntary_ctxt_switches: %ld",&sv); sscanf(line,"nonvoluntary_ctxt_switches: %ld",&si);} if(f) fclose(f);
  kill(s,9); for(int i=0;i<h;i++) kill(hp[i],9);
  printf("hogs=%d a_us=%g b_us=%g rounds_per_s=%.0f waker_vol=%.4f waker_invol=%.4f sleeper_vol=%.4f sleeper_invol=%.4f\n",h,a,b,n/(double)secs,
    ru.ru_nvcsw/(double)n, ru.ru_nivcsw/(double)n, sv/(double)n, si/(double)n); return 0; }
