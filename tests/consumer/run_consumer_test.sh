#!/usr/bin/env bash
# The installed package, as a user meets it (CTest: "consumer: installed package builds and
# runs"):
#   1. cmake --install BUILD_DIR into a fresh temporary prefix;
#   2. the installed headers include nothing from Boost, spdlog, nlohmann or rendezvous/;
#      libpltrun.so exports the C API (pltrun_group_join, ...) and hides pltrun::rdzv;
#   3. tests/consumer (its own project) finds it with find_package(pltrun CONFIG) through
#      CMAKE_PREFIX_PATH alone, and builds a C++ program (pltrun::client, shared) and a C
#      program (pltrun::client_static);
#   4. both run alone (a world of one) and under `pltrun --nproc-per-node 3`, and every
#      rank prints its expected line;
#   5. the C program also builds with `cc ... $(pkg-config --cflags --libs pltrun)`, and
#      statically with the .pc's Libs.private, and runs.
# Needs no network. Removes its temporary directory and leaves no process behind.
#
# Usage: run_consumer_test.sh BUILD_DIR PLTRUN_BINARY SOURCE_DIR [CONFIG]
#        run_consumer_test.sh --installed PREFIX PLTRUN_BINARY SOURCE_DIR
#        run_consumer_test.sh --wheel VENV_PYTHON SOURCE_DIR
# --installed: steps 2 to 5 against a package already installed in PREFIX (/usr, where
# tests/package/in_chroot.sh installed the .deb files), instead of step 1's prefix.
# --wheel: steps 2 to 5 against the wheel installed in VENV_PYTHON's venv, found as a user
# finds it: CMAKE_PREFIX_PATH=$(python -m pltrun --cmake-dir), PKG_CONFIG_PATH=$(python -m
# pltrun --pkgconfig-dir); the prefix is the package's directory, the programs the venv's
# (tests/wheel/in_venv.py). The wheel has no libpltrun.a and its libpltrun.so no version in
# its soname (docs/PACKAGING.md): the C program links the shared library there, and the
# static pkg-config build is left out.
set -uo pipefail

installed_prefix=
cmake_prefix=   # CMAKE_PREFIX_PATH: the prefix unless --wheel
pkgconfig_dir=  # PKG_CONFIG_PATH: the library directory's pkgconfig/ unless --wheel
bin_dir=        # where pltrun and pltrun-store are installed: the prefix's bin/ unless --wheel
static=1        # whether the package has libpltrun.a (pltrun::client_static): not the wheel
soname_pattern='libpltrun.so.*'
if [ "${1:-}" = --installed ]; then
  installed_prefix=${2:-}
  shift 2 || true
  set -- "$installed_prefix" "$@"
elif [ "${1:-}" = --wheel ] && [ $# -eq 3 ]; then
  venv_python=$2
  cmake_prefix=$("$venv_python" -m pltrun --cmake-dir) || exit 1
  pkgconfig_dir=$("$venv_python" -m pltrun --pkgconfig-dir) || exit 1
  installed_prefix=$(dirname "$("$venv_python" -m pltrun --include-dir)") || exit 1
  bin_dir=$(dirname "$venv_python")
  static=0
  soname_pattern=libpltrun.so
  set -- "$installed_prefix" "$bin_dir/pltrun" "$3"
fi
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD_DIR PLTRUN_BINARY SOURCE_DIR [CONFIG]" >&2
  echo "       $0 --installed PREFIX PLTRUN_BINARY SOURCE_DIR" >&2
  echo "       $0 --wheel VENV_PYTHON SOURCE_DIR" >&2
  exit 2
fi
build_dir=$1
pltrun_binary=$2
source_dir=$3
config=${4:-}

fail() {
  echo "consumer test FAILED: $*" >&2
  exit 1
}
step() { echo "== $*"; }

[ -d "$build_dir" ] || fail "directory '$build_dir' does not exist"
[ -x "$pltrun_binary" ] || fail "pltrun binary '$pltrun_binary' is not an executable file"
[ -f "$source_dir/tests/consumer/CMakeLists.txt" ] || fail "'$source_dir' is not pltrun's source directory"
consumer_source=$source_dir/tests/consumer

work=$(mktemp -d "${TMPDIR:-/tmp}/pltrun-consumer.XXXXXX") || fail "mktemp failed"
cleanup() {
  # Anything still running from our temporary tree (a hung run killed by timeout) is ours:
  # end it by pid, then remove the tree.
  local pids
  pids=$(pgrep -f -- "$work/" 2>/dev/null || true)
  if [ -n "$pids" ]; then
    echo "consumer test: ending leftover processes $pids" >&2
    kill -KILL $pids 2>/dev/null || true
  fi
  rm -rf -- "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

prefix=${installed_prefix:-$work/prefix}
bin_dir=${bin_dir:-$prefix/bin}
log=$work/log

# Runs a command with its output in $log; on failure shows the log and fails.
run_logged() {
  local what=$1
  shift
  local status=0
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    cat "$log" >&2
    fail "$what: '$*' exited with status $status"
  fi
}

# The launcher's variables must not leak in from the caller's environment: alone, the
# programs must see no launcher at all.
launcher_variables=(RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK NODE_RANK GROUP_WORLD_SIZE ROLE_RANK
  ROLE_WORLD_SIZE MASTER_ADDR MASTER_PORT TORCHELASTIC_RESTART_COUNT TORCHELASTIC_RUN_ID TORCHELASTIC_USE_AGENT_STORE
  TORCHELASTIC_MAX_RESTARTS)
for variable in "${launcher_variables[@]}"; do unset "$variable"; done

# Checks that file $1 holds each of the lines $2... (after the launcher's "[... ]" prefix,
# if any) exactly once, and exactly as many lines starting with $tag as expected.
expect_lines() {
  local output=$1 tag=$2
  shift 2
  local stripped=$work/stripped
  sed -E 's/^\[[^]]*\] ?//' "$output" >"$stripped"
  local expected
  for expected in "$@"; do
    local count
    count=$(grep -cFx -- "$expected" "$stripped")
    if [ "$count" != 1 ]; then
      echo "--- output:" >&2
      cat "$output" >&2
      fail "expected the line '$expected' once, found it $count times"
    fi
  done
  local total
  total=$(grep -c -- "^$tag " "$stripped")
  if [ "$total" != $# ]; then
    echo "--- output:" >&2
    cat "$output" >&2
    fail "expected $# '$tag' lines, found $total"
  fi
}

# Runs PROGRAM alone: exit status 0 and the world-of-one line.
run_alone() {
  local program=$1 tag=$2 expected=$3
  local output=$work/$tag.alone.out
  if ! timeout -k 5 60 "$program" >"$output" 2>&1; then
    cat "$output" >&2
    fail "$program alone exited with a failure status"
  fi
  expect_lines "$output" "$tag" "$expected"
  echo "   $expected"
}

# Runs PROGRAM under the real launcher with 3 processes: every rank's line.
run_launched() {
  local program=$1 tag=$2
  shift 2
  local output=$work/$tag.launched.out
  if ! timeout -k 10 120 "$pltrun_binary" --nproc-per-node 3 "$program" >"$output" 2>&1; then
    cat "$output" >&2
    fail "pltrun --nproc-per-node 3 $program exited with a failure status"
  fi
  expect_lines "$output" "$tag" "$@"
  printf '   %s\n' "$@"
}

# --- 1. install ------------------------------------------------------------------------
if [ -z "$installed_prefix" ]; then
  step "cmake --install $build_dir --prefix $prefix"
  install_command=(cmake --install "$build_dir" --prefix "$prefix")
  [ -n "$config" ] && install_command+=(--config "$config")
  run_logged "install" "${install_command[@]}"
else
  step "the package installed in $prefix"
fi

config_file=$(find "$prefix" -name pltrunConfig.cmake -print -quit)
[ -n "$config_file" ] || fail "no pltrunConfig.cmake installed under $prefix"
libdir=$(dirname "$(dirname "$(dirname "$config_file")")")  # <libdir>/cmake/pltrun/pltrunConfig.cmake
static_archive=
[ "$static" = 1 ] && static_archive=$libdir/libpltrun.a
for file in $static_archive "$libdir/libpltrun.so" "$libdir/pkgconfig/pltrun.pc" \
  "$libdir/cmake/pltrun/pltrunConfigVersion.cmake" "$libdir/cmake/pltrun/pltrunTargets.cmake" \
  "$prefix/include/pltrun/pltrun.h" "$prefix/include/pltrun/group.h" "$prefix/include/pltrun/nccl.h" \
  "$bin_dir/pltrun" "$bin_dir/pltrun-store"; do
  [ -e "$file" ] || fail "not installed: $file"
done
[ -n "$installed_prefix" ] || (cd "$prefix" && find . | LC_ALL=C sort | sed 's/^/   /')

# --- 2. headers and exports ------------------------------------------------------------
step "installed headers are self-contained"
if grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](boost|spdlog|nlohmann|rendezvous|launcher)/' \
  "$prefix/include/pltrun"; then
  fail "an installed header includes Boost, spdlog, nlohmann or a private pltrun header (above)"
fi
# (An installed system's include/ holds everyone's headers.)
if [ -z "$installed_prefix" ] && [ -n "$(find "$prefix/include" -type f ! -path "$prefix/include/pltrun/*")" ]; then
  fail "files installed outside include/pltrun: $(find "$prefix/include" -type f ! -path "$prefix/include/pltrun/*")"
fi

step "libpltrun.so exports the API and hides the internals"
shared_library=$(readlink -f "$libdir/libpltrun.so")
exports=$work/exports
nm -D --defined-only "$shared_library" >"$exports" || fail "nm -D $shared_library failed"
for symbol in pltrun_group_join pltrun_barrier pltrun_all_gather pltrun_sampler_indices pltrun_last_error; do
  grep -qE " T $symbol\$" "$exports" || fail "libpltrun.so does not export $symbol"
done
nm -DC --defined-only "$shared_library" >"$exports.demangled"
grep -qF 'pltrun::Group::join()' "$exports.demangled" || fail "libpltrun.so does not export pltrun::Group::join()"
grep -qF 'typeinfo for pltrun::Error' "$exports.demangled" || fail "libpltrun.so does not export pltrun::Error's typeinfo"
if grep -E ' [A-Za-z] ((typeinfo|typeinfo name|vtable) for )?(pltrun::(rdzv|detail)::|boost::|spdlog::|nlohmann::)' \
  "$exports.demangled" | head -5 | grep .; then
  fail "libpltrun.so exports internal symbols (above)"
fi
soname=$(objdump -p "$shared_library" | awk '$1 == "SONAME" {print $2}')
# shellcheck disable=SC2053 # a pattern
[[ "$soname" == $soname_pattern ]] || fail "libpltrun.so has soname '$soname'"
echo "   soname $soname, $(grep -c ' [TVW] ' "$exports") exported symbols"

# --- 3. the consumer project, through CMAKE_PREFIX_PATH --------------------------------
step "configure and build tests/consumer against $prefix"
consumer_build=$work/consumer-build
run_logged "configure the consumer" cmake -S "$consumer_source" -B "$consumer_build" \
  -DCMAKE_PREFIX_PATH="${cmake_prefix:-$prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release
found_dir=$(sed -n 's/^pltrun_DIR:PATH=//p' "$consumer_build/CMakeCache.txt")
[ "$(readlink -f "$found_dir")" = "$(readlink -f "$libdir/cmake/pltrun")" ] ||
  fail "find_package(pltrun) found '$found_dir', not the installed package in $libdir/cmake/pltrun"
run_logged "build the consumer" cmake --build "$consumer_build" -j 4
consumer_cpp=$consumer_build/consumer_cpp
consumer_c=$consumer_build/consumer_c
[ -x "$consumer_cpp" ] && [ -x "$consumer_c" ] || fail "the consumer build made no consumer_cpp/consumer_c"
loaded=$(ldd "$consumer_cpp" | awk '/libpltrun\.so/ {print $3}')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$shared_library" ] || {
  ldd "$consumer_cpp" >&2
  fail "consumer_cpp does not load $shared_library (pltrun::client must be the installed shared library)"
}
if [ "$static" = 1 ] && ldd "$consumer_c" | grep -q libpltrun; then
  ldd "$consumer_c" >&2
  fail "consumer_c loads libpltrun.so (pltrun::client_static must be the static library)"
elif [ "$static" = 0 ] && ! grep -qF "$shared_library" <<<"$(ldd "$consumer_c")"; then
  ldd "$consumer_c" >&2
  fail "consumer_c does not load $shared_library (without libpltrun.a it links pltrun::client)"
fi

# --- 4. alone and under the launcher ---------------------------------------------------
step "consumer_cpp (pltrun::client) alone"
run_alone "$consumer_cpp" consumer-cpp \
  "consumer-cpp rank=0 world=1 launched=0 gathered=r0 broadcast=seed-42 samples=0,1,2,3,4,5,6,7,8,9 batch=14 error=InvalidArgument"
step "consumer_c alone"
run_alone "$consumer_c" consumer-c \
  "consumer-c rank=0 world=1 launched=0 sum=100 broadcast=4242 count=1 samples=0,1,2,3,4,5,6,7,8,9"

step "pltrun --nproc-per-node 3 consumer_cpp"
run_launched "$consumer_cpp" consumer-cpp \
  "consumer-cpp rank=0 world=3 launched=1 gathered=r0,r1,r2 broadcast=seed-42 samples=0,3,6,9 batch=42 error=InvalidArgument" \
  "consumer-cpp rank=1 world=3 launched=1 gathered=r0,r1,r2 broadcast=seed-42 samples=1,4,7,0 batch=42 error=InvalidArgument" \
  "consumer-cpp rank=2 world=3 launched=1 gathered=r0,r1,r2 broadcast=seed-42 samples=2,5,8,1 batch=42 error=InvalidArgument"
step "pltrun --nproc-per-node 3 consumer_c"
run_launched "$consumer_c" consumer-c \
  "consumer-c rank=0 world=3 launched=1 sum=303 broadcast=4242 count=3 samples=0,3,6,9" \
  "consumer-c rank=1 world=3 launched=1 sum=303 broadcast=4242 count=3 samples=1,4,7,0" \
  "consumer-c rank=2 world=3 launched=1 sum=303 broadcast=4242 count=3 samples=2,5,8,1"

# --- 5. pkg-config ---------------------------------------------------------------------
step "cc consumer_c.c \$(pkg-config --cflags --libs pltrun)"
command -v pkg-config >/dev/null || fail "pkg-config is not installed (scripts/install-deps.sh installs it)"
export PKG_CONFIG_PATH=${pkgconfig_dir:-$libdir/pkgconfig}
version=$(pkg-config --modversion pltrun) || fail "pkg-config does not find pltrun.pc in $PKG_CONFIG_PATH"
pc_includedir=$(pkg-config --variable=includedir pltrun)
[ "$(readlink -f "$pc_includedir")" = "$(readlink -f "$prefix/include")" ] ||
  fail "pltrun.pc's includedir is '$pc_includedir', not $prefix/include"
cc=${CC:-cc}
# shellcheck disable=SC2046 # pkg-config's output is a list of words
run_logged "pkg-config build" "$cc" -std=c99 -Wall -Werror -o "$work/consumer_c_pkg" "$consumer_source/consumer_c.c" \
  $(pkg-config --cflags --libs pltrun)
consumer_c_expected="consumer-c rank=0 world=1 launched=0 sum=100 broadcast=4242 count=1 samples=0,1,2,3,4,5,6,7,8,9"
if [ "$static" = 1 ]; then
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run_alone "$work/consumer_c_pkg" consumer-c "$consumer_c_expected"
else
  # The wheel's pltrun.pc carries an rpath to the library inside the venv, where no ld.so
  # path looks: the program runs as built.
  run_alone "$work/consumer_c_pkg" consumer-c "$consumer_c_expected"
fi

if [ "$static" = 1 ]; then
  step "cc consumer_c.c, libpltrun.a and \$(pkg-config --static --libs pltrun)"
  static_libs=$(pkg-config --static --libs pltrun)
  static_libs=${static_libs//-lpltrun/-l:libpltrun.a}
  # shellcheck disable=SC2046,SC2086
  run_logged "pkg-config static build" "$cc" -std=c99 -Wall -Werror -o "$work/consumer_c_pkg_static" \
    "$consumer_source/consumer_c.c" $(pkg-config --cflags pltrun) $static_libs
  if ldd "$work/consumer_c_pkg_static" | grep -q libpltrun; then fail "the static pkg-config build loads libpltrun.so"; fi
  run_alone "$work/consumer_c_pkg_static" consumer-c \
    "consumer-c rank=0 world=1 launched=0 sum=100 broadcast=4242 count=1 samples=0,1,2,3,4,5,6,7,8,9"
fi

# --- no process left behind ------------------------------------------------------------
leftover=$(pgrep -f -- "$work/" || true)
[ -z "$leftover" ] || fail "processes left running: $(ps -o pid=,args= -p $leftover | tr '\n' ';')"

echo "consumer test passed: pltrun $version installed, found, built against and run (alone and 3 ranks)"
