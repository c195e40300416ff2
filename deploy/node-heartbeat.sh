#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The node's heartbeat: liveness and each GPU's health and free VRAM, sent to the master.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: node-heartbeat.sh [--once] [--state-dir DIR] [--dry-run]

Sends POST /v1/nodes/heartbeat with the node token of the state directory every
heartbeat_interval_seconds the master asked for (run by gridweave-heartbeat.service).
A node that stops sending them turns NotReady on the master.

Options:
  --once             send one heartbeat and exit
  --state-dir DIR    the node's state (default /var/lib/gridweave-node)
  --dry-run          accepted for symmetry: a heartbeat changes nothing on this machine
  -h, --help         this text
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/node.sh
. "$here/lib/node.sh"

ONCE=0
while [ $# -gt 0 ]; do
	case $1 in
	--once) ONCE=1; shift ;;
	--state-dir) STATE_DIR=${2:?--state-dir needs a directory}; shift 2 ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

need curl python3
[ -s "$STATE_DIR/node.json" ] || die "$STATE_DIR/node.json is missing: this machine has not joined"
MASTER_URL=$(cat "$STATE_DIR/master")
if [ "$ONCE" = 1 ]; then
	send_heartbeat
	exit 0
fi
interval=$(json_field "$STATE_DIR/node.json" heartbeat_interval_seconds)
while true; do
	if ! (send_heartbeat); then  # a missed beat is retried next time, the loop goes on
		log "heartbeat failed; next in $interval s"
	fi
	sleep "$interval"
done
