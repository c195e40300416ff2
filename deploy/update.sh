#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Update a Gridweave master in place: new code, rebuilt images, the data kept.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: update.sh [options]

Pulls the repository (fast-forward only), re-applies Gridweave's CRDs and RBAC, rebuilds
the service images with fresh base images and restarts the services with docker compose.
Volumes (databases, objects, registry) and keys are kept; each service migrates its
database on start. The passwords of the services' own PostgreSQL roles missing from the
env file are generated into it (compose's postgres-roles makes or updates the roles).

Options:
  --env-file FILE    the settings (default deploy/.env, written by deploy.sh)
  --no-pull          keep the working tree as it is
  --dry-run          print every change to this machine instead of making it
  -h, --help         this text
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=lib/node.sh
. "$here/lib/node.sh"

ENV_FILE=$here/.env
PULL=1
while [ $# -gt 0 ]; do
	case $1 in
	--env-file) ENV_FILE=${2:?--env-file needs a file}; shift 2 ;;
	--no-pull) PULL=0; shift ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done
[ -f "$ENV_FILE" ] || die "$ENV_FILE is missing: run deploy.sh first"
need python3
[ "$DRY_RUN" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (or with --dry-run)"

compose=(docker compose --project-name gridweave --env-file "$ENV_FILE"
	-f "$repo/docker/deploy/docker-compose.yml")
profiles=()
grep -q -E '^S3_ENDPOINT=.+' "$ENV_FILE" || profiles=(--profile minio)
if [ "$PULL" = 1 ]; then
	run git -C "$repo" pull --ff-only
fi
# the passwords of the services' own PostgreSQL roles, which an older env file lacks
settings=$(mktemp)
trap 'rm -f "$settings"' EXIT
cp "$ENV_FILE" "$settings"
filled=$(fill_secrets "$settings" "${POSTGRES_ROLE_PASSWORDS[@]}")
if [ -n "$filled" ]; then
	log "generated into $ENV_FILE: ${filled//$'\n'/ }"
	install_file "$ENV_FILE" 600 <"$settings"
fi
run env KUBECONFIG=/etc/rancher/k3s/k3s.yaml kubectl apply -f "$repo/k8s/"
run "${compose[@]}" "${profiles[@]}" build --pull
run "${compose[@]}" "${profiles[@]}" up -d --remove-orphans
printf 'GRIDWEAVE_UPDATED=%s\n' "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
