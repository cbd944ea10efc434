# Sourced by the package test's scripts in the chroot (in_chroot.sh, upgrade_in_chroot.sh).
# still_there LIST: the paths of LIST (a file, one path a line, as `dpkg -L` prints them)
# that are still on disk, one a line; not a directory that a package still owns (/usr/bin,
# /usr/lib, /usr/share/man/man1), nor /. .
still_there() {
  local path
  while read -r path; do
    [ -e "$path" ] || [ -L "$path" ] || continue
    if [ -d "$path" ] && [ ! -L "$path" ] && dpkg-query -S "$path" >/dev/null 2>&1; then continue; fi
    [ "$path" = /. ] && continue
    echo "$path"
  done <"$1"
}
