#!/usr/bin/env bash
# podsync's test runtime: a private containerd (CRI plugin, runc, a CNI bridge, two local images) under one
# lab dir, for `npm test`, `npm run bench`, CI and trying the function out. Debian, root, no registry needed.
#   scripts/containerd-lab.sh start   install what is missing, start containerd (idempotent); last line: the socket
#   scripts/containerd-lab.sh stop    remove the lab's pods, stop its containerd, free their netns and IPs; safe to repeat
# PODSYNC_LAB_DIR (default /tmp/podsync-lab): config, root/state, socket, pid, logs, images, registry hosts (certs.d).
set -euo pipefail

LAB=${PODSYNC_LAB_DIR:-/tmp/podsync-lab}
SOCK=$LAB/containerd.sock
PIDFILE=$LAB/containerd.pid
CNI_BIN=/usr/lib/cni
# The bridge and the host-local reservations (/var/lib/cni/networks/<network>) are machine-wide, so the
# network is podsync's own: other labs on the machine (cri-lab: crilab0, 10.244.77.0/24) keep theirs.
# Several podsync lab dirs share it, and the shared reservations keep them from handing out one IP twice.
NETWORK=podsync-lab
BRIDGE=podsync0
SUBNET=10.244.78.0/24
IPAM_DIR=/var/lib/cni/networks/$NETWORK
# What test/ and examples/ run in localhost/busybox:1 (sh, sleep, echo, true, false, mkdir, httpd), plus a
# few for poking around with `ctr task exec`.
APPLETS="sh sleep echo true false mkdir httpd cat ls env id ps kill"

say() { echo "containerd-lab: $*" >&2; }
die() { say "$*"; exit 1; }
# A bounded dial: a socket left by a killed containerd would otherwise hold every call for 10 s.
ctr_lab() { ctr -a "$SOCK" --connect-timeout 3s "$@"; }
ctr_k8s() { ctr_lab -n k8s.io "$@"; }
answers() { [ -S "$SOCK" ] && ctr_lab version >/dev/null 2>&1; }

# The recorded pid, only while it is still this lab's containerd (pids get reused after a crash or reboot).
lab_pid() {
  local pid args
  pid=$(cat "$PIDFILE" 2>/dev/null) && [ -n "$pid" ] || return 1
  args=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  [[ $args == "containerd --config $LAB/config.toml "* ]] || return 1
  echo "$pid"
}

# The images have no libc, so they need Debian's busybox-static (the `busybox` package's binary is dynamic).
static_busybox() {
  local bb
  bb=$(command -v busybox) && bb=$(readlink -f "$bb") || return 1
  ! ldd "$bb" >/dev/null 2>&1 || return 1 # ldd fails on a static binary: "not a dynamic executable"
  echo "$bb"
}

lock() {
  exec 9>"$LAB/lock"
  flock -w "$1" 9 || die "$LAB/lock is held (another start or stop) for over $1 s"
}

apt_update() { apt-get update -qq >>"$LAB/log/apt.log" 2>&1; }
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >>"$LAB/log/apt.log" 2>&1; }

install_missing() {
  local need=() lists
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  static_busybox >/dev/null || need+=(busybox-static)
  for p in bridge host-local loopback portmap; do [ -x "$CNI_BIN/$p" ] || { need+=(containernetworking-plugins); break; }; done
  command -v iptables >/dev/null || need+=(iptables) # the portmap plugin calls it
  # The real-client suite (test/kubeapi/kubeapi-clients.e2e.test.ts) runs Debian's Python client with Debian's python3.
  [ -f /usr/lib/python3/dist-packages/kubernetes/__init__.py ] || need+=(python3-kubernetes)
  command -v nft >/dev/null || need+=(nftables)       # the Services data plane (src/services/proxy) programs it
  [ ${#need[@]} -gt 0 ] || return 0
  command -v apt-get >/dev/null || die "missing ${need[*]} (Debian package names) and there is no apt-get to install them"
  say "installing ${need[*]} (log: $LAB/log/apt.log)"
  # `apt-get update` is the slow part: only when the lists are missing or over a day old, or the install
  # failed on lists that were too old after all.
  lists=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit 2>/dev/null || true)
  if [ -n "$lists" ]; then
    apt_install "${need[@]}" || { apt_update && apt_install "${need[@]}"; } || die "apt-get failed, see $LAB/log/apt.log"
  else
    { apt_update && apt_install "${need[@]}"; } || die "apt-get failed, see $LAB/log/apt.log"
  fi
}

write_config() {
  rm -f "$LAB"/cni/*.conflist
  # Bridge + host-local IPAM + portmap + loopback. No masquerade: pods reach the host and each other only.
  cat >"$LAB/cni/10-$NETWORK.conflist" <<JSON
{ "cniVersion": "1.0.0", "name": "$NETWORK",
  "plugins": [
    { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$SUBNET" }]], "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "portmap", "capabilities": { "portMappings": true } },
    { "type": "loopback" } ] }
JSON
  cat >"$LAB/config.toml" <<TOML
version = 2
root = "$LAB/root"
state = "$LAB/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$LAB/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # Built by this script: there is no registry to pull a pause image from.
  sandbox_image = "localhost/pause:1"
  # These VMs refuse a negative oom_score_adj; unrestricted, the -998 asked for sandboxes makes every
  # RunPodSandbox fail ("can't get final child's PID from pipe"). Restricted, it is capped at containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # cgroupfs: no systemd here.
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$LAB/cni"
  # Registry hosts, one dir per host ("127.0.0.1:5111/hosts.toml"), read at each pull: scripts/registry-lab.sh
  # writes its registry's there. Hosts without a dir keep containerd's defaults (https; http for localhost).
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$LAB/certs.d"
TOML
}

# localhost/pause:1 (the sandbox image: sleeps forever) and localhost/busybox:1 (sh), one layer from the static
# busybox, written as a docker-archive and imported into k8s.io. Reproducible (fixed order, times, owners), so an
# unchanged busybox gives the same archive and the import is skipped when containerd already has it.
import_images() {
  local bb dir=$LAB/images arch layer cfg sum entries="" tar_opts=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu)
  bb=$(static_busybox) || die "no statically linked busybox: apt-get install busybox-static"
  arch=$(dpkg --print-architecture) # Debian's names are Go's (OCI's) but for these two
  case $arch in armhf | armel) arch=arm ;; i386) arch=386 ;; esac
  rm -rf "$dir/rootfs" "$dir/archive"
  (
    umask 022
    mkdir -p "$dir"/rootfs/{bin,dev,etc,proc,sys,tmp,var/log} "$dir/archive"
    chmod 1777 "$dir/rootfs/tmp"
    cp "$bb" "$dir/rootfs/bin/busybox" && chmod 755 "$dir/rootfs/bin/busybox"
    for a in $APPLETS; do ln -s busybox "$dir/rootfs/bin/$a"; done
    printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$dir/rootfs/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/rootfs/etc/group"
  )
  tar "${tar_opts[@]}" -C "$dir/rootfs" -cf "$dir/layer.tar" bin dev etc proc sys tmp var
  layer=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
  mkdir -p "$dir/archive/$layer" && mv "$dir/layer.tar" "$dir/archive/$layer/layer.tar"
  for image in 'localhost/pause:1 "/bin/sleep","2147483647"' 'localhost/busybox:1 "/bin/sh"'; do
    cfg=$(printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Cmd":[%s],"Env":["PATH=/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
      "$arch" "${image#* }" "$layer")
    sum=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
    printf '%s' "$cfg" >"$dir/archive/$sum.json"
    entries+="${entries:+,}{\"Config\":\"$sum.json\",\"RepoTags\":[\"${image%% *}\"],\"Layers\":[\"$layer/layer.tar\"]}"
  done
  printf '[%s]' "$entries" >"$dir/archive/manifest.json"
  (cd "$dir/archive" && tar "${tar_opts[@]}" -cf ../images.tar -- *)
  rm -rf "$dir/rootfs" "$dir/archive"
  sum=$(sha256sum "$dir/images.tar" | cut -d' ' -f1)
  if [ "$(cat "$dir/imported" 2>/dev/null)" = "$sum" ] &&
    [ "$(ctr_k8s images ls -q | grep -cxF -e localhost/pause:1 -e localhost/busybox:1)" = 2 ]; then
    return 0
  fi
  ctr_k8s images import --all-platforms "$dir/images.tar" >/dev/null || die "importing $dir/images.tar failed"
  echo "$sum" >"$dir/imported"
}

stop_pid() {
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  say "containerd $pid ignored SIGTERM for 5 s: SIGKILL"
  kill -9 "$pid" 2>/dev/null || true
}

need_root() { [ "$(id -u)" = 0 ] || die "needs root (containerd, runc and the CNI plugins do)"; }

start() {
  need_root
  mkdir -p "$LAB/cni" "$LAB/log" "$LAB/images" "$LAB/certs.d"
  lock 600 # the test setup, the bench and CI may start it at the same time; an apt install can take minutes
  if lab_pid >/dev/null && answers; then
    echo "$SOCK"
    return 0
  fi
  install_missing
  write_config
  local pid
  if pid=$(lab_pid); then
    say "containerd $pid does not answer on $SOCK: restarting it"
    stop_pid "$pid"
  fi
  # Its own session: a Ctrl-C on the test run must not take the shared runtime down. fd 9 is the lock.
  setsid containerd --config "$LAB/config.toml" </dev/null >"$LAB/log/containerd.log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$PIDFILE"
  for _ in $(seq 300); do
    answers && break
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$LAB/log/containerd.log" >&2; die "containerd exited at start; see $LAB/log/containerd.log"; }
    sleep 0.1
  done
  answers || die "containerd did not answer on $SOCK within 30 s; see $LAB/log/containerd.log"
  if [ "$(ctr_lab plugins ls | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $NF }')" != ok ]; then
    grep -i 'cri' "$LAB/log/containerd.log" | grep -iE 'error|fail' | tail -n 5 >&2 || true
    die "containerd runs but its CRI plugin did not load; see $LAB/log/containerd.log"
  fi
  import_images
  say "containerd $pid on $SOCK (log: $LAB/log/containerd.log)"
  echo "$SOCK"
}

stop() {
  [ -d "$LAB" ] || return 0
  need_root
  lock 120
  local pid id sandboxes=() netns=()
  if answers; then
    # Each pod's network namespace is named in its sandbox's OCI spec; find them before the sandboxes go.
    mapfile -t sandboxes < <(ctr_k8s containers ls -q 'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null || true)
    for id in "${sandboxes[@]}"; do
      mapfile -t -O "${#netns[@]}" netns < <(ctr_k8s containers info "$id" 2>/dev/null | grep -oE '/(var/)?run/netns/cni-[0-9a-f-]+' | sort -u || true)
    done
    # Killing the tasks lets their shims exit; containerd alone would leave them running. (In parallel: ~0.1 s a call.)
    for id in $(ctr_k8s tasks ls -q 2>/dev/null || true); do ctr_k8s tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 & done
    wait
    for _ in $(seq 30); do
      [ -z "$(ctr_k8s tasks ls 2>/dev/null | awk 'NR > 1 && $3 != "STOPPED"')" ] && break
      sleep 0.1
    done
    for id in $(ctr_k8s tasks ls -q 2>/dev/null || true); do ctr_k8s tasks delete -f "$id" >/dev/null 2>&1 || true; done
    # Workload containers before their sandboxes.
    for id in $(ctr_k8s containers ls -q 'labels."io.cri-containerd.kind"==container' 2>/dev/null || true); do ctr_k8s containers rm "$id" >/dev/null 2>&1 & done
    wait
    for id in "${sandboxes[@]}"; do ctr_k8s containers rm "$id" >/dev/null 2>&1 & done
    wait
  fi
  if pid=$(lab_pid); then stop_pid "$pid"; fi
  rm -f "$PIDFILE"
  # Removed through ctr, not CRI, the pods never saw a CNI DEL: free their namespaces (which takes their veths
  # off the bridge) and their address reservations (a file per IP holding the sandbox id) by hand.
  for p in "${netns[@]}"; do
    umount "$p" 2>/dev/null || true
    rm -f "$p" 2>/dev/null || true
  done
  # The sandboxes' /dev/shm tmpfs (CRI unmounts it only on RemovePodSandbox) and anything else left mounted
  # under the lab dir, deepest first; not while some containerd still serves the lab (a lost pid file).
  answers && die "a containerd not recorded in $PIDFILE still serves $SOCK: stop it by hand"
  awk -v lab="$LAB/" 'index($5, lab) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  if [ -d "$IPAM_DIR" ] && [ ${#sandboxes[@]} -gt 0 ]; then
    for id in "${sandboxes[@]}"; do grep -lsF -- "$id" "$IPAM_DIR"/* | xargs -r rm -f || true; done
  fi
  if [ -n "${pid:-}" ]; then say "stopped containerd $pid; removed ${#sandboxes[@]} pod sandboxes"; else say "no containerd running for $LAB"; fi
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop   (lab dir: \$PODSYNC_LAB_DIR, default /tmp/podsync-lab)" >&2; exit 2 ;;
esac
