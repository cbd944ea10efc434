#!/usr/bin/env bash
# What --metrics costs pltrun itself (issue 47: nothing measurable when off, under 1 % of a
# core scraped every second): the CPU time of the pltrun process alone (its threads' time on
# a CPU from /proc/PID/task/*/schedstat, in nanoseconds, the metrics server's thread
# included; not its workers') over a SECONDS-long job of 4 workers that each send 1,000
# heartbeats a second with a step counter (--stall-timeout 30, so pltrun reads them), in three
# modes, run interleaved (off, on, scraped, off, ...):
#   off      no --metrics
#   on       --metrics 127.0.0.1:0, never scraped
#   scraped  --metrics 127.0.0.1:0, GET /metrics SCRAPES times a second (default once, as
#            the issue's budget says; more to time one scrape above the noise) over
#            loopback at the URL pltrun prints (a Python thread here, urllib: a new
#            connection per scrape, the dearer case; Prometheus keeps its connection open)
# Prints the median of each and its share of one core, on's and scraped's difference to off,
# and one scrape's cost (scraped less on, per scrape).
#
#   scripts/bench/metrics.sh [RUNS [SECONDS [SCRAPES]]]   (default 3, 20 and 1; PLTRUN=path picks the binary)
#
# The workers are Debian's /usr/bin/python3 with one non-blocking socket each.
set -euo pipefail
cd "$(dirname "$0")/../.."
pltrun=$(realpath "${PLTRUN:-build/apps/pltrun}")
runs=${1:-3}
seconds=${2:-20}
scrapes=${3:-1}
[[ -x $pltrun ]] || { echo "bench/metrics.sh: no pltrun at $pltrun: bash scripts/build.sh pltrun" >&2; exit 2; }
for value in "$runs" "$seconds" "$scrapes"; do
  [[ $value =~ ^[1-9][0-9]*$ ]] || { echo "bench/metrics.sh: '$value' is not a positive whole number (RUNS, SECONDS, SCRAPES)" >&2; exit 2; }
done
if ! "$pltrun" -q --metrics 127.0.0.1:0 --nproc-per-node 1 --no-python /bin/true >/dev/null 2>&1; then
  echo "bench/metrics.sh: $pltrun refuses --metrics (a build from before issue 47?)" >&2
  exit 2
fi
/usr/bin/python3 - "$pltrun" "$runs" "$seconds" "$scrapes" <<'PYTHON'
import os, re, statistics, subprocess, sys, tempfile, threading, time, urllib.request

sys.dont_write_bytecode = True  # no __pycache__ left in the tree
sys.path.insert(0, "scripts/bench/lib")
from launcher_cpu import thread_cpu_seconds, worker_source

pltrun, runs, SECONDS, SCRAPES = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
WORKERS, RATE = 4, 1000
MEASURED = SECONDS - 0.3  # pltrun's time is read just before the workers end
WORKER = worker_source(SECONDS, RATE)
URL = re.compile(r"metrics at (http://\S+/metrics)")


class Scraper(threading.Thread):
    """Finds pltrun's `metrics at URL` line on its stderr; with `scrape`, fetches the URL
    SCRAPES times a second until stopped, counting the answers and their size."""

    def __init__(self, stderr, scrape):
        super().__init__(daemon=True)
        self.stderr, self.scrape = stderr, scrape
        self.url, self.found = None, threading.Event()
        self.stop, self.scrapes, self.failures, self.size = threading.Event(), 0, 0, 0
        threading.Thread(target=self.read_stderr, daemon=True).start()

    def read_stderr(self):
        for line in self.stderr:
            match = URL.search(line)
            if match and not self.url:
                self.url = match.group(1)
                self.found.set()

    def run(self):
        if not self.found.wait(10):
            return
        while not self.stop.wait(1.0 / SCRAPES):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as answer:
                    self.size = len(answer.read())
                    self.scrapes += 1
            except OSError:
                self.failures += 1


def launcher_cpu_seconds(mode, script):
    args = [pltrun, "--nproc-per-node", str(WORKERS), "--stall-timeout", "30"]
    if mode != "off":
        args += ["--metrics", "127.0.0.1:0"]
    job = subprocess.Popen(args + ["--no-python", "/usr/bin/python3", script], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    scraper = Scraper(job.stderr, mode == "scraped")
    scraper.start()
    time.sleep(MEASURED)
    cpu = thread_cpu_seconds(job.pid)
    scraper.stop.set()
    if job.wait(timeout=60) != 0:
        sys.exit(f"bench/metrics.sh: the {mode} job failed")
    if mode != "off" and not scraper.url:
        sys.exit(f"bench/metrics.sh: pltrun --metrics printed no 'metrics at URL' line (a build without the server?)")
    if mode == "scraped" and (scraper.failures or not scraper.scrapes):
        sys.exit(f"bench/metrics.sh: {scraper.failures} of {scraper.scrapes + scraper.failures} scrapes failed")
    return cpu, scraper


samples = {"off": [], "on": [], "scraped": []}
scrapes = []
with tempfile.TemporaryDirectory() as directory:
    script = os.path.join(directory, "worker.py")
    with open(script, "w") as file:
        file.write(WORKER)
    for _ in range(runs):
        for mode in samples:
            cpu, scraper = launcher_cpu_seconds(mode, script)
            samples[mode].append(cpu)
            if mode == "scraped":
                scrapes.append((scraper.scrapes, scraper.size))

off = statistics.median(samples["off"])


def share(cpu):
    return cpu / MEASURED * 100


print(f"pltrun's own CPU over {MEASURED:.1f} s, {WORKERS} workers beating at {RATE} Hz each, medians of {runs}:")
for mode, label in (("off", "--metrics off"), ("on", "on, not scraped"), ("scraped", f"on, scraped {SCRAPES}/s")):
    cpu = statistics.median(samples[mode])
    runs_text = ", ".join(f"{v * 1000:.0f}" for v in samples[mode])
    against = "" if mode == "off" else f"; {share(cpu) - share(off):+.2f} % of a core against off"
    print(f"  {label:<16} {cpu * 1000:6.0f} ms = {share(cpu):5.2f} % of a core (runs: {runs_text}){against}")
count = statistics.median(n for n, _ in scrapes)
per_scrape = (statistics.median(samples["scraped"]) - statistics.median(samples["on"])) / count
print(f"  one scrape: {per_scrape * 1e6:.0f} µs of pltrun's CPU ({count:.0f} scrapes a run, the body "
      f"{scrapes[-1][1]} bytes)")
PYTHON
