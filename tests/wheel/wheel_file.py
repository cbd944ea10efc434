"""The wheel the wheel's tests install, found one way for all of them (run_wheel_test.sh
calls this file; torch_restart_test.py and wheel_tag_test.py import it):
$PLTRUN_WHEEL_FILE when set, else the newest SOURCE_DIR/build-wheel/dist/pltrun-*.whl
(scripts/package/wheel.sh empties dist/ first, so there is one). Without one: the one line
saying how to make it.

    wheel_file.py SOURCE_DIR    prints the wheel's absolute path; exit 1 and that line when none
"""

import glob
import os
import sys

BUILD_COMMAND = "bash scripts/package/wheel.sh"


def find(source_dir: str) -> str:
    """The wheel's absolute path, or "" after printing (to stderr) why there is none."""
    pattern = os.path.join(source_dir, "build-wheel", "dist", "pltrun-*.whl")
    wheel = os.environ.get("PLTRUN_WHEEL_FILE", "")
    if not wheel:
        found = glob.glob(pattern)
        wheel = max(found, key=os.path.getmtime) if found else ""
    if not os.path.isfile(wheel):
        print(f"wheel test FAILED: no wheel ({wheel or pattern}): run {BUILD_COMMAND}", file=sys.stderr, flush=True)
        return ""
    return os.path.abspath(wheel)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: wheel_file.py SOURCE_DIR", file=sys.stderr)
        return 2
    wheel = find(sys.argv[1])
    if wheel:
        print(wheel)
    return 0 if wheel else 1


if __name__ == "__main__":
    sys.exit(main())
