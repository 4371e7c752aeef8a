#!/usr/bin/env python3
"""bench-rss - run a command and write its peak resident set size, and
with --pss its peak proportional set size.

Usage: bench-rss.py [--pss MS] FILE COMMAND [ARG...]

Runs COMMAND with this process's stdin, stdout and stderr, waits for it
and writes its peak RSS in KiB (ru_maxrss of the child alone, from wait4)
to FILE; exits with the command's status (128 + signal when it was
killed). The equivalent of `/usr/bin/time -f %M -o FILE COMMAND`.

--pss MS also reads the child's /proc/PID/smaps_rollup every MS
milliseconds while it runs and writes a second line, "pss KIB SAMPLES":
the largest Pss seen and how many samples were taken ("pss - 0" when the
file could not be read). PSS counts each page shared with other
processes (libraries, shared memory between stages) as its share, so
the stages' PSS add up to what the pipeline holds; RSS counts such a
page whole in each. A sample is a moment: a peak shorter than MS may
fall between two.

Once the command runs, this process keeps no copy of its stdin and
stdout, so that a pipe between two stages has the stages alone at its
ends (melpipe's zero-copy path looks at who reads its pipes).
scripts/bench and scripts/bench-shards wrap pipeline stages with it.
"""
import os
import signal
import sys
import threading


def usage(to, code):
    print(__doc__.strip(), file=to)
    return code


def read_pss(fd):
    """The Pss of an open /proc/PID/smaps_rollup in KiB, or None."""
    try:
        text = os.pread(fd, 8192, 0).decode("ascii", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return None


class PssSampler(threading.Thread):
    """Reads pid's smaps_rollup every interval seconds until stopped; the
    file is opened once, so that a pid reused after the child's end is
    never read."""

    def __init__(self, pid, interval):
        super().__init__(daemon=True)
        self.interval, self.peak, self.samples = interval, None, 0
        self.done = threading.Event()
        try:
            self.fd = os.open(f"/proc/{pid}/smaps_rollup", os.O_RDONLY)
        except OSError:
            self.fd = None

    def sample(self):
        v = read_pss(self.fd) if self.fd is not None else None
        if v is not None:
            self.samples += 1
            self.peak = v if self.peak is None else max(self.peak, v)

    def run(self):
        while True:
            self.sample()
            if self.done.wait(self.interval):
                return

    def stop(self):
        self.done.set()
        self.join()
        if self.fd is not None:
            os.close(self.fd)


def main(argv):
    args = argv[1:]
    if args and args[0] in ("-h", "--help"):
        return usage(sys.stdout, 0)
    interval = None
    if args and args[0] == "--pss":
        try:
            interval = float(args[1]) / 1000
        except (IndexError, ValueError):
            interval = -1
        if not 0 < interval <= 60:
            print("bench-rss: --pss takes milliseconds, 1 to 60000",
                  file=sys.stderr)
            return 2
        args = args[2:]
    if len(args) < 2:
        return usage(sys.stderr, 2)
    out, cmd = args[0], args[1:]
    # Leave SIGPIPE and SIGINT to the child, as a shell would.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        pid = os.posix_spawnp(cmd[0], cmd, os.environ)
    except OSError as e:
        print(f"bench-rss: unable to run '{cmd[0]}': {e.strerror}",
              file=sys.stderr)
        return 127
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    sampler = PssSampler(pid, interval) if interval else None
    if sampler:
        sampler.start()
    _, status, ru = os.wait4(pid, 0)
    if sampler:
        sampler.stop()
    with open(out, "w") as f:
        f.write(f"{ru.ru_maxrss}\n")
        if sampler:
            f.write(f"pss {sampler.peak if sampler.peak is not None else '-'}"
                    f" {sampler.samples}\n")
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
