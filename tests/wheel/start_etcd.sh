# shellcheck shell=bash
# Sourced by run_wheel_test.sh: start_etcd DIR starts one etcd member on the host's loopback,
# its data and log in DIR, on ports found free (bound to 0 and read back; a port taken again
# before etcd binds it means another try, as tests/etcd/etcd_cluster.cc does), TLS off.
# Sets etcd_pid (the caller ends it by pid) and etcd_endpoint (127.0.0.1:PORT) once etcd
# answers; returns 1, with its log shown, when it does not.

free_loopback_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_etcd() {
  local dir=$1 attempt client peer deadline
  command -v etcd >/dev/null || { echo "etcd is missing (scripts/install-deps.sh installs etcd-server)" >&2; return 1; }
  for attempt in 1 2 3; do
    rm -rf "$dir"
    mkdir -p "$dir"
    client=$(free_loopback_port)
    peer=$(free_loopback_port)
    etcd --name wheel --data-dir "$dir/data" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "wheel=http://127.0.0.1:$peer" --initial-cluster-state new >"$dir/etcd.log" 2>&1 &
    etcd_pid=$!
    deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)) && kill -0 "$etcd_pid" 2>/dev/null; do
      if ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$client" endpoint health >/dev/null 2>&1; then
        # shellcheck disable=SC2034 # the caller's
        etcd_endpoint=127.0.0.1:$client
        return 0
      fi
      sleep 0.2
    done
    kill -TERM "$etcd_pid" 2>/dev/null || true
    wait "$etcd_pid" 2>/dev/null || true
    etcd_pid=
    grep -q 'address already in use' "$dir/etcd.log" || break
    echo "etcd: a port was taken before etcd bound it (attempt $attempt); trying others" >&2
  done
  tail -n 20 "$dir/etcd.log" >&2
  return 1
}
