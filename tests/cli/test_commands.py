"""The CLI's parts that need no platform: help texts, argument parsing, the function loader,
the config writer, and the tables drawn from given answers."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import cloudpickle
import pytest
import typer
from rich.console import Console
from typer.core import TyperGroup, TyperOption

import gridweave as gw
from gridweave_allinone.platform import Started
from gridweave_cli import up as up_module
from gridweave_cli._output import age, credits_text, mib_text
from gridweave_cli._tables import Column, fitted_table
from gridweave_cli.app import app
from gridweave_cli.endpoint_logs import print_replica_logs
from gridweave_cli.endpoints import _state as endpoint_state
from gridweave_cli.exit_codes import EXIT_CODES_HELP, ExitCode
from gridweave_cli.nodes import capacity_table, memory_text, nodes_table, vram_bar
from gridweave_cli.run import load_function, parse_arguments
from gridweave_clients.gateway.endpoints import EndpointLogsResponse
from gridweave_clients.gateway.models import InventoryResponse
from gridweave_clients.platform.endpoints import EndpointResponse
from tests.cli.helpers import Invoke

MY_COMMANDS = [
    "login",
    "signup",
    "run",
    "jobs",
    "logs",
    "cancel",
    "credits",
    "usage",
    "prices",
    "nodes",
]
ENDPOINT_COMMANDS = ["endpoints", "deploy", "stop"]


class TestHelp:
    def test_the_epilog_lists_every_exit_code(self, gridweave: Invoke) -> None:
        result = gridweave("--help")
        assert result.exit_code == 0
        flat = " ".join(result.stdout.replace("│", " ").split())
        for code in ExitCode:
            assert f"{int(code)} " in EXIT_CODES_HELP
        assert " ".join(EXIT_CODES_HELP.split()) in flat
        for command in MY_COMMANDS:
            assert f" {command} " in flat

    @pytest.mark.parametrize("command", MY_COMMANDS + ENDPOINT_COMMANDS)
    def test_every_command_has_help_with_examples(self, gridweave: Invoke, command: str) -> None:
        result = gridweave(command, "--help")
        assert result.exit_code == 0, result.output
        assert "Examples:" in result.stdout and f"gridweave {command}" in result.stdout

    @pytest.mark.parametrize(
        "command", ["run", "jobs", "logs", "cancel", "credits", "usage", "nodes", "login"]
    )
    def test_every_command_that_prints_data_takes_json(
        self, gridweave: Invoke, command: str
    ) -> None:
        assert "--json" in gridweave(command, "--help").stdout

    @pytest.mark.parametrize("command", ENDPOINT_COMMANDS)
    def test_every_endpoint_command_takes_json_and_explains_each_option(self, command: str) -> None:
        group = typer.main.get_command(app)
        assert isinstance(group, TyperGroup)
        params = group.commands[command].params
        options = [param for param in params if isinstance(param, TyperOption)]
        assert "--json" in {name for option in options for name in option.opts}
        unexplained = [option.opts[0] for option in options if not (option.help or "").strip()]
        assert unexplained == []

    def test_an_unknown_option_is_exit_2(self, gridweave: Invoke) -> None:
        assert gridweave("jobs", "--nope").exit_code == int(ExitCode.USAGE) == 2


class TestArguments:
    def test_json_literals_else_strings_and_keywords(self) -> None:
        args, kwargs = parse_arguments(
            ["7", "2.5", "true", "null", '"quoted"', "[1, 2]", '{"a": 1}', "plain", "k=v", "n=3"]
        )
        assert args == [7, 2.5, True, None, "quoted", [1, 2], {"a": 1}, "plain"]
        assert kwargs == {"k": "v", "n": 3}

    def test_an_equals_sign_that_is_not_a_keyword_stays_positional(self) -> None:
        assert parse_arguments(["a b=c", "=x", "x==1"]) == (["a b=c", "=x"], {"x": "=1"})


class TestLoader:
    def test_the_function_travels_by_value(self, tmp_path: Path) -> None:
        source = tmp_path / "user_code.py"
        source.write_text(
            textwrap.dedent(
                """
                import gridweave as gw
                FACTOR = 6

                @gw.function(vram="1GiB")
                def times(x):
                    return x * FACTOR
                """
            )
        )
        found = load_function(f"{source}::times")
        assert isinstance(found, gw.Function)
        pickled = cloudpickle.dumps(found.fn)
        # A fresh interpreter that cannot import the file still calls it.
        script = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())(7))"
        ran = subprocess.run(
            [sys.executable, "-c", script],
            input=pickled,
            capture_output=True,
            cwd=os.sep,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr.decode()
        assert ran.stdout.decode().strip() == "42"

    def test_an_import_error_names_the_line(
        self, tmp_path: Path, gridweave: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        source = tmp_path / "broken.py"
        source.write_text("x = 1\nraise RuntimeError('boom')\n")
        monkeypatch.setenv("GRIDWEAVE_API_KEY", "gw_live_x_y")
        result = gridweave("run", f"{source}::f")
        assert result.exit_code == ExitCode.FAILED
        assert "RuntimeError: boom" in result.stderr and f"{source}:2" in result.stderr
        assert "Traceback" not in result.output

    def test_a_missing_separator_is_a_usage_error(self) -> None:
        with pytest.raises(typer.BadParameter):
            load_function("just_a_file.py")


class TestUpPrintout:
    def test_it_says_where_kubectl_and_the_kubeconfig_are_with_a_command_to_paste(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        kubectl = tmp_path / "bin dir" / "kubectl"
        started = Started(
            state_dir=tmp_path,
            urls={"platform": "http://127.0.0.1:8100"},
            kubeconfig=tmp_path / "kubeapi" / "admin.kubeconfig",
            admin_api_key=None,
            log_dir=tmp_path / "logs",
            kubectl=kubectl,
        )
        up_module._print_started(started, config_written=False)
        err = capsys.readouterr().err
        assert str(kubectl) in err and str(started.kubeconfig) in err
        command = up_module.kubectl_command(started)
        assert command in err.splitlines()  # on a line of its own, never wrapped
        assert shlex.split(command) == [
            f"KUBECONFIG={started.kubeconfig}",
            str(kubectl),
            "-n",
            "gridweave",
            "get",
            "gridweavejobs,gridweaveendpoints",
        ]


class TestConfigWriter:
    def test_round_trip_of_any_text_and_a_private_file(self, clean_configuration: Path) -> None:
        clean_configuration.parent.mkdir(parents=True)
        clean_configuration.write_text('url = "old"\n')
        clean_configuration.chmod(0o644)
        odd = 'gw_live_"quoted"\\back\u00e9\U0001f600\x7f\ttab\n'
        assert gw.write_config(url="http://h:1/", api_key=odd) == clean_configuration
        assert gw.current_config() == gw.Config(url="http://h:1", api_key=odd)
        assert stat.S_IMODE(clean_configuration.stat().st_mode) == 0o600
        assert [p.name for p in clean_configuration.parent.iterdir()] == ["config.toml"]


class TestDrawing:
    def test_nodes_mark_simulated_and_cordoned_gpus(self) -> None:
        holder = {
            "kind": "endpoint",
            "name": "ep-1a2b",
            "display_name": "chat",
            "user_id": "u1",
            "owner": "u1",
            "vram_mb": 12288,
        }
        inventory = InventoryResponse.model_validate(
            {
                "nodes": [
                    {
                        "name": "box",
                        "ready": True,
                        "gpus": [
                            _gpu(0, held=12288, simulated=True, allocations=[holder]),
                            _gpu(1, held=0, schedulable=False, used=3072),
                        ],
                    },
                    {"name": "gone", "ready": False, "gpus": []},
                ]
            }
        )
        console = Console(width=160, record=True, color_system=None)
        console.print(nodes_table(inventory, console))
        rows = console.export_text().splitlines()
        assert "simulated" in rows[1] and "cordoned" not in rows[1]
        assert "cordoned" in rows[2] and "simulated" not in rows[2]
        assert "12 GiB / 16 GiB" in rows[1] and "4 GiB" in rows[1]
        assert "endpoint chat (12 GiB)" in rows[1] and "ep-1a2b" not in rows[1]
        assert rows[0].split().count("use") == 1  # the "in use" column
        assert "3 GiB" in rows[2]  # measured in use
        assert "3 GiB" not in rows[1]  # not measured: shown as "-", never a number
        assert "gone (not ready)" in rows[3] and "no GPUs" in rows[3]

    def test_an_endpoints_phase_carries_why_it_waits_or_stopped(self) -> None:
        def view(phase: str, reason: str | None) -> EndpointResponse:
            return EndpointResponse.model_validate(
                {
                    "name": "chat",
                    "endpoint_id": "chat-0123456789",
                    "path": "/v1/endpoints/chat",
                    "mode": "vllm",
                    "model": None,
                    "phase": phase,
                    "reason": reason,
                    "message": None,
                    "node": None,
                    "gpu_indices": [],
                    "ready_replicas": 0,
                    "health": "Unknown",
                    "vram_mb": 4096,
                    "gpu_count": 1,
                    "vendor": "nvidia",
                    "min_replicas": 0,
                    "max_replicas": 1,
                    "idle_seconds": 300,
                    "created_at": None,
                    "started_at": None,
                    "stopped_at": None,
                    "billed_seconds": 0,
                }
            )

        assert endpoint_state(view("Pending", "RealGpuBusy")) == "Pending (RealGpuBusy)"
        assert endpoint_state(view("Stopped", "OutOfCredits")) == "Stopped (OutOfCredits)"
        assert endpoint_state(view("Pending", None)) == "Pending"
        assert endpoint_state(view("Running", "Idle")) == "Running"
        woken = view("Stopped", "Idle").model_copy(update={"waking_reason": "WaitingForGpu"})
        assert endpoint_state(woken) == "Stopped (Idle), waking: WaitingForGpu"

    def test_nodes_fit_80_columns_leaving_out_the_bar_first(self) -> None:
        holders = [
            {
                "kind": "job",
                "name": f"job-0123456789abcdef012{n}",
                "display_name": "a_rather_long_function_name",
                "user_id": "u1",
                "owner": "u1",
                "vram_mb": 4096,
            }
            for n in range(3)
        ]
        gpu = _gpu(0, held=12288, simulated=True, allocations=holders)
        gpu["model"] = "NVIDIA GeForce RTX 4090 Laptop GPU"
        inventory = InventoryResponse.model_validate(
            {"nodes": [{"name": "workstation-17", "ready": True, "gpus": [gpu]}]}
        )
        wide = Console(width=300, record=True, color_system=None)
        wide.print(nodes_table(inventory, wide))
        text = wide.export_text()
        assert "█" in text and "RTX 4090 Laptop GPU" in text
        narrow = Console(width=80, record=True, color_system=None)
        narrow.print(nodes_table(inventory, narrow))
        lines = narrow.export_text().splitlines()
        assert len(lines) == 2 and all(len(line) <= 80 for line in lines), lines
        assert "█" not in lines[1]  # the bar went first
        assert "workstation-17" in lines[1] and "12 GiB / 16 GiB" in lines[1]
        assert "simulated" in lines[1] and "job a_rather" in lines[1] and "…" in lines[1]

    def test_nodes_free_cpu_and_memory_fit_80_columns(self) -> None:
        inventory = InventoryResponse.model_validate(
            {
                "nodes": [
                    {
                        "name": "workstation-with-a-long-name-17",
                        "ready": False,
                        "gpus": [_gpu(0, held=12288), _gpu(1, held=0)],
                        "cpu_millis": 64000,
                        "cpu_held_millis": 2500,
                        "cpu_free_millis": 61500,
                        "memory_mb": 524288,
                        "memory_held_mb": 1536,
                        "memory_free_mb": 522752,
                    },
                    {"name": "bare", "ready": True, "gpus": [_gpu(0, held=0)]},
                ]
            }
        )
        console = Console(width=80, record=True, color_system=None)
        console.print(capacity_table(inventory, console))
        header, first, second = console.export_text().splitlines()
        assert all(len(line) <= 80 for line in (header, first, second))
        assert "workstation-with-a-long-name-17 (not ready)" in first  # never cut
        assert "61.5 / 64" in first and "510.5 GiB / 512 GiB" in first
        assert second.split()[:3] == ["bare", "-", "-"]  # declares none: no limit
        wide = Console(width=120, record=True, color_system=None)
        wide.print(capacity_table(inventory, wide))
        header, first, _ = wide.export_text().splitlines()
        assert "CPU free (cores)" in header and first.rstrip().endswith("1 / 2")
        assert [memory_text(mib) for mib in (1536, 8192, 12_800, 522_752)] == [
            "1536 MiB",
            "8 GiB",
            "12.5 GiB",
            "510.5 GiB",
        ]

    def test_a_fitted_table_never_cuts_an_id(self) -> None:
        columns = (
            Column("job"),
            Column("function", min_width=8),
            Column("extra", drop=1),
            Column("phase"),
        )
        rows = [[f"job-{n:020d}", "f" * 60, "x" * 30, "Completed"] for n in range(3)]
        console = Console(width=60, record=True, color_system=None)
        console.print(fitted_table(console, columns, rows))
        header, *lines = console.export_text().splitlines()
        assert header.split() == ["job", "function", "phase"]  # "extra" left out
        assert [line.split()[0] for line in lines] == [f"job-{n:020d}" for n in range(3)]
        assert all(len(line) <= 60 and line.endswith("Completed") for line in lines)
        console = Console(width=200, record=True, color_system=None)
        console.print(fitted_table(console, columns, rows))
        text = console.export_text()
        assert "f" * 60 in text and "x" * 30 in text

    def test_endpoint_logs_each_replica_then_its_streams(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        read = EndpointLogsResponse.model_validate(
            {
                "lines": 200,
                "replicas": [
                    {
                        "replica": "r-new",
                        "state": "ALIVE",
                        "started_at": None,
                        "streams": [
                            {
                                "stream": "stdout",
                                "lines": ["ready", "served /greet"],
                                "truncated": True,
                            },
                            {"stream": "stderr", "lines": ["a warning"], "truncated": False},
                        ],
                    },
                    {"replica": "r-old", "state": "DEAD", "streams": [], "error": "node gone"},
                ],
            }
        )
        print_replica_logs("chat", read)
        out, err = capsys.readouterr()
        assert out == "ready\nserved /greet\n"
        assert err.index("replica r-new (ALIVE)") < err.index("older stdout lines left out")
        assert err.index("a warning") < err.index("replica r-old (DEAD)") < err.index("node gone")

    def test_bars(self) -> None:
        assert vram_bar(12, 16, width=8).plain == "██████░░"
        assert vram_bar(1, 80_000, width=8).plain == "█░░░░░░░"  # some held always shows
        assert vram_bar(0, 16, width=4).plain == "░░░░"

    def test_units(self) -> None:
        assert credits_text(1_500_000) == "1.500000" and credits_text(90) == "0.000090"
        assert credits_text(12_345_678_000_001) == "12,345,678.000001"
        assert (mib_text(8192), mib_text(1536)) == ("8 GiB", "1536 MiB")
        now = datetime(2026, 1, 2, tzinfo=UTC)
        ages = [age(now - timedelta(seconds=s), now=now) for s in (5, 300, 7200, 200_000)]
        assert ages == ["5s", "5m", "2h", "2d"] and age(None) == "-"


def _gpu(
    index: int,
    *,
    held: int,
    simulated: bool = False,
    schedulable: bool = True,
    used: int | None = None,
    allocations: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    return {
        "used_mb": used,
        "allocations": allocations or [],
        "index": index,
        "vendor": "nvidia",
        "model": "Test GPU",
        "vram_mb": 16384,
        "held_mb": held,
        "free_mb": 16384 - held,
        "schedulable": schedulable,
        "simulated": simulated,
    }
