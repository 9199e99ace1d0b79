"""Version discipline: SemVer precedence, the base a change is compared with, and the ct-style bump check,
on small throwaway git repositories and on a clone of this repository (never on the working tree itself)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from dlcharts.release.changes import check_version_bumps
from dlcharts.release.cli import main as release_main
from dlcharts.release.semver import InvalidVersion, Version
from dlcharts.utils.git import GitError, resolve_base
from tests.support import CHARTS, ROOT

GIT_IDENTITY = ["-c", "user.name=dl-charts tests", "-c", "user.email=tests@dl-charts.invalid", "-c",
                "commit.gpgsign=false", "-c", "init.defaultBranch=main"]  # fmt: skip


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *GIT_IDENTITY, "-C", str(repo), *args], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def write_chart(charts: Path, name: str, version: str, deps: dict[str, str] | None = None) -> None:
    meta: dict[str, object] = {"apiVersion": "v2", "name": name, "version": version}
    if deps:
        meta["dependencies"] = [{"name": d, "version": v, "repository": f"file://../{d}"} for d, v in deps.items()]
    (charts / name / "templates").mkdir(parents=True, exist_ok=True)
    (charts / name / "Chart.yaml").write_text(yaml.safe_dump(meta))
    (charts / name / "values.yaml").write_text("replicas: 1\n")


def set_version(charts: Path, name: str, version: str, dep_version: str | None = None) -> None:
    path = charts / name / "Chart.yaml"
    meta = yaml.safe_load(path.read_text())
    meta["version"] = version
    if dep_version is not None:
        meta["dependencies"][0]["version"] = dep_version
    path.write_text(yaml.safe_dump(meta))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on main with a library chart `lib` and `app` depending on it through file://."""
    git(tmp_path, "init", "-q")
    charts = tmp_path / "charts"
    write_chart(charts, "lib", "0.1.0")
    write_chart(charts, "app", "0.1.0", {"lib": "0.1.0"})
    write_chart(charts, "other", "1.0.0")
    commit_all(tmp_path, "initial charts")
    return tmp_path


# -- SemVer ------------------------------------------------------------------------------------------------


def test_semver_precedence_follows_the_spec():
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
               "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "1.10.0", "2.0.0"]  # fmt: skip
    parsed = [Version.parse(v) for v in ordered]
    assert parsed == sorted(reversed(parsed))
    assert all(a < b for a, b in zip(parsed, parsed[1:], strict=False))
    assert Version.parse("1.0.0+build.5") == Version.parse("1.0.0")
    assert str(Version.parse("1.2.3-rc.1+b7")) == "1.2.3-rc.1+b7"


@pytest.mark.parametrize("bad", ["v1.0.0", "1.0", "01.0.0", "1.0.0-", "1.0.0-01", "latest", ""])
def test_semver_refuses_what_helm_refuses(bad):
    with pytest.raises(InvalidVersion, match="not a semantic version"):
        Version.parse(bad)


# -- the base ----------------------------------------------------------------------------------------------


def test_an_empty_repository_makes_every_chart_new(tmp_path):
    git(tmp_path, "init", "-q")
    write_chart(tmp_path / "charts", "app", "0.1.0")
    report = check_version_bumps(tmp_path / "charts")
    assert report.ok and report.base.commit is None and "empty repository" in report.base.description


def test_first_commit_on_main_without_remote_compares_with_head(repo):
    head = git(repo, "rev-parse", "HEAD")
    assert resolve_base(repo).commit == head
    assert check_version_bumps(repo / "charts").ok
    (repo / "charts" / "app" / "values.yaml").write_text("replicas: 2\n")  # uncommitted
    report = check_version_bumps(repo / "charts")
    assert [p.chart for p in report.problems] == ["charts/app"]
    assert check_version_bumps(repo / "charts", committed_only=True).ok  # HEAD itself did not change


def test_without_main_or_remote_the_base_is_head(tmp_path):
    git(tmp_path, "init", "-q", "-b", "trunk")
    write_chart(tmp_path / "charts", "app", "0.1.0")
    commit_all(tmp_path, "one")
    base = resolve_base(tmp_path)
    assert base.commit == git(tmp_path, "rev-parse", "HEAD") and "pass --base" in base.description


def test_a_missing_base_ref_names_the_fix(repo):
    with pytest.raises(GitError, match=r"base ref 'origin/nope' does not exist.*git fetch origin main"):
        check_version_bumps(repo / "charts", base="origin/nope")


def test_the_base_is_the_merge_base_with_main(repo):
    fork = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "-c", "feature")
    set_version(repo / "charts", "other", "1.0.1")
    (repo / "charts" / "other" / "values.yaml").write_text("replicas: 3\n")
    commit_all(repo, "feature work")
    git(repo, "switch", "-q", "main")
    (repo / "charts" / "lib" / "values.yaml").write_text("x: 1\n")
    commit_all(repo, "main moves on")
    git(repo, "switch", "-q", "feature")
    report = check_version_bumps(repo / "charts")
    assert report.base.commit == fork and "merge-base of HEAD and main" in report.base.description
    assert report.ok and set(report.changed) == {"charts/other"}  # lib's change on main is not this branch's


# -- the bump check ----------------------------------------------------------------------------------------


def test_an_unbumped_change_fails_naming_chart_and_fix(repo):
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "charts" / "app" / "templates" / "job.yaml").write_text("kind: Job\n")
    commit_all(repo, "new template, no bump")
    report = check_version_bumps(repo / "charts")
    assert not report.ok
    (problem,) = report.problems
    assert problem.chart == "charts/app"
    assert "templates/job.yaml" in problem.message and "is still 0.1.0" in problem.message
    assert "raise `version` in charts/app/Chart.yaml (e.g. 0.1.1 for a fix, 0.2.0 for a feature)" in problem.message
    set_version(repo / "charts", "app", "0.1.1")
    commit_all(repo, "bump")
    assert check_version_bumps(repo / "charts").ok


def test_a_version_that_goes_down_fails(repo):
    set_version(repo / "charts", "other", "0.9.0")
    (problem,) = check_version_bumps(repo / "charts").problems
    assert problem.chart == "charts/other" and "went down from 1.0.0 to 0.9.0" in problem.message


def test_a_prerelease_of_the_same_version_is_not_a_bump(repo):
    set_version(repo / "charts", "other", "1.0.0-rc.1")
    assert not check_version_bumps(repo / "charts").ok
    set_version(repo / "charts", "other", "1.0.1-rc.1")
    assert check_version_bumps(repo / "charts").ok


def test_a_library_change_requires_bumping_every_dependent(repo):
    (repo / "charts" / "lib" / "templates" / "_helpers.tpl").write_text('{{- define "lib.x" -}}{{- end -}}\n')
    set_version(repo / "charts", "lib", "0.2.0")
    report = check_version_bumps(repo / "charts")
    assert {p.chart for p in report.problems} == {"charts/app"}, report.render()
    assert any("vendors lib (file://), which changed" in p.message for p in report.problems)
    assert "asks for version 0.1.0, but lib is 0.2.0; set it to 0.2.0" in report.render()
    set_version(repo / "charts", "app", "0.1.1", dep_version="0.2.0")
    assert check_version_bumps(repo / "charts").ok


def test_new_and_deleted_charts_need_no_bump(repo):
    write_chart(repo / "charts", "fresh", "0.1.0")
    subprocess.run(["rm", "-r", str(repo / "charts" / "other")], check=True)
    report = check_version_bumps(repo / "charts")
    assert report.ok, report.render()
    assert any("fresh is new" in n for n in report.notes) and any("other was removed" in n for n in report.notes)


def test_ignored_files_do_not_count(repo):
    (repo / ".gitignore").write_text("charts/*/charts/\ncharts/*/Chart.lock\n")
    commit_all(repo, "ignore vendored dependencies")
    (repo / "charts" / "app" / "charts").mkdir()
    (repo / "charts" / "app" / "charts" / "lib-0.1.0.tgz").write_bytes(b"vendored")
    (repo / "charts" / "app" / "Chart.lock").write_text("generated: now\n")
    assert check_version_bumps(repo / "charts").ok


# -- this repository, as CI sees it ------------------------------------------------------------------------


def test_the_committed_tree_passes_against_its_base():
    report = check_version_bumps(CHARTS, committed_only=True)
    assert report.ok, report.render()


@pytest.fixture
def clone(tmp_path: Path) -> tuple[Path, str]:
    """A fresh clone of this repository's committed history (never its working tree) on a new branch, and the
    commit it starts from (passed as the base: a CI checkout may have no main branch to find)."""
    dest = tmp_path / "clone"
    proc = subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    git(dest, "switch", "-q", "-c", "change-without-bump")
    return dest, git(dest, "rev-parse", "HEAD")


def test_an_unbumped_chart_change_in_a_clone_fails_the_cli(clone, capsys):
    clone, start = clone
    values = clone / "charts" / "pytorch-dist" / "values.yaml"
    values.write_text(values.read_text() + "# a change that ships in the package\n")
    commit_all(clone, "change pytorch-dist without a version bump")
    assert release_main(["release-check", str(clone / "charts"), "--base", start, "--versions-only"]) == 1
    out = capsys.readouterr().out
    assert "changed: charts/pytorch-dist (values.yaml)" in out
    assert "FAIL charts/pytorch-dist: its files changed since" in out
    assert "raise `version` in charts/pytorch-dist/Chart.yaml" in out
    assert "FAIL charts/tensorflow-dist" not in out


def test_a_dl_common_change_in_a_clone_needs_every_dependent_bumped(clone):
    clone, start = clone
    helpers = clone / "charts" / "dl-common" / "templates" / "_names.tpl"
    helpers.write_text(helpers.read_text() + "{{/* a comment, still a new package */}}\n")
    commit_all(clone, "touch dl-common")
    report = check_version_bumps(clone / "charts", base=start)
    dependents = {p.parent.name for p in (clone / "charts").glob("*/Chart.yaml")} - {"dl-common"}
    assert {p.chart for p in report.problems} == {"charts/dl-common"} | {f"charts/{d}" for d in dependents}
