"""``gw.Image(...).pip_install(...)``: the image and its packages as one value, taken by
``@gw.function``, ``@gw.endpoint`` and ``gw.deploy`` exactly as ``image=`` and ``pip=``."""

from __future__ import annotations

import pytest

import gridweave as gw
from gridweave._endpoint import EndpointClass


def _double(x: int) -> int:
    return 2 * x


class TestImage:
    def test_pip_install_adds_in_order_and_leaves_the_image_as_it_was(self) -> None:
        base = gw.Image("alice/tools:v2")
        built = base.pip_install("numpy==2.1.3").pip_install("requests", "rich>=13")
        assert built == gw.Image("alice/tools:v2", ("numpy==2.1.3", "requests", "rich>=13"))
        assert base.packages == ()

    def test_a_function_takes_it_as_image_and_pip(self) -> None:
        image = gw.Image("alice/tools:v2").pip_install("numpy==2.1.3")
        remote = gw.function(vram="1GB", image=image, pip=["requests"])(_double)
        assert remote.resources.image == "alice/tools:v2"
        assert remote.resources.pip == ("numpy==2.1.3", "requests")  # the image's first
        same = gw.function(vram="1GB", image="alice/tools:v2", pip=["numpy==2.1.3", "requests"])
        assert same(_double).resources == remote.resources

    def test_without_a_name_it_is_the_nodes_default_image(self) -> None:
        remote = gw.function(vram="1GB", image=gw.Image().pip_install("numpy==2.1.3"))(_double)
        assert (remote.resources.image, remote.resources.pip) == (None, ("numpy==2.1.3",))

    def test_an_endpoint_class_takes_it(self) -> None:
        image = gw.Image("alice/server:v1").pip_install("spacy==3.8.2")

        @gw.endpoint(vram="2GB", image=image)
        class Tagger:
            def tag(self, text: str) -> str:
                return text

        assert isinstance(Tagger, EndpointClass)
        assert (Tagger.image, Tagger.pip) == ("alice/server:v1", ("spacy==3.8.2",))

    @pytest.mark.parametrize(
        "build",
        [
            lambda: gw.Image("https://registry.example/alice/tools:v2"),
            lambda: gw.Image("alice/tools:v2").pip_install("--index-url=https://evil"),
            lambda: gw.Image().pip_install("./local-dir"),
            lambda: gw.Image().pip_install(*[f"p{i}" for i in range(1000)]),
        ],
    )
    def test_a_bad_name_or_requirement_is_refused_at_once(self, build: object) -> None:
        with pytest.raises(gw.ConfigurationError):
            build()  # type: ignore[operator]

    def test_deploy_needs_the_images_name(self) -> None:
        with pytest.raises(gw.ConfigurationError, match="by its name"):
            gw.deploy("server", image=gw.Image().pip_install("numpy==2.1.3"), vram="1GB")
