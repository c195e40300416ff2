"""ABCI's socket framing: each message is its length as a protobuf uvarint, then its bytes."""

from __future__ import annotations

import asyncio

__all__ = ["MAX_MESSAGE_BYTES", "encode_frame", "read_frame"]

#: CometBFT's own limit on one ABCI message (abci/client: maxMsgSize 100 MiB).
MAX_MESSAGE_BYTES = 104_857_600


def encode_frame(payload: bytes) -> bytes:
    """``payload`` with its uvarint length in front."""
    length, head = len(payload), bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            head.append(byte | 0x80)
        else:
            head.append(byte)
            return bytes(head) + payload


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next message's bytes; None at a clean end of the stream.

    Raises:
        ValueError: a length beyond ``MAX_MESSAGE_BYTES`` or a malformed uvarint.
    """
    length, shift = 0, 0
    while True:
        byte = await reader.read(1)
        if not byte:
            if shift == 0:
                return None
            raise asyncio.IncompleteReadError(b"", None)
        length |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("malformed uvarint length")
    if length > MAX_MESSAGE_BYTES:
        raise ValueError(f"an ABCI message of {length} bytes is beyond the limit")
    return await reader.readexactly(length)
