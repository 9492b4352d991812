#!/usr/bin/env python3
"""Pages a running program touches in a short interval (docs/CALIBRATION.md, page sets).

usage: pageset.py SECONDS PID[,PID...]   (root)

For each PID: clear the accessed bits of its page tables (/proc/PID/clear_refs,
which also flushes its TLB), wait SECONDS, and sum `Referenced:` of
/proc/PID/smaps per mapping. Three repetitions. Shared file pages (libc, the
program's text) can also be marked referenced by other processes through the
page flag, so keep the machine otherwise idle and compare against an idle
process (e.g. `sleep 1000`) given as the last PID: its total must stay ~0.
"""
import re
import sys
import time


def referenced(pid):
    out, name = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                fields = line.split()
                name = (fields[5] if len(fields) > 5 else "[anon]").split("/")[-1] + ":" + fields[1]
            elif line.startswith("Referenced:"):
                out[name] = out.get(name, 0) + int(line.split()[1])
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    seconds, pids = float(sys.argv[1]), [int(p) for p in sys.argv[2].split(",")]
    for _ in range(3):
        for p in pids:
            with open(f"/proc/{p}/clear_refs", "w") as f:
                f.write("1")
        time.sleep(seconds)
        res = [referenced(p) for p in pids]
        detail = " ".join(f"{k}={v}" for k, v in sorted(res[0].items(), key=lambda x: -x[1]) if v > 0)
        print(seconds, "KiB per pid:", [sum(r.values()) for r in res], "| first pid:", detail)


if __name__ == "__main__":
    main()
