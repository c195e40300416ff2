#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Put HTTPS (Traefik, Let's Encrypt) in front of the master's public API.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: setup-https.sh --domain NAME --email ADDR [options]

Runs Traefik on ports 80 and 443 in front of platform_service (8100), with a certificate
from Let's Encrypt for NAME (whose DNS must point at this master; port 80 answers the
HTTP-01 challenge and otherwise redirects to 443). Writes HTTPS_DOMAIN and ACME_EMAIL to
the env file. Open 80/tcp and 443/tcp (docs/architecture.md, "Ports to open").

Options:
  --domain NAME      the public API's domain name
  --email ADDR       Let's Encrypt's contact address
  --env-file FILE    the settings (default deploy/.env, written by deploy.sh)
  --dry-run          print every change to this machine instead of making it
  -h, --help         this text
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=lib/node.sh
. "$here/lib/node.sh"

ENV_FILE=$here/.env
DOMAIN=""
EMAIL=""
while [ $# -gt 0 ]; do
	case $1 in
	--domain) DOMAIN=${2:?--domain needs a name}; shift 2 ;;
	--email) EMAIL=${2:?--email needs an address}; shift 2 ;;
	--env-file) ENV_FILE=${2:?--env-file needs a file}; shift 2 ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done
[ -n "$DOMAIN" ] || die "--domain is required"
[ -n "$EMAIL" ] || die "--email is required"
[[ $DOMAIN =~ ^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$ ]] || die "--domain: $DOMAIN is not a host name"
[[ $EMAIL =~ ^[^@[:space:]]+@[^@[:space:]]+$ ]] || die "--email: $EMAIL is not an address"
[ -f "$ENV_FILE" ] || die "$ENV_FILE is missing: run deploy.sh first"
[ "$DRY_RUN" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (or with --dry-run)"

updated=$(mktemp)
trap 'rm -f "$updated"' EXIT
grep -v -E '^(HTTPS_DOMAIN|ACME_EMAIL)=' "$ENV_FILE" >"$updated" || true
printf 'HTTPS_DOMAIN=%s\nACME_EMAIL=%s\n' "$DOMAIN" "$EMAIL" >>"$updated"
install_file "$ENV_FILE" 600 <"$updated"
run docker compose --project-name gridweave --env-file "$ENV_FILE" \
	-f "$repo/docker/deploy/docker-compose.yml" -f "$repo/docker/deploy/https.yml" up -d traefik
printf 'GRIDWEAVE_PUBLIC_URL=https://%s\n' "$DOMAIN"
