# shellcheck shell=bash
# Keeps the services of the packages install-deps.sh installs from starting or staying
# enabled: a test tool such as openssh-server, etcd-server, munge or slurmd would otherwise
# start its daemon on install (its postinst calls invoke-rc.d or deb-systemd-invoke) and
# enable it for every boot. The tests start the daemons they need themselves. Sourced by
# install-deps.sh, never run; as_root (the caller's) runs a command as root.
#
#   services_guard_begin   before apt-get: a /usr/sbin/policy-rc.d that refuses every start
#                          (exit 101), only where none exists; a snapshot of the installed
#                          packages and of the enabled units; traps that run the end on exit
#                          and make INT, TERM and HUP exit
#   services_guard_end     after apt-get (the EXIT trap runs it too, so a failed or
#                          interrupted install removes the policy): the policy removed if it
#                          is still ours, and the units of the packages the install added
#                          that it newly enabled, disabled

policy_rc=/usr/sbin/policy-rc.d
policy_ours=0
guard_active=0
units_before=""
packages_before=""

# The unit files systemctl reports enabled, one per line (empty without systemctl). Works
# with or without a running systemd: it reads the unit files' symlinks.
enabled_units() {
  if command -v systemctl >/dev/null 2>&1; then
    systemctl list-unit-files --state=enabled --no-legend --no-pager 2>/dev/null | awk '{print $1}' | sort -u
  fi
}

installed_packages() {
  dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" {print $2}' | sort -u
}

# A link made to a fresh file: it fails, leaving the existing policy alone, when one exists.
policy_mark="# Written by pltrun's scripts/install-deps.sh for its apt-get: no service starts."
place_policy() {
  # shellcheck disable=SC2016 # expanded by the root shell
  as_root sh -c 'tmp=$(mktemp "$1.pltrun.XXXXXX") && printf "%s\n" "#!/bin/sh" "$2" "exit 101" >"$tmp" &&
    chmod 755 "$tmp" && ln "$tmp" "$1" 2>/dev/null; status=$?; rm -f "$tmp"; exit $status' sh "$policy_rc" "$policy_mark"
}

services_guard_begin() {
  guard_active=1
  trap services_guard_end EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  units_before=$(enabled_units)
  packages_before=$(installed_packages)
  if [ -e "$policy_rc" ] || [ -L "$policy_rc" ]; then
    # Left as it is; said only when it lets a service start (101: refused).
    local status=0
    "$policy_rc" pltrun-install-deps start >/dev/null 2>&1 || status=$?
    [ "$status" -eq 101 ] || echo "install-deps: warning: $policy_rc (not ours, left as it is) lets services start"
  else
    # Ours before it exists, so that an interrupt right after it is made removes it too (the
    # end removes only a policy with our mark).
    policy_ours=1
    place_policy || policy_ours=0
  fi
}

# The units newly enabled since services_guard_begin that the packages added since ship,
# except systemd's own (a getty, the pstore: the init system's, not a test tool's daemon).
newly_enabled_units() {
  local package
  comm -12 <(comm -13 <(printf '%s\n' "$units_before") <(enabled_units)) \
    <(comm -13 <(printf '%s\n' "$packages_before") <(installed_packages) | while read -r package; do
      [ "$package" != systemd ] || continue
      dpkg -L "$package" | sed -nE 's#.*/systemd/system/([^/]+\.(service|socket|timer|path))$#\1#p'
    done | sort -u)
}

services_guard_end() {
  [ "$guard_active" -eq 1 ] || return 0
  guard_active=0
  if [ "$policy_ours" -eq 1 ]; then
    if grep -qxF "$policy_mark" "$policy_rc" 2>/dev/null; then as_root rm -f "$policy_rc"; fi
    policy_ours=0
  fi
  local -a units
  mapfile -t units < <(newly_enabled_units)
  [ ${#units[@]} -gt 0 ] || return 0
  echo "install-deps: disabling what the packages enabled: ${units[*]}"
  if [ -d /run/systemd/system ]; then
    as_root systemctl disable --now --quiet "${units[@]}"  # --now: stopped too, should one run
  else
    as_root systemctl --root=/ disable --quiet "${units[@]}"  # no systemd running: the links alone
  fi
}
