#!/usr/bin/python3
"""Runs a command and reports its wall time and memory as one JSON line on stdout.

  scripts/measure-run.py [--data-limit-gib N] -- COMMAND ARGS...

The peak resident set is the kernel's (ru_maxrss); its anonymous (RssAnon) and file-backed
(RssFile) parts are the largest seen in /proc/PID/status, sampled every 50 ms (fsq
re-executes itself under the same pid). --data-limit-gib sets RLIMIT_DATA (private writable
memory) for the command, so that a run that would take the machine fails with an allocation
error instead of waking the kernel's OOM killer. The command's own output goes to stderr.
Exit status: the command's ("signal N" in the JSON when it was killed).
"""
import json
import os
import resource
import subprocess
import sys
import time


def status_kib(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def main():
    args = sys.argv[1:]
    limit = None
    if args[:1] == ["--data-limit-gib"]:
        limit = int(float(args[1]) * (1 << 30))
        args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: measure-run.py [--data-limit-gib N] -- COMMAND ARGS...", file=sys.stderr)
        sys.exit(2)

    def set_limit():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=sys.stderr, preexec_fn=set_limit)
    peak = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
    while True:
        for key, value in status_kib(proc.pid).items():
            peak[key] = max(peak[key], value)
        pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        time.sleep(0.05)
    wall = time.monotonic() - start
    rc = os.waitstatus_to_exitcode(wait_status)
    peak["VmHWM"] = max(peak["VmHWM"], usage.ru_maxrss)  # exact, in KiB, even after the last sample
    result = {"command": args, "seconds": round(wall, 2), "exit": rc if rc >= 0 else f"signal {-rc}",
              "peak_rss_mib": round(peak["VmHWM"] / 1024, 1), "peak_anon_mib": round(peak["RssAnon"] / 1024, 1),
              "peak_file_mib": round(peak["RssFile"] / 1024, 1)}
    if limit is not None:
        result["data_limit_gib"] = limit / (1 << 30)
    print(json.dumps(result))
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
