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
support (``k8s-validate@oldest``: the same source linked with k8s.io/kubernetes at OLDEST_KUBERNETES_VERSION). A
minor between those two (1.30 to 1.34) is judged by both (``bounds``): what both refuse at a field is an error, what
only one refuses a warning naming which (dlcharts.schemas.api_rule_findings); minors outside them get the schema
pass only. Each runs as one long-lived process per Python process. dlcharts.native builds them into the tools folder
beside the render servers (both with ``make tools`` or ``dlcharts tools``; the oldest also with ``make
control-plane``, or ``dlcharts cluster build oldest``); a platform wheel carries both. Where one is not available or
does not start, validation at its minor goes on with schemas alone and ``rules`` records the check as not run
(dlcharts.checks), which fails the run unless the author allows it; nothing is printed here.

Custom resources: ``ApiRules.use_crds`` hands the validator the CustomResourceDefinitions in force (dlcharts.schemas
sends the bundled ones and those of ``--crd``); it judges each as the API server judges its create, and from then on
creates a custom resource of one of them with the apiextensions server's own strategy: the CRD's OpenAPI schema,
x-kubernetes-list-type map/set keys and x-kubernetes-validations (CEL) rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from dlcharts import checks, native
from dlcharts.errors import ToolchainError
from dlcharts.findings import format_path
from dlcharts.pins import KUBERNETES_VERSION, OLDEST, OLDEST_KUBERNETES_VERSION
from dlcharts.utils.kubeversion import minor as kube_minor
from dlcharts.utils.kubeversion import minor_text

NAME = native.VALIDATOR


#: the Kubernetes minor whose rules the default validator holds ("1.35")
MINOR = minor_text(KUBERNETES_VERSION)
#: the oldest minor the charts support, whose rules the other validator holds ("1.29")
OLDEST_MINOR = minor_text(OLDEST_KUBERNETES_VERSION)
#: each minor a validator can be built for, and that validator's name in dlcharts.native's build table
VALIDATORS = {MINOR: NAME, OLDEST_MINOR: NAME + OLDEST}


def bounds(minor: str) -> tuple[str, str] | None:
    """(OLDEST_MINOR, MINOR) for a minor strictly between them, whose own rules no validator holds: its objects are
    judged by both (an object both refuse at a field, the API server of any minor between most likely refuses too:
    rules seldom come and go again); None for any other minor."""
    return (OLDEST_MINOR, MINOR) if kube_minor(OLDEST_MINOR) < kube_minor(minor) < kube_minor(MINOR) else None


class ApiRules:
    """One ``k8s-validate`` process: ``problems(body)`` is the API server's (field, message) errors for creating
    ``body`` (empty: it would be accepted); for a kind it has no strategy for (a custom resource of no CRD in force,
    see ``use_crds``) only the metadata is judged, and a fine one gives None."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._proc = subprocess.Popen(
            [str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._lock = threading.Lock()
        self._crds: Sequence[Any] | None = None  # the CRDs in force (the sequence last sent) and their verdicts
        self._crd_verdicts: dict[str, list[tuple[str, str]]] | None = {}

    def use_crds(self, crds: Sequence[Any]) -> dict[str, list[tuple[str, str]]] | None:
        """Put these CustomResourceDefinitions in force, in place of those before: each one's (field, message) errors
        by name ([]: valid, its custom resources are judged with its rules from now on; else the API server would
        refuse it and it is not registered). Sent only when ``crds`` is not the sequence sent last (keep one sequence
        per set of CRDs). None: this validator was built without custom resource support (their rules go unchecked).
        """
        with self._lock:
            if crds is self._crds:
                return self._crd_verdicts
            (reply,) = self._exchange([{"crds": list(crds)}])
            verdicts = {str(v.get("name")): _problems(v) for v in reply["crds"]} if "crds" in reply else None
            self._crds, self._crd_verdicts = crds, verdicts
            return verdicts

    def problems(self, body: Any) -> list[tuple[str, str]] | None:
        return self.problems_of([body])[0]

    def update_problems(self, old: Any, new: Any) -> list[tuple[str, str]] | None:
        """The API server's errors for updating (a PUT) ``old``, the object as stored, to ``new``: the kind's update
        validation, immutable fields included; None for a kind it has no strategy for, as ``problems``."""
        return self.problems_of([{"old": old, "new": new}])[0]

    def problems_of(self, bodies: list[Any]) -> list[list[tuple[str, str]] | None]:
        """``problems`` of each body, in order: all are written (from a second thread) while the replies are read,
        so one round trip serves a whole render."""
        with self._lock:
            replies = self._exchange(bodies)
        out: list[list[tuple[str, str]] | None] = []
        for reply in replies:
            errors = _problems(reply)
            # a kind without a strategy (a custom resource): its metadata only, None when that is fine
            out.append(errors if reply.get("known") or errors else None)
        return out

    def _exchange(self, requests: list[Any]) -> list[dict[str, Any]]:
        """Send ``requests`` (one JSON line each, written from a second thread while the replies are read, so one
        round trip serves a whole render) and return the decoded replies, in order; the caller holds the lock."""
        lines = [json.dumps(body, separators=(",", ":"), default=str).encode() + b"\n" for body in requests]
        stdin: IO[bytes] = self._proc.stdin  # type: ignore[assignment]
        stdout: IO[bytes] = self._proc.stdout  # type: ignore[assignment]
        writer = threading.Thread(target=_write_all, args=(stdin, lines), daemon=True)
        writer.start()
        answers = [stdout.readline() for _ in lines]
        writer.join()
        if not all(answers):
            raise ToolchainError(f"{self.path} stopped (exit {self._proc.poll()})")
        return [json.loads(answer) for answer in answers]

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def _problems(reply: dict[str, Any]) -> list[tuple[str, str]]:
    """A reply's (field, message) errors; a cause without a field (Go's ``<nil>`` path) names none."""
    errors = [(str(e.get("field", "")), str(e.get("message", ""))) for e in reply.get("errors") or []]
    return [("" if field == "<nil>" else field, message) for field, message in errors]


def _write_all(stream: IO[bytes], lines: list[bytes]) -> None:
    for line in lines:
        stream.write(line)
    stream.flush()


_rules: dict[str, ApiRules | None] = {}
_missing: dict[str, str] = {}  # validator name -> why it is not available in this install
_lock = threading.Lock()
#: what the validators check, as dlcharts.checks names it
WHAT = "the API server's rules"
#: the check id of an object that one of the two validators around a minor refuses and the other takes
BETWEEN = "api-rules-between"


def rules(kube_version: str = KUBERNETES_VERSION, judged: str = "") -> ApiRules | None:
    """The validator of ``kube_version``'s minor for this Python process, started on first use; None where no
    validator holds that minor's rules (outside ``bounds``, recorded as ``checks.schemas_only``: information), or
    where it is not available in this install: not in this wheel, not built in this checkout, or it does not start
    (recorded as ``checks.not_run`` with the reason and what to do, at the minor ``judged`` when one between
    ``bounds`` is: a run that had it fails unless the author allows it)."""
    version = minor_text(kube_version)
    name = VALIDATORS.get(version)
    if name is None:
        if bounds(version) is None:
            checks.schemas_only(version)
        return None
    with _lock:
        if name not in _rules:
            checker: ApiRules | None = None
            try:
                checker = ApiRules(native.locate([name], build=False)[name])
            except (ToolchainError, OSError) as exc:
                _missing[name] = str(exc)
            _rules[name] = checker
        if _rules[name] is None:
            checks.not_run(WHAT, judged or version, name, _missing.get(name, "not available"))
        return _rules[name]


def crd_rules_not_run(crd: str, kube_version: str, reason: str) -> None:
    """Record (dlcharts.checks) that the rules of CustomResourceDefinition ``crd`` that its JSON schema cannot say
    (x-kubernetes-validations, list-type map/set keys) were not checked at ``kube_version``'s minor, and why."""
    version = minor_text(kube_version)
    checks.not_run(f"the CEL and list-type rules of CRD {crd}", version, VALIDATORS.get(version, NAME), reason)


def unparsed_quantities(body: Any) -> list[str]:
    """The field paths of ``body`` whose value is not a Kubernetes quantity (resource.Quantity's grammar) where one
    is expected: a resources' requests and limits, a ResourceQuota's hard, a LimitRange's limits, an emptyDir's
    sizeLimit, a pod's overhead, a claim's requests. The validator's "quantities must match" error names no field
    (the object does not decode), so the finding names these."""
    found: list[str] = []

    def walk(node: Any, path: list[Any], parent: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, dict | list):
                    walk(value, [*path, key], str(key))
                elif (parent in _QUANTITY_MAPS or key in _QUANTITY_FIELDS) and not _is_quantity(value):
                    found.append(format_path([*path, key]))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, [*path, i], parent)

    walk(body, [], "")
    return found


# The API server's errors for a label value (k8s.io/apimachinery IsValidLabelValue, through ValidateLabels and
# ValidateLabelSelector): its length (63 bytes at 1.35, 63 characters at 1.29) and its grammar. Each quotes the value
# and names the whole map: metadata.labels, a selector's matchLabels, a pod template's labels as spec.template.labels
# (its metadata inlined).
_LABEL_VALUE_ERROR = re.compile(
    r'^Invalid value: ("(?:[^"\\]|\\.)*"): (must be no more than 63 (?:bytes|characters)|a valid label must be )'
)
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def label_value_fields(body: Any, field: str, message: str) -> list[str]:
    """Where a label value the API server refuses is: the field path of each key of the map its error names
    (``metadata.labels``) that holds the value it quotes (``metadata.labels.team``); [] for any other error, or when
    no key holds it."""
    match = _LABEL_VALUE_ERROR.match(message)
    if not match or not field:
        return []
    try:
        value = json.loads(match.group(1))
    except ValueError:  # a Go escape JSON does not know: leave the error at the map
        return []
    path: list[Any] = [int(index) if index else name for name, index in _PATH_PART.findall(field)]
    labels = _at(body, path)
    if labels is None and path[-1:] == ["labels"]:  # a template's labels: its metadata is inlined in the path
        path = [*path[:-1], "metadata", "labels"]
        labels = _at(body, path)
    if not isinstance(labels, dict):
        return []
    return [format_path([*path, key]) for key, text in labels.items() if str(text) == value]


def _at(node: Any, path: list[Any]) -> Any:
    for part in path:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            node = node[part]
        elif isinstance(part, str) and isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


# mappings whose values are quantities, and fields that are one
_QUANTITY_MAPS = frozenset(
    {"requests", "limits", "hard", "capacity", "allocatable", "overhead", "max", "min", "default", "defaultRequest",
     "maxLimitRequestRatio"}
)  # fmt: skip
_QUANTITY_FIELDS = frozenset({"sizeLimit"})
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$")


def _is_quantity(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and _QUANTITY.match(value) is not None
