"""The WireGuard mesh without a kernel module: keys, rendered configurations parsed back,
the driver's commands recorded, and the master's peers following the registry."""

from __future__ import annotations

import base64
import stat
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from kuberay_service.mesh import (
    MeshPeer,
    MeshSync,
    WireGuardDriver,
    generate_key_pair,
    master_config,
    parse_config,
    peers_to_change,
    public_key_of,
    render_config,
    worker_config,
)
from tests.kuberay_service.node_factories import (
    converges,
    create_key,
    node_headers,
    serve_registry,
    validate,
    validate_body,
)
from tests.kuberay_service.wg_double import FakeWg

MESH = IPv4Network("10.88.0.0/16")
HEAD = "[Interface]\nPrivateKey = {k}\nAddress = 10.0.0.1/24\n"
PEER = "[Peer]\nPublicKey = {k}\n"


def _b64(hex_text: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_text)).decode()


class TestKeys:
    def test_rfc_7748_vector(self) -> None:
        # RFC 7748 section 6.1: Alice's private key and its X25519 public key
        private = _b64("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        public = _b64("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        assert public_key_of(private) == public

    def test_a_new_pair_is_consistent_and_hides_its_private_half(self) -> None:
        pair = generate_key_pair()
        assert public_key_of(pair.private_key) == pair.public_key
        assert len(base64.b64decode(pair.private_key)) == 32
        assert pair.private_key not in repr(pair)
        assert generate_key_pair().public_key != pair.public_key

    @pytest.mark.parametrize("bad", ["", "not base64!", base64.b64encode(b"x" * 31).decode()])
    def test_malformed_keys_are_refused(self, bad: str) -> None:
        with pytest.raises(ValueError, match="not a WireGuard key"):
            public_key_of(bad)


class TestConfigurations:
    def test_the_master_has_one_peer_per_node_allowed_its_address(self) -> None:
        master, a, b = generate_key_pair(), generate_key_pair(), generate_key_pair()
        config = master_config(
            private_key=master.private_key,
            address=IPv4Address("10.88.0.1"),
            mesh=MESH,
            nodes=(
                ("gpu-b", b.public_key, IPv4Address("10.88.0.3")),
                ("gpu-a", a.public_key, IPv4Address("10.88.0.2")),
            ),
        )
        text = render_config(config)
        parsed = parse_config(text)
        assert parsed == config
        assert str(parsed.interface.address) == "10.88.0.1/16"
        assert parsed.interface.listen_port == 51820
        assert [(p.comment, [str(n) for n in p.allowed_ips]) for p in parsed.peers] == [
            ("gpu-a", ["10.88.0.2/32"]),
            ("gpu-b", ["10.88.0.3/32"]),
        ]
        assert all(p.endpoint is None for p in parsed.peers)  # nodes dial in

    def test_a_worker_reaches_the_whole_mesh_through_the_master(self) -> None:
        master, node = generate_key_pair(), generate_key_pair()
        config = worker_config(
            private_key=node.private_key,
            address=IPv4Address("10.88.0.7"),
            mesh=MESH,
            master_public_key=master.public_key,
            master_endpoint="203.0.113.10:51820",
        )
        parsed = parse_config(render_config(config))
        (peer,) = parsed.peers
        assert str(parsed.interface.address) == "10.88.0.7/32"
        assert parsed.interface.listen_port is None
        assert (peer.public_key, peer.endpoint, peer.persistent_keepalive) == (
            master.public_key,
            "203.0.113.10:51820",
            25,
        )
        assert peer.allowed_ips == (MESH,)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[Interface]\nAddress = 10.0.0.1/24\n", "has no PrivateKey"),
            ("PrivateKey = x\n", "not a 'Key = Value' line in a section"),
            ("[Interface]\nPrivateKey = {k}\nAddress = 10.0.0.1/24\nColour = red\n", "Colour"),
            (
                HEAD + "[Peer]\nAllowedIPs = 10.0.0.2/32\n",
                "no PublicKey",
            ),
            (
                HEAD + PEER + "AllowedIPs = 10.0.0.2/32\nEndpoint = nowhere\n",
                "host:port",
            ),
            (
                "[Interface]\nPrivateKey = {k}\nAddress = 10.0.0.1/24\nListenPort = 70000\n",
                "not a port",
            ),
            (
                HEAD + PEER + "AllowedIPs = 10.0.0.2/32\n" + PEER + "AllowedIPs = 10.0.0.3/32\n",
                "repeats",
            ),
        ],
    )
    def test_the_parser_refuses_what_wg_quick_would(self, text: str, message: str) -> None:
        key = generate_key_pair().private_key
        with pytest.raises(ValueError, match=message):
            parse_config(text.replace("{k}", key))


class TestDriver:
    def test_commands_and_a_private_configuration_file(self, tmp_path: Path) -> None:
        wg = FakeWg()
        driver = WireGuardDriver("wg0", runner=wg, config_dir=tmp_path / "wireguard")
        pair, peer = generate_key_pair(), generate_key_pair()
        config = worker_config(
            private_key=pair.private_key,
            address=IPv4Address("10.88.0.2"),
            mesh=MESH,
            master_public_key=peer.public_key,
            master_endpoint="master.example.com:51820",
        )
        path = driver.write_config(config)
        driver.up()
        driver.set_peer(peer.public_key, ["10.88.0.9/32"])
        assert driver.peers() == {peer.public_key: ("10.88.0.9/32",)}
        driver.remove_peer(peer.public_key)
        driver.save()
        driver.down()
        assert path == tmp_path / "wireguard" / "wg0.conf"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert parse_config(path.read_text()) == config
        assert wg.commands == [
            ("wg-quick", "up", "wg0"),
            ("wg", "set", "wg0", "peer", peer.public_key, "allowed-ips", "10.88.0.9/32"),
            ("wg", "show", "wg0", "allowed-ips"),
            ("wg", "set", "wg0", "peer", peer.public_key, "remove"),
            ("wg-quick", "save", "wg0"),
            ("wg-quick", "down", "wg0"),
        ]
        assert not any(pair.private_key in " ".join(argv) for argv in wg.commands)

    def test_a_bad_interface_name_is_refused(self) -> None:
        with pytest.raises(ValueError, match="interface name"):
            WireGuardDriver("wg0; reboot")


class TestSync:
    def test_the_difference_only_and_saved_once(self) -> None:
        a, b, stale = (generate_key_pair().public_key for _ in range(3))
        wg = FakeWg()
        wg.peers = {a: ("10.88.0.2/32",), stale: ("10.88.0.9/32",)}
        desired = [MeshPeer("gpu-a", a, "10.88.0.2"), MeshPeer("gpu-b", b, "10.88.0.3")]
        assert peers_to_change(wg.peers, desired) == ([desired[1]], [stale])
        sync = MeshSync(WireGuardDriver(runner=wg), lambda: desired)
        assert sync.sync_once() == (1, 1)
        assert wg.peers == {a: ("10.88.0.2/32",), b: ("10.88.0.3/32",)} == wg.saved
        wg.commands.clear()
        assert sync.sync_once() == (0, 0)
        assert wg.commands == [("wg", "show", "wg0", "allowed-ips")]  # nothing set, no save


@pytest.mark.postgres
class TestMasterPeersFollowTheRegistry:
    def test_validate_adds_the_peer_and_leave_removes_it(self, database: str) -> None:
        wg = FakeWg()
        with serve_registry(database, mesh_runner=wg, wireguard_interface="wg0") as registry:
            sync: MeshSync | None = registry.app.state.node_sync.mesh
            assert sync is not None
            body = validate_body(create_key(registry)["key"])
            answer = validate(registry, body).json()
            expected = {body["wireguard_public_key"]: (f"{answer['vpn_ip']}/32",)}
            assert converges(sync, lambda: wg.peers == expected and wg.saved == expected)
            with registry.client(node_headers(answer["node_token"])) as http:
                assert http.post("/v1/nodes/leave").status_code == 204
            assert converges(sync, lambda: wg.peers == {} and wg.saved == {})
        assert ("wg", "set", "wg0", "peer", body["wireguard_public_key"], "remove") in wg.commands
