#!/usr/bin/env bash
# Fails when a tracked C or C++ file is not formatted as .clang-format says (clang-format 14,
# Debian's clang-format-14, so every machine formats alike). To fix what it reports:
#   git ls-files '*.cc' '*.h' '*.c' | xargs clang-format-14 -i
set -euo pipefail
cd "$(dirname "$0")/../.."
formatter=${CLANG_FORMAT:-clang-format-14}
command -v "$formatter" >/dev/null ||
  { echo "check/format.sh: $formatter not found (scripts/install-deps.sh installs clang-format-14)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' '*.cu')
if ! "$formatter" --dry-run -Werror "${files[@]}" 2>/tmp/check-format.$$; then
  grep -o '^[^:]*:[0-9]*' /tmp/check-format.$$ | sort -u | head -40 >&2
  rm -f /tmp/check-format.$$
  echo "check/format.sh: the files above are not formatted; run: git ls-files '*.cc' '*.h' '*.c' | xargs $formatter -i" >&2
  exit 1
fi
rm -f /tmp/check-format.$$
echo "check/format: ${#files[@]} files formatted as .clang-format says"
