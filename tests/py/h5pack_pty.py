#!/usr/bin/env python3
"""h5pack_pty.py [--stdout-pty] [--stderr-pty] [--stdin FILE] [--pieces N
[--delay S]] -- CMD ARGS... - run a command with a terminal.

Runs CMD with its standard output and/or standard error on a
pseudo-terminal, so tests can see what a program does for a person at a
terminal (progress lines, refusing to write binary data there). Standard
input comes from FILE, written in N pieces S seconds apart (a slow
producer), or is empty. What the command wrote to the terminal is copied to
our standard output; we exit with the command's status.
"""
import argparse
import os
import pty
import subprocess
import sys
import threading
import time


def feed(proc, path, pieces, delay):
    data = open(path, "rb").read() if path else b""
    step = max(1, -(-len(data) // pieces))
    try:
        for i in range(0, len(data), step):
            proc.stdin.write(data[i:i + step])
            proc.stdin.flush()
            time.sleep(delay)
    except BrokenPipeError:
        pass
    finally:
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stdout-pty", action="store_true")
    p.add_argument("--stderr-pty", action="store_true")
    p.add_argument("--stdin")
    p.add_argument("--pieces", type=int, default=1)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                            stdout=slave if a.stdout_pty else None,
                            stderr=slave if a.stderr_pty else None)
    os.close(slave)
    t = threading.Thread(target=feed, args=(proc, a.stdin, a.pieces,
                                            a.delay))
    t.start()
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal closed it
            break
        if not chunk:
            break
        out += chunk
    t.join()
    rc = proc.wait()
    sys.stdout.buffer.write(out)
    sys.exit(rc)


if __name__ == "__main__":
    main()
