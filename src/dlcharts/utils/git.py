"""The git questions the harness asks: the repository a path is in, the base to compare a change with (as
chart-testing computes it), the files changed since, and a file as committed."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterable
from pathlib import Path

from dlcharts.errors import DLChartsError

DEFAULT_BASES = ("origin/main", "main")


class GitError(DLChartsError):
    """git is missing, the folder is not in a repository, or a ref does not exist."""


@dataclasses.dataclass(frozen=True)
class Base:
    """The commit charts are compared with. ``commit`` is None when the repository has no commit yet."""

    commit: str | None
    description: str


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git -C repo args``; with ``check``, a failure is a GitError with git's message."""
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False,
                              timeout=120)  # fmt: skip
    except FileNotFoundError:
        raise GitError(
            "git is not installed; the release checks and the upgrade tests need it (apt-get install -y git)"
        ) from None
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc


def repo_root(path: Path) -> Path:
    """The top folder of the git repository holding ``path``."""
    proc = git(path, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise GitError(f"{path} is not inside a git repository; the version check compares against git history")
    return Path(proc.stdout.strip())


def commit_of(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` names, or None."""
    proc = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def resolve_base(repo: Path, base: str | None = None) -> Base:
    """The commit to compare with: the merge-base of HEAD and ``base`` (default: origin/main, else main)."""
    head = commit_of(repo, "HEAD")
    if base is not None:
        commit = commit_of(repo, base)
        if commit is None:
            raise GitError(
                f"base ref {base!r} does not exist in {repo}; fetch it (e.g. `git fetch origin main`, or "
                "`fetch-depth: 0` in a CI checkout) or pass --base <branch, tag or commit>"
            )
        return _merge_base(repo, head, commit, base)
    for candidate in DEFAULT_BASES:
        commit = commit_of(repo, candidate)
        if commit is not None:
            return _merge_base(repo, head, commit, candidate)
    if head is not None:
        return Base(head, f"HEAD {head[:12]} (no {' or '.join(DEFAULT_BASES)} to compare with; pass --base)")
    return Base(None, "an empty repository (no commit yet: every chart is new)")


def _merge_base(repo: Path, head: str | None, commit: str, name: str) -> Base:
    if head is None:
        return Base(commit, f"{name} {commit[:12]}")
    proc = git(repo, "merge-base", head, commit, check=False)
    if proc.returncode != 0:  # unrelated histories: compare with the ref itself
        return Base(commit, f"{name} {commit[:12]} (no common ancestor with HEAD)")
    merge = proc.stdout.strip()
    if merge == commit:
        return Base(merge, f"{name} {merge[:12]}")
    return Base(merge, f"{merge[:12]}, the merge-base of HEAD and {name}")


def changed_files(repo: Path, base: Base, paths: Iterable[str], committed_only: bool = False) -> list[str]:
    """Repository-relative paths under ``paths`` that differ from the base."""
    if base.commit is None:
        return []
    spec = ["--", *paths]
    if committed_only:
        out = git(repo, "diff", "--name-only", "--no-renames", "-z", base.commit, "HEAD", *spec).stdout
    else:
        out = git(repo, "diff", "--name-only", "--no-renames", "-z", base.commit, *spec).stdout
        out += git(repo, "ls-files", "--others", "--exclude-standard", "-z", *spec).stdout
    return sorted({p for p in out.split("\0") if p})


def show(repo: Path, commit: str, path: str) -> str | None:
    """``path`` as committed at ``commit``, or None where it was not there."""
    proc = git(repo, "show", f"{commit}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None
