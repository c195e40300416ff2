"""The ``cometbft.abci.v1`` message classes, built from the committed descriptor set.

``cometbft_abci.binpb`` is compiled from the pinned cometbft Go module's ``proto/`` tree by
``tools/cometbft/gen_descriptors.sh``; the classes come from google.protobuf's descriptor
pool at import, so no generated module and no protoc are needed. Messages are handled as
``Any``: their fields are CometBFT's, named as in ``proto/cometbft/abci/v1/types.proto``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Request", "Response", "message_class"]

_DESCRIPTORS = Path(__file__).with_name("cometbft_abci.binpb")
_POOL = descriptor_pool.DescriptorPool()
for _file in descriptor_pb2.FileDescriptorSet.FromString(_DESCRIPTORS.read_bytes()).file:
    _POOL.Add(_file)


def message_class(name: str) -> Any:
    """The class of message ``name`` in package ``cometbft.abci.v1``."""
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"cometbft.abci.v1.{name}"))


Request: Any = message_class("Request")
Response: Any = message_class("Response")
