#!/usr/bin/env bash
# Shared by the deploy scripts (sourced, never run): deploy.sh, update.sh, setup-https.sh,
# join-node.sh, leave-node.sh and node-heartbeat.sh.
# Needs bash, curl and python3 (JSON is read and written by python3, never by hand).

# DRY_RUN=1: every change to this machine is printed instead of made. The calls to the
# master (validate, register, heartbeat, leave) are still made, and the script's own state
# (STATE_DIR) is still kept: they are what a dry run checks.
DRY_RUN=${DRY_RUN:-0}
STATE_DIR=${STATE_DIR:-/var/lib/gridweave-node}
WG_INTERFACE=${WG_INTERFACE:-wg0}

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 || die "$tool is required"
	done
}

# run CMD...: run it, or print it under --dry-run. Secrets are never passed as arguments.
run() {
	if [ "$DRY_RUN" = 1 ]; then
		printf 'would run: %s\n' "$*"
	else
		"$@"
	fi
}

# install_file PATH MODE < content: write a system file, or print it (secrets redacted).
install_file() {
	local path=$1 mode=$2
	if [ "$DRY_RUN" = 1 ]; then
		printf 'would write %s (mode %s):\n' "$path" "$mode"
		sed -E 's/^(PrivateKey|token|[A-Z0-9_]*(TOKEN|PASSWORD|SECRET|SERVE_KEY)[A-Z0-9_]*)( *[=:]).*/\1\3 <redacted>/; s/^/    /'
		return
	fi
	mkdir -p "$(dirname "$path")"
	local temporary
	temporary=$(mktemp "$(dirname "$path")/.gridweave.XXXXXX")
	cat >"$temporary"
	chmod "$mode" "$temporary"
	mv -f "$temporary" "$path"
}

# The password of each service's own PostgreSQL role on the master (docker/deploy/
# postgres-roles.sql makes the roles): deploy.sh and update.sh generate the missing ones.
# shellcheck disable=SC2034  # used by the scripts that source this file
POSTGRES_ROLE_PASSWORDS=(POSTGRES_PLATFORM_PASSWORD POSTGRES_CREDITS_PASSWORD
	POSTGRES_METERING_PASSWORD POSTGRES_FAUCET_PASSWORD POSTGRES_CHAIN_PASSWORD
	POSTGRES_KUBERAY_PASSWORD)

# fill_secrets FILE NAME...: each NAME without a value in the env file FILE gets a random one
# (64 hex digits), on its empty NAME= line or appended; prints the names it filled. The
# values are made by python3 itself, never passed as arguments.
fill_secrets() {
	python3 - "$@" <<'PY'
import secrets, sys
path, names = sys.argv[1], sys.argv[2:]
lines = open(path).read().splitlines()
for name in names:
    if any(line.startswith(name + "=") and line != name + "=" for line in lines):
        continue
    value = f"{name}={secrets.token_hex(32)}"
    empty = [i for i, line in enumerate(lines) if line == name + "="]
    if empty:
        lines[empty[0]] = value
    else:
        lines.append(value)
    print(name)
open(path, "w").write("\n".join(lines) + "\n")
PY
}

# install_secret PATH < content: write a 0600 file whose content is never printed.
install_secret() {
	if [ "$DRY_RUN" = 1 ]; then
		printf 'would write %s (mode 600; a secret, not shown)\n' "$1"
		cat >/dev/null
		return
	fi
	install_file "$1" 600
}

# state_file NAME MODE < content: the script's own state (written in a dry run too).
state_file() {
	local name=$1 mode=$2
	mkdir -p "$STATE_DIR"
	chmod 700 "$STATE_DIR"
	umask 077
	cat >"$STATE_DIR/$name"
	chmod "$mode" "$STATE_DIR/$name"
}

# json_field FILE KEY[.KEY...]: one field of a JSON file, printed as text.
json_field() {
	python3 - "$1" "$2" <<'PY'
import json, sys
value = json.load(open(sys.argv[1]))
for key in sys.argv[2].split("."):
    value = value[key]
print(value if not isinstance(value, (dict, list)) else json.dumps(value))
PY
}

# api METHOD PATH BODY_FILE|- [TOKEN]: call the master; the answer goes to stdout. A refusal
# stops the script with the master's own message (it says which: expired, revoked, used up).
api() {
	local method=$1 path=$2 body=$3 token=${4:-} answer code
	answer=$(mktemp)
	local args=(-sS -o "$answer" -w '%{http_code}' -X "$method" --max-time 30
		-H 'Content-Type: application/json')
	if [ -n "$token" ]; then
		# the token goes through a header file, never the command line (ps shows arguments)
		args+=(-H @"$(header_file "$token")")
	fi
	if [ "$body" != "" ]; then
		args+=(--data-binary @"$body")
	fi
	if ! code=$(curl "${args[@]}" "${MASTER_URL%/}$path"); then
		rm -f "$answer"
		die "the master at $MASTER_URL could not be reached ($method $path)"
	fi
	if [ "${code:0:1}" != 2 ]; then
		local message
		message=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("message", ""))' "$answer" 2>/dev/null || true)
		rm -f "$answer"
		die "$method $path: HTTP $code: ${message:-no message}"
	fi
	cat "$answer"
	rm -f "$answer"
}

header_file() {
	local file="$STATE_DIR/.authorization"
	(umask 077 && printf 'Authorization: Bearer %s\n' "$1" >"$file")
	printf '%s' "$file"
}

# detect_gpus: the GPUs of this machine as the API's JSON list (NVIDIA, then AMD).
detect_gpus() {
	local nvidia="" amd=""
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia=$(nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits || true)
	fi
	if command -v rocm-smi >/dev/null 2>&1; then
		amd=$(rocm-smi --showproductname --showmeminfo vram --json 2>/dev/null || true)
	fi
	NVIDIA_CSV=$nvidia AMD_JSON=$amd python3 <<'PY'
import json, os
gpus = []
for line in os.environ["NVIDIA_CSV"].splitlines():
    index, name, total = (part.strip() for part in line.split(","))
    gpus.append({"index": int(index), "vendor": "nvidia", "model": name, "vram_mb": int(float(total))})
amd = json.loads(os.environ["AMD_JSON"] or "{}")
cards = [(int(name[4:]), info) for name, info in amd.items() if name[4:].isdigit() and name.startswith("card")]
for _, info in sorted(cards, key=lambda card: card[0]):  # card2 before card10
    total = int(info.get("VRAM Total Memory (B)", 0)) // 2**20
    model = info.get("Card Series") or info.get("Card series") or "AMD GPU"
    gpus.append({"index": len(gpus), "vendor": "amd", "model": model, "vram_mb": total})
print(json.dumps(gpus))
PY
}

# gpu_health: this heartbeat's body: each NVIDIA GPU's free VRAM (AMD and declared GPUs
# report liveness only).
gpu_health() {
	local free=""
	if command -v nvidia-smi >/dev/null 2>&1; then
		free=$(nvidia-smi --query-gpu=index,memory.free --format=csv,noheader,nounits 2>/dev/null || true)
	fi
	NVIDIA_FREE=$free python3 <<'PY'
import json, os
gpus = []
for line in os.environ["NVIDIA_FREE"].splitlines():
    index, free = (part.strip() for part in line.split(","))
    healthy = free.replace(".", "").isdigit()
    gpus.append({"index": int(index), "healthy": healthy, "free_vram_mb": int(float(free)) if healthy else 0})
print(json.dumps({"gpus": gpus}))
PY
}

# send_heartbeat: one heartbeat with the node token of the state directory.
send_heartbeat() {
	local body
	body=$(mktemp)
	gpu_health >"$body"
	api POST /v1/nodes/heartbeat "$body" "$(json_field "$STATE_DIR/node.json" node_token)" >/dev/null
	rm -f "$body"
}
