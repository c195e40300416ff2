"""Sizes and durations as ``@gw.function`` takes them, and the errors naming the argument."""

from __future__ import annotations

import pytest

import gridweave as gw


class TestParseSize:
    @pytest.mark.parametrize(
        ("text", "mib"),
        [
            ("16GB", 15259),  # 16e9 bytes, rounded up to whole MiB
            ("16GiB", 16384),
            ("512MiB", 512),
            ("16000MB", 15259),
            ("1.5 gib", 1536),
            ("1KB", 1),
            (8192, 8192),
        ],
    )
    def test_units(self, text: str | int, mib: int) -> None:
        assert gw.parse_size(text) == mib

    @pytest.mark.parametrize("text", ["16", "16 bananas", "GB", "-1GB", "0MB", 0, ""])
    def test_refusals_name_the_argument(self, text: str | int) -> None:
        with pytest.raises(gw.ConfigurationError, match=r"^vram="):
            gw.parse_size(text, argument="vram")


class TestParseDuration:
    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("90s", 90), ("10m", 600), ("1h", 3600), ("1.5m", 90), ("0.2s", 1), (45, 45), ("30", 30)],
    )
    def test_units(self, text: str | int, seconds: int) -> None:
        assert gw.parse_duration(text) == seconds

    @pytest.mark.parametrize("text", ["10 minutes", "m", "0s", -5, "1w"])
    def test_refusals_name_the_argument(self, text: str | int) -> None:
        with pytest.raises(gw.ConfigurationError, match=r"^timeout="):
            gw.parse_duration(text, argument="timeout")


class TestDecoratorArguments:
    def test_parsed_once_at_decoration(self) -> None:
        @gw.function(vram="16GiB", vendor="nvidia", gpus=2, timeout="90s", retries=1)
        def double(x: int) -> int:
            return 2 * x

        resources = double.resources
        assert (resources.vram_mb, resources.gpu_count, resources.vendor) == (16384, 2, "nvidia")
        assert (resources.timeout_seconds, resources.max_retries) == (90, 1)
        assert double(4) == 8  # a plain call runs here

    @pytest.mark.parametrize(
        ("arguments", "named"),
        [
            ({"vram": "big"}, "vram="),
            ({"vram": "1GB", "vendor": "intel"}, "vendor="),
            ({"vram": "1GB", "gpus": 0}, "gpus="),
            ({"vram": "1GB", "timeout": "soon"}, "timeout="),
            ({"vram": "1GB", "retries": -1}, "retries="),
            ({"vram": "1GB", "pip": "numpy"}, "pip="),  # a string, not a list
            ({"vram": "1GB", "pip": ["--index-url=https://evil.example/simple"]}, "pip="),
            ({"vram": "1GB", "pip": ["-e ."]}, "pip="),
            ({"vram": "1GB", "pip": ["./local/package"]}, "pip="),
            ({"vram": "1GB", "pip": ["pkg @ https://example.com/pkg.whl"]}, "pip="),
            ({"vram": "1GB", "pip": ["six\n--index-url http://evil.example"]}, "pip="),
            ({"vram": "1GB", "pip": ["numpy=="]}, "pip="),
            ({"vram": "1GB", "pip": ["six"] * 65}, "pip="),
            ({"vram": "1GB", "gpu_model": ""}, "gpu_model="),
            ({"vram": "1GB", "gpu_model": ["A100", "A100"]}, "gpu_model="),
            ({"vram": "1GB", "gpu_model": [f"m{i}" for i in range(9)]}, "gpu_model="),
            ({"vram": "1GB", "gpu_model": 100}, "gpu_model="),
        ],
    )
    def test_a_bad_argument_is_named(self, arguments: dict[str, object], named: str) -> None:
        with pytest.raises(gw.ConfigurationError, match=f"^{named}"):
            gw.function(**arguments)  # type: ignore[arg-type]

    def test_gpu_model_takes_one_name_or_several(self) -> None:
        assert gw.function(vram="1GB", gpu_model="A100")(len).resources.gpu_models == ("A100",)
        several = gw.function(vram="1GB", gpu_model=["A100", "H100 80GB"])(len)
        assert several.resources.gpu_models == ("A100", "H100 80GB")
        assert gw.function(vram="1GB")(len).resources.gpu_models == ()

    def test_pip_requirements_are_kept_as_given(self) -> None:
        requirements = ["numpy==2.1.3", "requests[socks]>=2; python_version < '3.13'"]

        @gw.function(vram="1GB", pip=requirements)
        def plain() -> int:
            return 1

        assert plain.resources.pip == tuple(requirements)
        assert gw.function(vram="1GB")(plain.fn).resources.pip == ()


class TestEndpointPip:
    def test_a_class_keeps_its_requirements(self) -> None:
        class Served:
            def call(self) -> int:
                return 1

        assert gw.endpoint(vram="1GB", pip=["numpy==2.1.3"])(Served).pip == ("numpy==2.1.3",)
        assert gw.endpoint(vram="1GB")(Served).pip == ()

    @pytest.mark.parametrize(
        "pip", ["numpy", ["--index-url=https://evil.example/simple"], ["six"] * 65]
    )
    def test_a_bad_requirement_is_named(self, pip: object) -> None:
        with pytest.raises(gw.ConfigurationError, match="^pip="):
            gw.endpoint(vram="1GB", pip=pip)  # type: ignore[arg-type]

    def test_a_model_takes_no_pip_before_any_request(self) -> None:
        with pytest.raises(gw.ConfigurationError, match="^pip=.*node's packages"):
            gw.deploy("chat", model="gpt2", pip=["numpy"])
