#!/usr/bin/env python3
"""bench-rss - run a command and write its peak resident set size.

Usage: bench-rss.py FILE COMMAND [ARG...]

Runs COMMAND with this process's stdin, stdout and stderr, waits for it
and writes its peak RSS in KiB (ru_maxrss of the child alone, from wait4)
to FILE; exits with the command's status (128 + signal when it was
killed). scripts/bench uses it in pipelines where /usr/bin/time is
missing, the equivalent of `/usr/bin/time -f %M -o FILE COMMAND`.
"""
import os
import signal
import sys


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if len(argv) == 2 else
              sys.stderr)
        return 0 if len(argv) == 2 else 2
    out, cmd = argv[1], argv[2:]
    # Leave SIGPIPE and SIGINT to the child, as a shell would.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        pid = os.posix_spawnp(cmd[0], cmd, os.environ)
    except OSError as e:
        print(f"bench-rss: unable to run '{cmd[0]}': {e.strerror}",
              file=sys.stderr)
        return 127
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _, status, ru = os.wait4(pid, 0)
    with open(out, "w") as f:
        f.write(f"{ru.ru_maxrss}\n")
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
