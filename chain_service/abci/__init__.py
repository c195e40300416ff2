"""Gridweave's ABCI 2 application for CometBFT v1: anchors signed batch roots.

``python -m chain_service.abci --trusted-key HEX`` listens where CometBFT's ``proxy_app``
points (the socket protocol: uvarint-length-prefixed ``cometbft.abci.v1`` protobuf
messages, four connections). It accepts only well-formed batch roots signed by
chain_service's key, one per batch, in order, and answers ``/batch`` queries by batch id.
"""
