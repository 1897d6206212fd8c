"""``nebula render``: output, exit codes and messages, as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reconciler.cli.main import main
from reconciler.cli.rendering import slugify
from renderers.manifests import Loader
from tests.renderers import samples


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop-repo" / "nebula.toml"
    path.parent.mkdir()
    path.write_text(samples.SHOP, encoding="utf-8")
    return path


def _documents(text: str) -> list[dict[str, object]]:
    return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]


def _refs(documents: list[dict[str, object]]) -> list[str]:
    return [f"{d['kind']}/{d['metadata']['name']}" for d in documents]  # type: ignore[index]


def test_render_prints_every_object_of_the_environment(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["render", str(shop), "--env", "staging"])

    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    documents = _documents(out)
    assert _refs(documents)[:2] == ["Namespace/shop-staging", "Secret/nebula-secrets"]
    assert len(documents) == 19
    # api runs two web replicas in staging: a budget keeps one up through a node drain.
    assert "PodDisruptionBudget/api-r1" in _refs(documents)
    assert "<secret SEARCH_KEY: set on the server with nebula secret set>" in out


def test_render_one_service_at_a_release_number(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["render", str(shop), "--env", "production", "--service", "search", "--release", "12"]
    )

    out, _ = capsys.readouterr()
    assert code == 0
    assert _refs(_documents(out)) == [
        "ConfigMap/search-r12-vars",
        "Deployment/search-r12",
        "Service/search-r12",
        "Service/search",
    ]
    assert all(d["metadata"]["namespace"] == "shop-production" for d in _documents(out))  # type: ignore[index]


def test_render_a_database(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", str(shop), "--env", "staging", "--service", "db"])

    out, _ = capsys.readouterr()
    assert code == 0
    assert _refs(_documents(out)) == ["Secret/db-credentials", "Service/db", "StatefulSet/db"]
    assert "<generated on the server>" in out


def test_project_slug_from_the_option_the_name_or_the_directory(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["render", str(shop), "--env", "staging", "--project", "store"])
    assert _documents(capsys.readouterr().out)[0]["metadata"] == {
        "name": "store-staging",
        "labels": {
            "app.kubernetes.io/managed-by": "nebula",
            "nebula.dev/project": "store",
            "nebula.dev/environment": "staging",
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/audit": "baseline",
            "pod-security.kubernetes.io/warn": "baseline",
        },
    }

    shop.write_text(samples.SHOP.replace('name = "Shop"\n', ""), encoding="utf-8")
    main(["render", str(shop), "--env", "staging"])
    assert _documents(capsys.readouterr().out)[0]["metadata"]["name"] == "shop-repo-staging"  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Shop", "shop"),
        ("My Shop!", "my-shop"),
        ("Café Ünïcode", "cafe-unicode"),
        ("42 things", "p-42-things"),
        ("", "p"),
    ],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_kube_version_1_20_renders_batch_v1beta1_cronjobs(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["render", str(shop), "--env", "staging", "--service", "api", "--kube-version", "1.20"]
    )

    documents = _documents(capsys.readouterr().out)
    assert code == 0
    assert [d["apiVersion"] for d in documents if d["kind"] == "CronJob"] == ["batch/v1beta1"]


def test_out_writes_one_file_per_object_in_apply_order(
    shop: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "manifests"

    code = main(["render", str(shop), "--env", "staging", "--out", str(out_dir)])

    assert code == 0
    assert capsys.readouterr().out == f"wrote 19 objects to {out_dir}\n"
    files = sorted(p.name for p in out_dir.iterdir())
    assert files[:3] == [
        "001-namespace-shop-staging.yaml",
        "002-secret-nebula-secrets.yaml",
        "003-secret-db-credentials.yaml",
    ]
    assert files[-1] == "019-service-api.yaml"
    assert yaml.load((out_dir / files[-1]).read_text(), Loader=Loader)["kind"] == "Service"


def test_an_invalid_file_lists_its_problems_with_locations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nebula.toml"
    path.write_text(
        f'[environments.staging]\n[services.api]\nimage = "{samples.API_IMAGE}"\n'
        '[services.api.processes.web]\ntype = "http"\nsize = 3\n',
        encoding="utf-8",
    )

    code = main(["render", str(path), "--env", "staging"])

    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    lines = [line for line in err.splitlines() if not line.startswith("  hint:")]
    assert lines[-1] == f"{path}: 2 errors"
    assert all(line.startswith(f"{path}:") for line in lines)
    assert f"{path}:4:25: http process 'web' of service 'api' has no port" in lines
    assert f"{path}:6:1: unknown key 'size' in [services.api.processes.web]" in lines


def test_an_unknown_environment_or_service_is_a_clear_error(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", str(shop), "--env", "qa"]) == 1
    assert capsys.readouterr() == (
        "",
        f"error: {shop} has no environment 'qa' (declared: staging, production)\n",
    )

    assert main(["render", str(shop), "--env", "staging", "--service", "nope"]) == 1
    assert capsys.readouterr() == (
        "",
        f"error: {shop} has no service or database 'nope' (known: db, search, api)\n",
    )


def test_a_missing_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["render", str(tmp_path / "nope.toml"), "--env", "staging"])

    assert caught.value.code == 1
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.toml'}: no such file\n"


@pytest.mark.parametrize(
    "args",
    [
        ["render"],
        ["render", "x.toml"],
        ["render", "x.toml", "--env", "s", "--release", "0"],
        ["render", "x.toml", "--env", "s", "--release", "two"],
        ["render", "x.toml", "--env", "s", "--kube-version", "1.19"],
        ["render", "x.toml", "--env", "s", "--project", "Not A Slug"],
    ],
)
def test_bad_usage_exits_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)

    assert caught.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) <= 2 and lines[0].startswith("error: ")
    assert lines[1:] == [] or lines[1].startswith("hint: ")


def test_the_nebula_command_renders(shop: Path) -> None:
    nebula = Path(sys.executable).parent / "nebula"
    command = [str(nebula)] if nebula.exists() else [sys.executable, "-m", "reconciler.cli.main"]

    result = subprocess.run(
        [*command, "render", str(shop), "--env", "staging", "--service", "api"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (result.returncode, result.stderr) == (0, "")
    assert _refs(_documents(result.stdout))[:2] == [
        "PersistentVolumeClaim/api-data",
        "ConfigMap/api-r1-vars",
    ]
