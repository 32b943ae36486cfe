#!/usr/bin/env bash
# A private image registry on 127.0.0.1 for real PullImage tests: Debian's docker-registry (distribution 2.x)
# with htpasswd (bcrypt) auth over plain http on loopback, and skopeo to push the lab image into it.
#   scripts/registry-lab.sh start        install what is missing, start it (idempotent), tell the lab's containerd
#                                        where it is; last line: the registry host (127.0.0.1:<port>)
#   scripts/registry-lab.sh push REPO:TAG  push localhost/busybox:1 (from the lab's image tarball, plus a label that
#                                        gives it an image id of its own) as <host>/REPO:TAG
#   scripts/registry-lab.sh stop         stop it, remove its storage, credentials and hosts.toml; safe to repeat
# PODSYNC_REGISTRY_DIR (default /tmp/podsync-registry): config, storage, credentials.json (0600), pid, log.
# PODSYNC_REGISTRY_PORT (default 5111): it listens on 127.0.0.1 only.
# PODSYNC_REGISTRY_HOSTS_DIR: containerd's registry config_path, where <host>/hosts.toml goes
#   (unset: the containerd lab's, ${PODSYNC_LAB_DIR:-/tmp/podsync-lab}/certs.d; empty: none is written).
# PODSYNC_LAB_DIR: the containerd lab whose images/images.tar `push` reads.
set -euo pipefail

REG=${PODSYNC_REGISTRY_DIR:-/tmp/podsync-registry}
PORT=${PODSYNC_REGISTRY_PORT:-5111}
HOST=127.0.0.1:$PORT
LAB=${PODSYNC_LAB_DIR:-/tmp/podsync-lab}
HOSTS_DIR=${PODSYNC_REGISTRY_HOSTS_DIR-$LAB/certs.d}
PIDFILE=$REG/registry.pid
USERNAME=podsync

say() { echo "registry-lab: $*" >&2; }
die() { say "$*"; exit 1; }

[[ $PORT =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] || die "PODSYNC_REGISTRY_PORT must be a port number, got '$PORT'"

# The recorded pid, only while it is still this registry (pids get reused).
reg_pid() {
  local pid args
  pid=$(cat "$PIDFILE" 2>/dev/null) && [ -n "$pid" ] || return 1
  args=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  [ "$args" = "docker-registry serve $REG/config.yml " ] || return 1
  echo "$pid"
}

# The first line of GET /v2/ (no curl on a bare machine: bash's /dev/tcp). An authenticating registry says 401.
v2_status() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n" "$1" >&3 && head -n 1 <&3' _ "$PORT" 2>/dev/null | tr -d '\r'
}
answers() { [[ $(v2_status) =~ ^HTTP/1\.[01]\ 401 ]]; }
port_taken() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$PORT" 2>/dev/null; }

lock() {
  exec 9>"$REG/lock"
  flock -w "$1" 9 || die "$REG/lock is held (another start or stop) for over $1 s"
}

install_missing() {
  local need=() had_registry=1 lists
  command -v docker-registry >/dev/null || { need+=(docker-registry); had_registry=0; }
  command -v skopeo >/dev/null || need+=(skopeo)
  command -v htpasswd >/dev/null || need+=(apache2-utils)
  [ ${#need[@]} -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "missing ${need[*]} (Debian packages); installing them needs root"
  command -v apt-get >/dev/null || die "missing ${need[*]} (Debian package names) and there is no apt-get to install them"
  say "installing ${need[*]} (log: $REG/apt.log)"
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}")
  lists=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit 2>/dev/null || true)
  if [ -n "$lists" ]; then
    "${apt[@]}" >>"$REG/apt.log" 2>&1 || { apt-get update -qq >>"$REG/apt.log" 2>&1 && "${apt[@]}" >>"$REG/apt.log" 2>&1; } || die "apt-get failed, see $REG/apt.log"
  else
    { apt-get update -qq >>"$REG/apt.log" 2>&1 && "${apt[@]}" >>"$REG/apt.log" 2>&1; } || die "apt-get failed, see $REG/apt.log"
  fi
  # The package's own service listens on :5000 on every interface. Where the machine's policy-rc.d does not
  # already stop services from starting at install, stop the one this install just started.
  if [ "$had_registry" = 0 ] && [ -x /etc/init.d/docker-registry ] && [ -s /var/run/docker-registry.pid ] &&
    kill -0 "$(cat /var/run/docker-registry.pid)" 2>/dev/null; then
    say "stopping the docker-registry service the package started (it listens on all interfaces)"
    /etc/init.d/docker-registry stop >>"$REG/apt.log" 2>&1 || true
  fi
}

# Credentials made once per start-from-stopped: a random password, bcrypt in htpasswd (all distribution 2.x
# accepts), the clear text only in 0600 files for the tests and for skopeo (never on a command line).
write_config() {
  local password secret
  password=$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 24)
  secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  (
    umask 077
    printf '%s\n' "$password" | htpasswd -iBc "$REG/htpasswd" "$USERNAME" 2>/dev/null
    printf '{"registry":"%s","username":"%s","password":"%s"}\n' "$HOST" "$USERNAME" "$password" >"$REG/credentials.json"
    printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$HOST" "$(printf '%s:%s' "$USERNAME" "$password" | base64 -w0)" >"$REG/auth.json"
    printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$REG/policy.json"
    cat >"$REG/config.yml" <<YAML
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $REG/data
  delete:
    enabled: true
http:
  addr: $HOST
  secret: $secret
auth:
  htpasswd:
    realm: podsync-registry-lab
    path: $REG/htpasswd
YAML
  )
}

# containerd (CRI, config_path) reads <hosts dir>/<host>/hosts.toml at each pull: plain http on loopback.
write_hosts() {
  [ -n "$HOSTS_DIR" ] || return 0
  mkdir -p "$HOSTS_DIR/$HOST"
  cat >"$HOSTS_DIR/$HOST/hosts.toml" <<TOML
# Written by scripts/registry-lab.sh: the lab registry, plain http on loopback.
server = "http://$HOST"
[host."http://$HOST"]
  capabilities = ["pull", "resolve"]
TOML
}

start() {
  mkdir -p "$REG"
  lock 600
  install_missing
  if reg_pid >/dev/null && answers; then
    write_hosts
    echo "$HOST"
    return 0
  fi
  local pid
  if pid=$(reg_pid); then
    say "docker-registry $pid does not answer on $HOST: restarting it"
    kill "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  port_taken && die "127.0.0.1:$PORT is taken by another program: set PODSYNC_REGISTRY_PORT to a free port"
  rm -rf "$REG/data"
  write_config
  # Its own session, so a Ctrl-C on the test run leaves it to the test's stop. fd 9 is the lock.
  setsid docker-registry serve "$REG/config.yml" </dev/null >"$REG/registry.log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$PIDFILE"
  for _ in $(seq 100); do
    answers && break
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$REG/registry.log" >&2; die "docker-registry exited at start; see $REG/registry.log"; }
    sleep 0.1
  done
  answers || die "docker-registry did not answer 401 on http://$HOST/v2/ within 10 s; see $REG/registry.log"
  write_hosts
  say "docker-registry $pid on http://$HOST (htpasswd user $USERNAME; credentials: $REG/credentials.json; containerd hosts: $HOSTS_DIR/$HOST)"
  echo "$HOST"
}

# localhost/busybox:1 with one label added (org.podsync.registry-lab.ref=<ref>), as a docker-archive in $2: the same
# layer (nothing new to unpack), but an image id of its own. With the lab's config, a pulled copy would share
# localhost/busybox:1's image id, and CRI would then report the registry's repo digest as the imageRef of every
# container made from localhost/busybox:1 (seen), under other tests running at the same time.
variant_archive() {
  local src=$1 out=$2 ref=$3 cfg layer sum
  mkdir -p "$out/in" "$out/img"
  tar -xf "$src" -C "$out/in" || die "cannot read $src"
  cfg=$(grep -l '"Cmd":\["/bin/sh"\]' "$out/in"/*.json | head -n 1) || die "no localhost/busybox:1 config in $src"
  layer=$(cd "$out/in" && ls -d -- */layer.tar | head -n 1) || die "no layer in $src"
  sed "s|\"WorkingDir\":\"/\"|&,\"Labels\":{\"org.podsync.registry-lab.ref\":\"$ref\"}|" "$cfg" >"$out/config.json"
  grep -q '"org.podsync.registry-lab.ref"' "$out/config.json" || die "unexpected image config in $src"
  sum=$(sha256sum "$out/config.json" | cut -d' ' -f1)
  mv "$out/config.json" "$out/img/$sum.json"
  mkdir -p "$out/img/${layer%/*}" && mv "$out/in/$layer" "$out/img/$layer"
  printf '[{"Config":"%s.json","RepoTags":["localhost/busybox:1"],"Layers":["%s"]}]' "$sum" "$layer" >"$out/img/manifest.json"
  (cd "$out/img" && tar -cf ../image.tar -- *)
}

push() {
  local ref=${1:-} src=${PODSYNC_REGISTRY_SOURCE:-$LAB/images/images.tar}
  [[ $ref =~ ^[a-z0-9]+([._/-][a-z0-9]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "usage: $0 push REPO:TAG (lower-case repository path, a tag), got '$ref'"
  reg_pid >/dev/null && answers || die "the registry is not running: $0 start"
  [ -f "$src" ] || die "no $src: start the containerd lab (scripts/containerd-lab.sh start) with the same PODSYNC_LAB_DIR"
  PUSH_TMP=$(mktemp -d "$REG/push.XXXXXX")
  trap 'rm -rf "$PUSH_TMP"' EXIT
  variant_archive "$src" "$PUSH_TMP" "$ref"
  skopeo --policy "$REG/policy.json" copy --quiet --authfile "$REG/auth.json" --dest-tls-verify=false \
    "docker-archive:$PUSH_TMP/image.tar:localhost/busybox:1" "docker://$HOST/$ref" >&2 || die "skopeo could not push $HOST/$ref"
  echo "$HOST/$ref"
}

stop() {
  [ -d "$REG" ] || return 0
  lock 120
  local pid
  if pid=$(reg_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    say "stopped docker-registry $pid"
  else
    say "no docker-registry running for $REG"
  fi
  rm -f "$PIDFILE"
  rm -rf "$REG/data" "$REG/htpasswd" "$REG/credentials.json" "$REG/auth.json" "$REG"/push.*
  [ -z "$HOSTS_DIR" ] || rm -rf "${HOSTS_DIR:?}/$HOST"
}

case ${1:-} in
  start) start ;;
  push) shift; push "$@" ;;
  stop) stop ;;
  *) echo "usage: $0 start|push REPO:TAG|stop   (dir: \$PODSYNC_REGISTRY_DIR, default /tmp/podsync-registry; port: \$PODSYNC_REGISTRY_PORT, default 5111)" >&2; exit 2 ;;
esac
