#!/usr/bin/env bash
# The wheel against the Debian build: the wheel's size, what it installs, and
# `pltrun --version` and a launch of 4 workers from a venv that installed it against the
# Release build of the same tree on the system's shared libraries (what the .deb packages)
# and /bin/true, in one hyperfine run (medians; the ratios are within the run).
#
#   bash scripts/bench/wheel.sh [--no-build]
#
# Builds the wheel (scripts/package/wheel.sh, as root) and the Release build (build-bench/)
# first unless --no-build. The venv is made with Debian's python3 in a temporary directory
# and removed after.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=lib/bench-build.sh
. scripts/bench/lib/bench-build.sh
if [ "${1:-}" != "--no-build" ]; then
  bash scripts/install-deps.sh >&2
  bash scripts/package/wheel.sh >/dev/null
  bench_build build-bench pltrun
fi
wheel=$(ls build-wheel/dist/pltrun-*.whl 2>/dev/null || true)
bench_require wheel.sh build-bench/apps/pltrun
[ -f "$wheel" ] || { echo "wheel.sh: no wheel in build-wheel/dist (run without --no-build)" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
/usr/bin/python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q --no-index --disable-pip-version-check "$wheel"

echo "== the wheel"
echo "wheel file: $(du -k "$wheel" | cut -f1) KiB ($(basename "$wheel"))"
echo "installed: $(du -sk "$scratch/venv/lib/"python3*/site-packages/pltrun | cut -f1) KiB package + programs: pltrun $(du -k "$scratch/venv/bin/pltrun" | cut -f1) KiB, pltrun-store $(du -k "$scratch/venv/bin/pltrun-store" | cut -f1) KiB"
echo "Debian build (Release, shared libraries): pltrun $(du -k build-bench/apps/pltrun | cut -f1) KiB unstripped, $(strip -o "$scratch/stripped" build-bench/apps/pltrun && du -k "$scratch/stripped" | cut -f1) KiB stripped"

echo "== pltrun --version, and a launch of 4 workers of /bin/true: the wheel's, the Debian build's (hyperfine, no shell)"
launch="--nproc-per-node 4 --no-python -q /bin/true"
hyperfine -N --warmup 10 --runs "${PLTRUN_BENCH_RUNS:-200}" --export-json "$scratch/version.json" \
  -n wheel "$scratch/venv/bin/pltrun --version" -n debian "build-bench/apps/pltrun --version" -n true /bin/true \
  -n "wheel 4" "$scratch/venv/bin/pltrun $launch" -n "debian 4" "build-bench/apps/pltrun $launch" >/dev/null
/usr/bin/python3 - "$scratch/version.json" <<'PY'
import json, sys
results = {r["command"]: r["median"] * 1000 for r in json.load(open(sys.argv[1]))["results"]}
for name in ("wheel", "debian", "true", "wheel 4", "debian 4"):
    print(f"{name:>8}: {results[name]:.2f} ms median")
print(f"--version: wheel / debian {results['wheel'] / results['debian']:.2f}x; wheel / true {results['wheel'] / results['true']:.2f}x; "
      f"debian / true {results['debian'] / results['true']:.2f}x")
print(f"4 workers: wheel / debian {results['wheel 4'] / results['debian 4']:.2f}x")
PY
