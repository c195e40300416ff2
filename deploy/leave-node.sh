#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Take this node out of its Gridweave cluster.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: leave-node.sh [--uninstall] [options]

Leaves the cluster: tells the master (POST /v1/nodes/leave: its mesh address is freed and
the gateway stops placing work here and requeues what ran here), stops the heartbeat, the
K3s agent and the WireGuard tunnel. The key pair is kept, so a later join-node.sh gets the
node back under the same key.

Options:
  --uninstall        also uninstall the K3s agent, remove the Ray worker image, the
                     WireGuard configuration and the state directory (keys included)
  --state-dir DIR    the node's state (default /var/lib/gridweave-node)
  --dry-run          print every change to this machine instead of making it; the call to
                     the master is still made
  -h, --help         this text
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/node.sh
. "$here/lib/node.sh"

UNINSTALL=0
RAY_WORKER_IMAGE=${RAY_WORKER_IMAGE:-gridweave/ray-worker:latest}
while [ $# -gt 0 ]; do
	case $1 in
	--uninstall) UNINSTALL=1; shift ;;
	--state-dir) STATE_DIR=${2:?--state-dir needs a directory}; shift 2 ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

need curl python3
[ "$DRY_RUN" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (or with --dry-run)"
[ -s "$STATE_DIR/node.json" ] || die "$STATE_DIR/node.json is missing: this machine has not joined"
MASTER_URL=$(cat "$STATE_DIR/master")
name=$(json_field "$STATE_DIR/node.json" name)

log "leaving: $name tells the master at $MASTER_URL"
api POST /v1/nodes/leave "" "$(json_field "$STATE_DIR/node.json" node_token)" >/dev/null
rm -f "$STATE_DIR/node.json" "$STATE_DIR/.authorization"
run systemctl disable --now gridweave-heartbeat.service
run systemctl disable --now k3s-agent
run wg-quick down "$WG_INTERFACE"
run systemctl disable "wg-quick@$WG_INTERFACE"
if [ "$UNINSTALL" = 1 ]; then
	run /usr/local/bin/k3s-agent-uninstall.sh
	run docker image rm "$RAY_WORKER_IMAGE"
	run rm -f "/etc/wireguard/$WG_INTERFACE.conf" /etc/systemd/system/gridweave-heartbeat.service
	rm -rf "$STATE_DIR"
fi
printf 'GRIDWEAVE_LEFT=%s\n' "$name"
