#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Join this GPU machine to a Gridweave cluster with one join key.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: join-node.sh --master URL --join-key KEY [options]

Joins this machine to a Gridweave cluster: asks the master to validate the join key
(POST /v1/nodes/validate), brings up the WireGuard tunnel to the master, prepares the Ray
worker image, joins K3s as an agent over the tunnel, registers the node and starts its
heartbeat. Running it again is safe: the node keeps its key pair and its mesh address.

Options:
  --master URL       kuberay-service of the master, e.g. http://203.0.113.10:8800
                     (or GRIDWEAVE_MASTER_URL)
  --join-key KEY     the join key an admin created (or GRIDWEAVE_JOIN_KEY)
  --hostname NAME    the node's name (default: this machine's hostname, lower-case)
  --gpus JSON        declare the GPUs instead of detecting them, e.g.
                     '[{"index":0,"vendor":"nvidia","model":"NVIDIA L4","vram_mb":23034}]'
  --label KEY=VALUE  a node label (repeatable)
  --state-dir DIR    where the node keeps its keys and token (default /var/lib/gridweave-node)
  --dry-run          print every change to this machine instead of making it; the calls to
                     the master are still made and the state directory is still kept
  -h, --help         this text

Environment:
  REBUILD=1          rebuild the Ray worker image even when it is present
  CLEAN_BUILDKIT=1   prune Docker's build cache first
  RAY_WORKER_IMAGE   the image to use (default gridweave/ray-worker:latest)
Images and caches go to /mnt/data when it exists and holds more than 100 GB.
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/node.sh
. "$here/lib/node.sh"

MASTER_URL=${GRIDWEAVE_MASTER_URL:-}
JOIN_KEY=${GRIDWEAVE_JOIN_KEY:-}
NODE_NAME=""
GPUS_JSON=""
LABELS=()
RAY_WORKER_IMAGE=${RAY_WORKER_IMAGE:-gridweave/ray-worker:latest}

while [ $# -gt 0 ]; do
	case $1 in
	--master) MASTER_URL=${2:?--master needs a URL}; shift 2 ;;
	--join-key) JOIN_KEY=${2:?--join-key needs a key}; shift 2 ;;
	--hostname) NODE_NAME=${2:?--hostname needs a name}; shift 2 ;;
	--gpus) GPUS_JSON=${2:?--gpus needs a JSON list}; shift 2 ;;
	--label) LABELS+=("${2:?--label needs KEY=VALUE}"); shift 2 ;;
	--state-dir) STATE_DIR=${2:?--state-dir needs a directory}; shift 2 ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

[ -n "$MASTER_URL" ] || die "--master (or GRIDWEAVE_MASTER_URL) is required"
[ -n "$JOIN_KEY" ] || die "--join-key (or GRIDWEAVE_JOIN_KEY) is required"
need curl python3 openssl
[ "$DRY_RUN" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (or with --dry-run)"
NODE_NAME=$(printf '%s' "${NODE_NAME:-$(hostname)}" | tr '[:upper:]' '[:lower:]')

# -- the key pair: made once, kept in the state directory ------------------------------------
wireguard_keys() {
	if [ ! -s "$STATE_DIR/wg.key" ]; then
		log "making this node's WireGuard key pair"
		if command -v wg >/dev/null 2>&1; then
			wg genkey | state_file wg.key 600
		else  # the same X25519 key wg makes: 32 random bytes, base64
			openssl genpkey -algorithm X25519 -outform DER | tail -c 32 | base64 | state_file wg.key 600
		fi
	fi
	if command -v wg >/dev/null 2>&1; then
		wg pubkey <"$STATE_DIR/wg.key"
	else  # the raw key behind PKCS#8's fixed X25519 prefix, and the public half back out
		{
			printf '\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x6e\x04\x22\x04\x20'
			base64 -d <"$STATE_DIR/wg.key"
		} | openssl pkey -inform DER -pubout -outform DER | tail -c 32 | base64
	fi
}

# -- validate: the mesh address, the node token, the master's peer, K3s and the registry --------
validate() {
	local public_key=$1 gpus=$2 body
	body=$(mktemp)
	JOIN_KEY=$JOIN_KEY NODE_NAME=$NODE_NAME PUBLIC_KEY=$public_key GPUS=$gpus \
		LABELS="$(printf '%s\n' "${LABELS[@]+"${LABELS[@]}"}")" python3 >"$body" <<'PY'
import json, os
labels = dict(line.split("=", 1) for line in os.environ["LABELS"].splitlines() if line)
pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
print(json.dumps({
    "join_key": os.environ["JOIN_KEY"],
    "hostname": os.environ["NODE_NAME"],
    "wireguard_public_key": os.environ["PUBLIC_KEY"],
    "gpus": json.loads(os.environ["GPUS"]),
    "labels": labels,
    # what the node's jobs may use: its cores and its memory
    "cpu_millis": len(os.sched_getaffinity(0)) * 1000,
    "memory_mb": pages // 2**20,
}))
PY
	local answer
	answer=$(api POST /v1/nodes/validate "$body")  # a refusal stops here, the old state kept
	rm -f "$body"
	printf '%s\n' "$answer" | state_file node.json 600
	printf '%s\n' "$MASTER_URL" | state_file master 600
}

tunnel() {
	local vpn_ip cidr
	vpn_ip=$(json_field "$STATE_DIR/node.json" vpn_ip)
	cidr=$(json_field "$STATE_DIR/node.json" vpn_cidr)
	command -v wg-quick >/dev/null 2>&1 || run apt-get install -y wireguard-tools
	install_file "/etc/wireguard/$WG_INTERFACE.conf" 600 <<CONF
[Interface]
PrivateKey = $(cat "$STATE_DIR/wg.key")
Address = $vpn_ip/32

# gridweave master
[Peer]
PublicKey = $(json_field "$STATE_DIR/node.json" master.public_key)
AllowedIPs = $cidr
Endpoint = $(json_field "$STATE_DIR/node.json" master.endpoint)
PersistentKeepalive = 25
CONF
	if ip link show "$WG_INTERFACE" >/dev/null 2>&1; then
		run wg-quick down "$WG_INTERFACE"
	fi
	run wg-quick up "$WG_INTERFACE"
	run systemctl enable "wg-quick@$WG_INTERFACE"
}

# -- images: /mnt/data when it is large enough; present images are kept unless REBUILD=1 ------
images() {
	local data_kb
	data_kb=$(df -Pk /mnt/data 2>/dev/null | awk 'NR == 2 {print $4}' || true)
	if [ -n "$data_kb" ] && [ "$data_kb" -gt $((100 * 1000 * 1000)) ]; then
		log "/mnt/data holds more than 100 GB: images and caches go there"
		install_file /etc/docker/daemon.json 644 <<<'{"data-root": "/mnt/data/docker"}'
		run systemctl restart docker
	fi
	command -v docker >/dev/null 2>&1 || run apt-get install -y docker.io
	if [ "${CLEAN_BUILDKIT:-0}" = 1 ]; then
		run docker builder prune --all --force
	fi
	if [ "${REBUILD:-0}" != 1 ] && docker image inspect "$RAY_WORKER_IMAGE" >/dev/null 2>&1; then
		log "$RAY_WORKER_IMAGE is present: kept (REBUILD=1 rebuilds it)"
		return
	fi
	local registry
	registry=$(json_field "$STATE_DIR/node.json" registry)
	if [ "$registry" != None ]; then
		run docker pull "$registry/$RAY_WORKER_IMAGE"
		run docker tag "$registry/$RAY_WORKER_IMAGE" "$RAY_WORKER_IMAGE"
	else  # no registry on the master: built here, for this node's GPUs
		local platform=cuda
		case $1 in *'"amd"'*) platform=rocm ;; esac
		run docker build --build-arg "GPU_PLATFORM=$platform" -t "$RAY_WORKER_IMAGE" \
			"$here/../docker/ray-worker"
	fi
}

# -- K3s agent over the tunnel (the token goes through a 0600 file, never an argument); it runs
# its pods on Docker, so the Ray worker image prepared above is the one its pods use --------
k3s_agent() {
	local vpn_ip
	vpn_ip=$(json_field "$STATE_DIR/node.json" vpn_ip)
	install_file /etc/rancher/k3s/config.yaml 600 <<YAML
server: $(json_field "$STATE_DIR/node.json" k3s.url)
token: $(json_field "$STATE_DIR/node.json" k3s.token)
node-name: $NODE_NAME
node-ip: $vpn_ip
flannel-iface: $WG_INTERFACE
docker: true
node-label:
  - gridweave.io/node=$NODE_NAME
YAML
	if command -v k3s >/dev/null 2>&1; then  # installed: (re)start it on the new config
		run systemctl enable k3s-agent  # leave-node.sh disabled it
		run systemctl restart k3s-agent
	else  # the installer whole before it runs: a failed download must stop the script
		run sh -c 'installer=$(mktemp) && curl -sfL https://get.k3s.io -o "$installer" &&
			INSTALL_K3S_EXEC=agent sh "$installer"; status=$?; rm -f "$installer"; exit $status'
	fi
}

heartbeat_service() {
	install_file /etc/systemd/system/gridweave-heartbeat.service 644 <<UNIT
[Unit]
Description=Gridweave node heartbeat
After=network-online.target wg-quick@$WG_INTERFACE.service

[Service]
ExecStart=$here/node-heartbeat.sh --state-dir $STATE_DIR
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
	run systemctl daemon-reload
	run systemctl enable --now gridweave-heartbeat.service
}

public_key=$(wireguard_keys)
gpus=${GPUS_JSON:-$(detect_gpus)}
[ "$gpus" != "[]" ] || die "no NVIDIA or AMD GPU found (nvidia-smi, rocm-smi); declare them with --gpus"
log "validating $NODE_NAME with the master at $MASTER_URL"
validate "$public_key" "$gpus"
log "mesh address $(json_field "$STATE_DIR/node.json" vpn_ip)"
tunnel
images "$gpus"
k3s_agent
log "registering $NODE_NAME"
api POST /v1/nodes/register "" "$(json_field "$STATE_DIR/node.json" node_token)" >/dev/null
send_heartbeat
heartbeat_service
printf 'GRIDWEAVE_NODE=%s\n' "$NODE_NAME"
printf 'GRIDWEAVE_VPN_IP=%s\n' "$(json_field "$STATE_DIR/node.json" vpn_ip)"
