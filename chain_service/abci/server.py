"""The ABCI socket server: one asyncio task per CometBFT connection, answers in order."""

from __future__ import annotations

import asyncio
import logging

from chain_service.abci.application import AnchorApplication
from chain_service.abci.framing import encode_frame, read_frame
from chain_service.abci.messages import Request

__all__ = ["serve_abci"]

_logger = logging.getLogger("gridweave")


async def _connection(
    application: AnchorApplication, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while (payload := await read_frame(reader)) is not None:
            request = Request.FromString(payload)
            response = application.handle(request)
            writer.write(encode_frame(response.SerializeToString()))
            if request.WhichOneof("value") == "flush":
                await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # CometBFT went away; it reconnects when it comes back
    except Exception:
        _logger.exception("abci: a connection failed")
    finally:
        writer.close()


async def serve_abci(application: AnchorApplication, host: str, port: int) -> None:
    """Serve ``application`` on ``host:port`` until cancelled."""

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _connection(application, reader, writer)

    server = await asyncio.start_server(connected, host, port)
    async with server:
        await server.serve_forever()
