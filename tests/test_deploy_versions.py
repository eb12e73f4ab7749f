"""The versions the deploy files name agree with each other and with what is installed: the
Flink images (docker compose and Kubernetes) are one Flink minor that Beam's Flink runner is
published for (`FlinkRunnerOptions.PUBLISHED_FLINK_VERSIONS`), the job server and the SDK
worker image are this Beam, the SDK image this Python; the Dask pins are the installed Dask.
A Flink 1.18 image, or a Beam bump that drops the Flink minor, fails here instead of at the
first submit on a cluster.
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import version
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _flink_minor(image: str) -> str:
    """`flink:1.19-scala_2.12-java11` -> 1.19."""
    match = re.fullmatch(r"flink:(\d+\.\d+)(?:[.-].*)?", image)
    assert match, image
    return match.group(1)


def _job_server(image: str) -> tuple[str, str]:
    """`apache/beam_flink1.19_job_server:2.77.0` -> (1.19, 2.77.0)."""
    match = re.fullmatch(r"apache/beam_flink(\d+\.\d+)_job_server:(\S+)", image)
    assert match, image
    return match.group(1), match.group(2)


def _compose() -> dict[str, dict[str, str]]:
    loaded = yaml.safe_load((DEPLOY / "flink" / "docker-compose.yml").read_text())
    services: dict[str, dict[str, str]] = loaded["services"]
    return services


def _k8s(name: str) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all((DEPLOY / "flink" / "k8s" / name).read_text()) if d]


def _images(document: object) -> list[str]:
    """Every `image:` value anywhere in a parsed YAML document."""
    if isinstance(document, dict):
        found = [v for k, v in document.items() if k == "image" and isinstance(v, str)]
        return found + [i for v in document.values() for i in _images(v)]
    if isinstance(document, list):
        return [i for v in document for i in _images(v)]
    return []


def test_the_flink_images_are_one_minor_beam_publishes_a_runner_for() -> None:
    from apache_beam.options.pipeline_options import FlinkRunnerOptions

    published = FlinkRunnerOptions.PUBLISHED_FLINK_VERSIONS
    services = _compose()
    flink = {
        _flink_minor(s["image"]) for n, s in services.items() if n in ("jobmanager", "taskmanager")
    }
    session = [i for d in _k8s("flink-session.yaml") for i in _images(d) if i.startswith("flink:")]
    flink |= {_flink_minor(i) for i in session}
    servers = [services["jobserver"]["image"]]
    servers += [i for d in _k8s("jobserver.yaml") for i in _images(d) if "job_server" in i]
    minors = {_job_server(i)[0] for i in servers}
    assert len(flink) == 1 and flink == minors, (flink, minors)
    assert flink <= set(published), f"Flink {flink} is not in Beam's {published}"
    (deployment,) = [d for d in _k8s("flink-session.yaml") if d.get("kind") == "FlinkDeployment"]
    spec = deployment["spec"]
    assert isinstance(spec, dict)
    assert spec["flinkVersion"] == "v" + next(iter(flink)).replace(".", "_")


def test_the_job_server_and_sdk_image_are_this_beam_and_python() -> None:
    beam = version("apache-beam")
    servers = [_compose()["jobserver"]["image"]]
    servers += [i for d in _k8s("jobserver.yaml") for i in _images(d) if "job_server" in i]
    assert {_job_server(i)[1] for i in servers} == {beam}
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = re.search(r"^FROM (\S+)", (DEPLOY / "flink" / "Dockerfile.worker").read_text(), re.M)
    assert base and base.group(1) == f"apache/beam_python{python}_sdk:{beam}"


def test_the_dask_pins_are_the_installed_dask() -> None:
    """The `dask` extra pins what tests/test_dask_runner.py ran (workers must match the
    driver), and deploy/dask/README.md names the same versions."""
    text = PYPROJECT.read_text()
    readme = (DEPLOY / "dask" / "README.md").read_text()
    for package in ("dask", "distributed"):
        assert f'"{package}=={version(package)}"' in text, package
        assert version(package) in readme, package
    assert f'"dask-jobqueue=={version("dask-jobqueue")}"' in text
    assert version("dask-jobqueue") in readme
