#!/usr/bin/env bash
# Regenerates chain_service/abci/cometbft_abci.binpb: the protobuf descriptors of CometBFT's
# ABCI 2 messages (cometbft.abci.v1 and every file it imports), compiled from the .proto
# files of the Go modules pinned in go.mod/go.sum (the cometbft module's proto/ tree and
# cosmos/gogoproto's gogo.proto) by protoc from grpcio-tools. The Python ABCI application
# builds its message classes from this file at run time (google.protobuf's descriptor
# pool), so neither protoc nor generated modules are needed to run or test Gridweave.
# Needs: go, and a Python with grpcio-tools (PROTOC_PYTHON, default python3):
#   python3 -m venv /tmp/protoc && /tmp/protoc/bin/pip install grpcio-tools
#   PROTOC_PYTHON=/tmp/protoc/bin/python tools/cometbft/gen_descriptors.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export GOFLAGS=-mod=readonly
go mod download github.com/cometbft/cometbft github.com/cosmos/gogoproto
cometbft=$(go list -m -f '{{.Dir}}' github.com/cometbft/cometbft)
gogoproto=$(go list -m -f '{{.Dir}}' github.com/cosmos/gogoproto)
python=${PROTOC_PYTHON:-python3}
wellknown=$("$python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
out="$here/../../chain_service/abci/cometbft_abci.binpb"
"$python" -m grpc_tools.protoc \
  -I "$cometbft/proto" -I "$gogoproto" -I "$wellknown" \
  --include_imports --descriptor_set_out="$out" \
  cometbft/abci/v1/types.proto
echo "$out"
