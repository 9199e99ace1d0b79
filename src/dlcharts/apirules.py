"""The API server's own create validation, offline: the rules OpenAPI schemas cannot express.

Schemas say which fields exist and their types; the API server also checks, in code, the grammar of names, label
keys and quantities, requests against limits, port ranges and names, enums, volume mounts against volumes, probe
handlers, selectors against template labels and more (bench/results.md section 11 counts what schemas miss).
``native/k8s-validate`` (Go) links the pinned k8s.io/kubernetes, the version the embedded control plane runs, and runs
a create's validation for each built-in kind: decoding with defaults, then the kind's registry strategy
(``rest.BeforeCreate``: PrepareForCreate, Validate, object metadata). It leaves out admission (Pod Security,
quotas, webhooks) and whatever needs other objects.

``dlcharts.schemas.validate_object`` asks it about every object whose schema passed, when the render's Kubernetes
minor is one a validator is built for: the pinned version's (``k8s-validate``) or the oldest minor the charts
support (``k8s-validate@oldest``: the same source linked with k8s.io/kubernetes at OLDEST_KUBERNETES_VERSION).
Other minors have other rules: their objects get the schema pass only. Each runs as one long-lived process per
Python process. ci/build-control-plane.sh builds them into the tools folder beside the render servers (the pinned
one with ``make tools``, which the pytest plugin and ``dlcharts tools`` also run; the oldest with ``make
control-plane``, or ``ci/build-control-plane.sh oldest``); where one is not built or does not start, one line on
stderr says so and validation at its minor goes on with schemas alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from dlcharts import native
from dlcharts.errors import ToolchainError
from dlcharts.pins import KUBERNETES_VERSION, OLDEST, OLDEST_KUBERNETES_VERSION

NAME = native.VALIDATOR


def minor(kube_version: str) -> str:
    """ "v1.35.8" -> "1.35" """
    return ".".join(kube_version.lstrip("v").split(".")[:2])


#: the Kubernetes minor whose rules the default validator holds ("1.35")
MINOR = minor(KUBERNETES_VERSION)
#: each minor a validator can be built for, and that validator's name in ci/build-control-plane.sh
VALIDATORS = {MINOR: NAME, minor(OLDEST_KUBERNETES_VERSION): NAME + OLDEST}


class ApiRules:
    """One ``k8s-validate`` process: ``problems(body)`` is the API server's (field, message) errors for creating
    ``body`` (empty: it would be accepted); for a kind it has no strategy for (a custom resource) only the metadata
    is judged, and a fine one gives None."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._proc = subprocess.Popen(
            [str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._lock = threading.Lock()

    def problems(self, body: Any) -> list[tuple[str, str]] | None:
        return self.problems_of([body])[0]

    def update_problems(self, old: Any, new: Any) -> list[tuple[str, str]] | None:
        """The API server's errors for updating (a PUT) ``old``, the object as stored, to ``new``: the kind's update
        validation, immutable fields included; None for a kind it has no strategy for, as ``problems``."""
        return self.problems_of([{"old": old, "new": new}])[0]

    def problems_of(self, bodies: list[Any]) -> list[list[tuple[str, str]] | None]:
        """``problems`` of each body, in order: all are written (from a second thread) while the replies are read,
        so one round trip serves a whole render."""
        lines = [json.dumps(body, separators=(",", ":"), default=str).encode() + b"\n" for body in bodies]
        with self._lock:
            stdin: IO[bytes] = self._proc.stdin  # type: ignore[assignment]
            stdout: IO[bytes] = self._proc.stdout  # type: ignore[assignment]
            writer = threading.Thread(target=_write_all, args=(stdin, lines), daemon=True)
            writer.start()
            answers = [stdout.readline() for _ in lines]
            writer.join()
        out: list[list[tuple[str, str]] | None] = []
        for answer in answers:
            if not answer:
                raise ToolchainError(f"{self.path} stopped (exit {self._proc.poll()})")
            reply = json.loads(answer)
            errors = [(str(e.get("field", "")), str(e.get("message", ""))) for e in reply.get("errors") or []]
            # a kind without a strategy (a custom resource): its metadata only, None when that is fine
            out.append(errors if reply.get("known") or errors else None)
        return out

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def _write_all(stream: IO[bytes], lines: list[bytes]) -> None:
    for line in lines:
        stream.write(line)
    stream.flush()


_rules: dict[str, ApiRules | None] = {}
_lock = threading.Lock()


def rules(kube_version: str = KUBERNETES_VERSION) -> ApiRules | None:
    """The validator of ``kube_version``'s minor for this Python process, started on first use; None where no
    validator holds that minor's rules, or (said once on stderr) where it is not built or does not start."""
    name = VALIDATORS.get(minor(kube_version))
    if name is None:
        return None
    with _lock:
        if name not in _rules:
            checker: ApiRules | None = None
            try:
                checker = ApiRules(native.locate([name], build=False)[name])
            except (ToolchainError, OSError) as exc:
                print(
                    f"dlcharts: the API server's rules of Kubernetes {minor(kube_version)} are not checked offline "
                    f"({exc}); schemas only",
                    file=sys.stderr,
                )
            _rules[name] = checker
        return _rules[name]
