#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Deploy a Gridweave master on this machine, from a clean slate.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: deploy.sh --public-address ADDR [options]

Sets up the master: the WireGuard hub (wg0, the mesh's first address), K3s (server, its
API on the mesh), Helm with the KubeRay operator and the NVIDIA and AMD GPU device
plugins, Gridweave's CRDs and RBAC, the Ray head (RayCluster "gridweave"), and the services
with docker compose (MinIO too unless S3_ENDPOINT is set). Each run starts from a clean
slate: the compose project and the tunnel are taken down and brought up anew (data volumes
and keys are kept; --wipe removes the volumes too). Secrets missing from the env file are
generated into it. Ends with the ports to open on each machine.

Options:
  --public-address ADDR  the address nodes reach this master at (host or IP)
  --env-file FILE        the settings (default deploy/.env, made from deploy/.env.example)
  --wipe                 also remove the compose volumes (databases, objects, images)
  --dry-run              print every change to this machine instead of making it
  -h, --help             this text
USAGE
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=lib/node.sh
. "$here/lib/node.sh"

ENV_FILE=$here/.env
PUBLIC_ADDRESS=""
WIPE=0
KUBERAY_OPERATOR_VERSION=1.5.0
while [ $# -gt 0 ]; do
	case $1 in
	--public-address) PUBLIC_ADDRESS=${2:?--public-address needs an address}; shift 2 ;;
	--env-file) ENV_FILE=${2:?--env-file needs a file}; shift 2 ;;
	--wipe) WIPE=1; shift ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done
[ -n "$PUBLIC_ADDRESS" ] || die "--public-address is required"
need python3 openssl awk
[ "$DRY_RUN" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (or with --dry-run)"

# -- the settings: the env file, secrets generated where empty -------------------------------
settings=$(mktemp)
trap 'rm -f "$settings"' EXIT
cp "$([ -f "$ENV_FILE" ] && echo "$ENV_FILE" || echo "$here/.env.example")" "$settings"

setting() {  # setting NAME: its value in the working copy
	sed -n "s/^$1=//p" "$settings" | tail -n 1
}
set_setting() {  # set_setting NAME VALUE: in the working copy
	python3 - "$settings" "$1" "$2" <<'PY'
import sys
path, name, value = sys.argv[1:]
lines = open(path).read().splitlines()
for i, line in enumerate(lines):
    if line.startswith(name + "="):
        lines[i] = f"{name}={value}"
        break
else:
    lines.append(f"{name}={value}")
open(path, "w").write("\n".join(lines) + "\n")
PY
}
credential_names=(platform gateway metering credit faucet chain kuberay registry operator)
token_settings=()
for name in "${credential_names[@]}"; do
	token_settings+=("GRIDWEAVE_TOKEN_${name^^}")
done
fill_secrets "$settings" "${token_settings[@]}" GRIDWEAVE_SERVE_KEY POSTGRES_PASSWORD \
	S3_SECRET_KEY "${POSTGRES_ROLE_PASSWORDS[@]}" >/dev/null
# every service checks calls against each token's SHA-256 and roles (the roster's)
credential_args=()
for name in "${credential_names[@]}"; do
	credential_args+=("$name=$(setting "GRIDWEAVE_TOKEN_${name^^}")")
done
set_setting GRIDWEAVE_CREDENTIALS \
	"$(python3 -I "$repo/gridweave_runtime/service_roster.py" "${credential_args[@]}")"
master_ip=$(setting KUBERAY_MASTER_VPN_IP)
mesh=$(setting KUBERAY_MESH_CIDR)
set_setting KUBERAY_WIREGUARD_ENDPOINT "$PUBLIC_ADDRESS:51820"
set_setting KUBERAY_K3S_URL "https://$master_ip:6443"

# -- a clean slate -------------------------------------------------------------------------
compose=(docker compose --project-name gridweave --env-file "$ENV_FILE"
	-f "$repo/docker/deploy/docker-compose.yml")
log "clean slate: the compose project and the tunnel go down"
if [ "$WIPE" = 1 ]; then
	run "${compose[@]}" down --remove-orphans --volumes
else
	run "${compose[@]}" down --remove-orphans
fi
run wg-quick down "$WG_INTERFACE"

# -- the WireGuard hub ------------------------------------------------------------------------
run apt-get install -y wireguard-tools docker.io curl skopeo
wg_key=/etc/wireguard/master.key
if [ -s "$wg_key" ]; then  # kept across runs: the nodes' configurations name its public half
	private_key=$(cat "$wg_key")
else
	private_key=$(openssl genpkey -algorithm X25519 -outform DER | tail -c 32 | base64)
	install_secret "$wg_key" <<<"$private_key"
fi
public_key=$({
	printf '\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x6e\x04\x22\x04\x20'
	printf '%s' "$private_key" | base64 -d
} | openssl pkey -inform DER -pubout -outform DER | tail -c 32 | base64)
set_setting KUBERAY_WIREGUARD_PUBLIC_KEY "$public_key"
prefix=${mesh#*/}
install_file "/etc/wireguard/$WG_INTERFACE.conf" 600 <<CONF
[Interface]
PrivateKey = $private_key
Address = $master_ip/$prefix
ListenPort = 51820
CONF
install_file /etc/sysctl.d/90-gridweave.conf 644 <<<'net.ipv4.ip_forward = 1'
run sysctl --system
run wg-quick up "$WG_INTERFACE"
run systemctl enable "wg-quick@$WG_INTERFACE"

# -- K3s, Helm, the KubeRay operator, the GPU device plugins ------------------------------------
install_file /etc/rancher/k3s/config.yaml 600 <<YAML
node-ip: $master_ip
advertise-address: $master_ip
flannel-iface: $WG_INTERFACE
tls-san:
  - $master_ip
  - $PUBLIC_ADDRESS
docker: true
write-kubeconfig-mode: "0600"
YAML
run sh -c 'curl -sfL https://get.k3s.io | sh -'
if [ "$DRY_RUN" = 1 ]; then
	set_setting KUBERAY_K3S_TOKEN "<from /var/lib/rancher/k3s/server/node-token>"
else
	set_setting KUBERAY_K3S_TOKEN "$(cat /var/lib/rancher/k3s/server/node-token)"
fi
export KUBECONFIG=/etc/rancher/k3s/k3s.yaml
run sh -c 'curl -fsSL https://raw.githubusercontent.com/helm/helm/main/scripts/get-helm-3 | bash'
run helm repo add kuberay https://ray-project.github.io/kuberay-helm/
run helm repo add nvdp https://nvidia.github.io/k8s-device-plugin
run helm repo update
run helm upgrade --install kuberay-operator kuberay/kuberay-operator \
	--version "$KUBERAY_OPERATOR_VERSION" --namespace kuberay-system --create-namespace
run helm upgrade --install nvidia-device-plugin nvdp/nvidia-device-plugin \
	--namespace kube-system
run kubectl apply -f https://raw.githubusercontent.com/ROCm/k8s-device-plugin/master/k8s-ds-amdgpu-dp.yaml

# -- Gridweave's resources and the Ray head ----------------------------------------------------
namespace=$(setting KUBERAY_NAMESPACE)
run sh -c "kubectl create namespace '$namespace' --dry-run=client -o yaml | kubectl apply -f -"
run kubectl apply -f "$repo/k8s/"
install_file /var/lib/gridweave/raycluster.yaml 644 <<YAML
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: $(setting KUBERAY_RAY_CLUSTER)
  namespace: $namespace
spec:
  rayVersion: "2.49.0"
  headGroupSpec:
    rayStartParams:
      num-gpus: "0"
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.49.0-py312
            ports:
              - {containerPort: 6379, name: gcs}
              - {containerPort: 10001, name: client}
  workerGroupSpecs: []
YAML
run kubectl apply -f /var/lib/gridweave/raycluster.yaml

# -- the services -------------------------------------------------------------------------------
install_file "$ENV_FILE" 600 <"$settings"
profiles=()
[ -n "$(setting S3_ENDPOINT)" ] || profiles=(--profile minio)
run "${compose[@]}" "${profiles[@]}" up -d --build

# -- the default job image, published as gridweave/python:3.11 -------------------------------
# What a job runs in unless its owner chose another image, and what users build theirs on:
# built from Debian's packages (mmdebstrap, umoci), pushed to the registry's public namespace
# with a token the platform signs (docs/architecture.md, "The default image in the registry").
log "the default job image: built, and published as gridweave/python:3.11"
run "$repo/tools/sandbox-image/build.sh"
layout="${GRIDWEAVE_SANDBOX_CACHE:-/var/cache/gridweave/sandbox}/base/oci"
publish_token="${compose[*]} exec -T platform python -m platform_service publish-token"
run sh -c "skopeo --insecure-policy copy --quiet --dest-tls-verify=false \
	--dest-registry-token \"\$($publish_token --repository gridweave/python)\" \
	oci:$layout:python-3.11 docker://$master_ip:30500/gridweave/python:3.11"

# -- what to open, from docs/architecture.md's ports table ------------------------------------
printf '\nPorts to open (docs/architecture.md, "Ports to open"):\n'
awk -F'|' '/<!-- ports:begin -->/ {on = 1; next} /<!-- ports:end -->/ {on = 0}
	on && NR > 0 && $2 !~ /machine|---/ {
		gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); gsub(/^ +| +$/, "", $4)
		printf "  %-7s %-10s %s\n", $2, $3, $4
	}' "$repo/docs/architecture.md"
printf 'GRIDWEAVE_MASTER=%s\n' "http://$PUBLIC_ADDRESS:$(setting KUBERAY_PORT)"
