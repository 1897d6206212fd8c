"""``nebula import compose FILE [--out PATH] [--image SERVICE=REF ...]`` as a user runs it:
what is printed where, what is written, and the exit code (0 written, 1 nothing written)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reconciler.cli import main
from reconciler.model import validation

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "compose"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of fixtures/compose as the current folder (named ``shop``: the project slug)."""
    folder = tmp_path / "shop"
    shutil.copytree(FIXTURES, folder)
    monkeypatch.chdir(folder)
    return folder


def nebula(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``nebula ARGS`` as the console script runs it (a ``SystemExit`` is its exit code)."""
    try:
        code = main.main(list(args))
    except SystemExit as exited:
        code = int(exited.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_file_is_written_with_the_notes_on_stderr(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = nebula(capsys, "import", "compose", "every-mapping.yml")
    assert code == 0
    assert out == "wrote nebula.toml: 4 services, 2 databases; 3 secrets to set (above)\n"
    assert err.splitlines()[0] == (
        "app.env:4:1: API_TOKEN looks like a secret: written as ${{ secret.API_TOKEN }}, its "
        "value not copied; set it with: nebula secret set shop staging API_TOKEN (and production)"
    )
    written = (work / "nebula.toml").read_text(encoding="utf-8")
    assert written == (FIXTURES / "every-mapping.toml").read_text(encoding="utf-8")
    validation.load(written)
    assert (work / "nebula.toml").stat().st_mode & 0o777 == 0o644


def test_out_dash_prints_the_file_and_nothing_else_on_stdout(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = nebula(capsys, "import", "compose", "every-mapping.yml", "--out", "-")
    assert code == 0
    assert out == (FIXTURES / "every-mapping.toml").read_text(encoding="utf-8")
    assert err.count("\n") == 10
    assert not (work / "nebula.toml").exists()


def test_an_existing_file_is_never_overwritten(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (work / "nebula.toml").write_text("# mine\n", encoding="utf-8")
    code, out, err = nebula(capsys, "import", "compose", "every-mapping.yml")
    assert (code, out) == (1, "")
    assert err == (
        "error: nebula.toml exists: nothing written\n"
        "hint: give another --out PATH (or - for standard output), or move it away first\n"
    )
    assert (work / "nebula.toml").read_text(encoding="utf-8") == "# mine\n"


def test_build_without_image_is_refused_and_nothing_is_written(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = nebula(capsys, "import", "compose", "refused/build-without-image.yml")
    assert (code, out) == (1, "")
    assert err == (
        "refused/build-without-image.yml:3:5: error: services.web has build: but no image; "
        "build and push it, then give it: --image web=REGISTRY/IMAGE:TAG\n"
        "refused/build-without-image.yml:6:5: error: services.worker has build: but no image; "
        "build and push it, then give it: --image worker=REGISTRY/IMAGE:TAG\n"
        "refused/build-without-image.yml:9:3: error: services.nothing has no image; add an "
        "image: key, or give it: --image nothing=REGISTRY/IMAGE:TAG\n"
        "error: nothing written: 3 problems in refused/build-without-image.yml\n"
        "hint: fix the lines above and import again\n"
    )
    assert not (work / "nebula.toml").exists()


def test_image_gives_the_image_of_a_service_compose_builds(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = "registry.example.com/shop/web@sha256:" + "a" * 64
    code, out, err = nebula(
        capsys, "import", "compose", "refused/build-without-image.yml", "--out", "-",
        "--image", f"web={ref}", "--image", "worker=registry.example.com/shop/web:1",
        "--image", "nothing=busybox:1.36",
    )  # fmt: skip
    assert code == 0, err
    project = validation.load(out)
    (config, _) = project.configs
    images = {s.name: s.image for s in config.services}
    assert images == {
        "web": ref,
        "worker": "registry.example.com/shop/web:1",
        "nothing": "busybox:1.36",
    }
    assert "refused/build-without-image.yml:3:5: services.web.build is not carried over" in err


def test_an_image_for_an_unknown_service_is_an_error(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = nebula(
        capsys, "import", "compose", "every-mapping.yml", "--image", "wbe=nginx:1"
    )
    assert (code, out) == (1, "")
    assert err == (
        "error: --image names 'wbe', which every-mapping.yml does not declare\n"
        "hint: services: api, search, migrate, mailer, db, cache\n"
    )


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("web", "argument --image: 'web' is not SERVICE=REF"),
        ("=nginx:1", "argument --image: '=nginx:1' is not SERVICE=REF"),
        ("web=", "argument --image: 'web=' is not SERVICE=REF"),
    ],
)
def test_a_malformed_image_is_bad_usage(
    work: Path, capsys: pytest.CaptureFixture[str], argument: str, message: str
) -> None:
    code, out, err = nebula(capsys, "import", "compose", "every-mapping.yml", "--image", argument)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {message} (e.g. web=registry.example.com/shop/web:1.4)")


def test_a_missing_compose_file(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = nebula(capsys, "import", "compose", "compose.yaml")
    assert (code, out, err) == (1, "", "error: compose.yaml: no such file\n")


def test_a_file_that_would_not_validate_is_not_written(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = nebula(capsys, "import", "compose", "refused/dependency-cycle.yml")
    assert (code, out) == (1, "")
    assert err == (
        "nebula.toml (not written): dependency cycle: api -> search -> api (break the cycle: "
        "remove one depends_on entry or ${{ svc.KEY }} reference along it)\n"
        "error: nothing written: what refused/dependency-cycle.yml says would not make a valid "
        "nebula.toml\n"
        "hint: change refused/dependency-cycle.yml as the lines above say, and import again\n"
    )
    assert not (work / "nebula.toml").exists()


def test_into_a_folder_that_does_not_exist(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = nebula(capsys, "import", "compose", "every-mapping.yml", "--out", "no/x.toml")
    assert (code, err) == (1, "error: no/x.toml: no such folder\nhint: create the folder first\n")
