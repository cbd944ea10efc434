"""A worker that speaks torch's FileTimer protocol by hand (tests/e2e/file_timer_test.cc):
one JSON line per request into the FIFO at TORCHELASTIC_TIMER_FILE, as torch's
FileTimerClient writes them, but with what a hostile or broken worker might send.

  flood COUNT SYNC     COUNT timers of its own, each with a 3000-byte scope id; then writes
                       SYNC/sent and waits for SYNC/go
  foreign PID          a timer for PID (not the job's) that expires at once, asking SIGKILL;
                       waits 2 s and exits 0
  descendant           a child in a session of its own holds a timer that expires (SIGKILL):
                       the launcher kills it; exits 0 once the child is gone
  escape               a timer of its own with ESC, BEL and a line break in its scope id that
                       expires (SIGKILL): the launcher kills this worker
"""

import json
import os
import subprocess
import sys
import time


def send(fifo, pid, scope, after, signal=9):
    line = {"version": 1, "pid": pid, "scope_id": scope, "expiration_time": time.time() + after, "signal": signal}
    os.write(fifo, (json.dumps(line) + "\n").encode())


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.05)


def main():
    fifo = os.open(os.environ["TORCHELASTIC_TIMER_FILE"], os.O_WRONLY)
    mode = sys.argv[1]
    if mode == "flood":
        count, sync = int(sys.argv[2]), sys.argv[3]
        padding = "x" * 3000
        for index in range(count):
            send(fifo, os.getpid(), f"{index}-{padding}", 600)
        open(os.path.join(sync, "sent"), "w").close()
        wait_for(os.path.join(sync, "go"))
    elif mode == "foreign":
        send(fifo, int(sys.argv[2]), "foreign", 0.2)
        time.sleep(2)
    elif mode == "descendant":
        child = subprocess.Popen(
            [sys.executable, "-c", "import os, sys, time\n"
             "sys.path.insert(0, os.path.dirname(sys.argv[1]))\n"
             "import file_timer_client as c\n"
             "c.send(os.open(os.environ['TORCHELASTIC_TIMER_FILE'], os.O_WRONLY), os.getpid(), 'descendant', 0.2)\n"
             "time.sleep(30)\n", __file__],
            start_new_session=True)
        child.wait()
        print("child ended by signal", -child.returncode, flush=True)
    elif mode == "escape":
        send(fifo, os.getpid(), "evil\x1b[31m\nFORGED line\x07", 0.2)
        time.sleep(30)


if __name__ == "__main__":
    main()
