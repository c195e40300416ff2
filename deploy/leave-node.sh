#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Take this node out of its Gridweave cluster.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: leave-node.sh [--uninstall] [options]

Leaves the cluster. The jobs and endpoint replicas running here move first: the heartbeat
stops, the master sees the node NotReady, places nothing new here and requeues what ran
here (after KUBERAY_HEARTBEAT_TIMEOUT_SECONDS and GATEWAY_NODE_LOST_GRACE_SECONDS, about
a minute and a half by default), and this script waits until none runs here. Then it tells
the master (POST /v1/nodes/leave: the registration and the WireGuard peer go, the mesh
address is freed) and stops the K3s agent (the Ray worker) and the tunnel. The key pair is
kept, so a later join-node.sh gets the node back under the same key.

Options:
  --wait SECONDS     how long the jobs may take to move (default 600; 0: leave at once,
                     the master requeues them when it notices)
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
WAIT=600
RAY_WORKER_IMAGE=${RAY_WORKER_IMAGE:-gridweave/ray-worker:latest}
while [ $# -gt 0 ]; do
	case $1 in
	--uninstall) UNINSTALL=1; shift ;;
	--wait) WAIT=${2:?--wait needs seconds}; shift 2 ;;
	--state-dir) STATE_DIR=${2:?--state-dir needs a directory}; shift 2 ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

[[ $WAIT =~ ^[0-9]+$ ]] || die "--wait needs a number of seconds, not $WAIT"

need curl python3 pgrep
[ "$DRY_RUN" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (or with --dry-run)"
[ -s "$STATE_DIR/node.json" ] || die "$STATE_DIR/node.json is missing: this machine has not joined"
MASTER_URL=$(cat "$STATE_DIR/master")
name=$(json_field "$STATE_DIR/node.json" name)

# The work running here: Ray's process title of a job attempt under way (a warm worker
# waiting for one is "ray::JobWorker", not counted) and of an endpoint replica.
running_work() { pgrep -c -f '^ray::(JobWorker\.run|ServeReplica)' || true; }

# -- the jobs move first: silent, the node turns NotReady and the master requeues its work --
if [ "$DRY_RUN" = 1 ]; then
	printf 'would wait up to %s s for the jobs and endpoint replicas here to move\n' "$WAIT"
elif [ "$WAIT" -gt 0 ] && [ "$(running_work)" -gt 0 ]; then
	log "$(running_work) jobs or endpoint replicas run here: the heartbeat stops so the master moves them"
	run systemctl stop gridweave-heartbeat.service
	waited=0
	while [ "$(running_work)" -gt 0 ] && [ "$waited" -lt "$WAIT" ]; do
		sleep 1
		waited=$((waited + 1))
	done
	if [ "$(running_work)" -gt 0 ]; then
		log "still running after $WAIT s: leaving anyway (the master requeues them)"
	else
		log "no job or endpoint replica runs here any more (after $waited s)"
	fi
fi

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
