"""Every container's log of a release, streamed as it is written (:class:`LogStream`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlcharts.install import Kube
from dlcharts.install.state import INSTANCE_LABEL

Write = Callable[[str], None]


class LogStream:
    """Follows the log of every container of a release's pods once it has started (init containers too),
    from its first line, and writes each line as ``[pod/container] line``. A retried pod is a new pod.
    ``seen`` keeps the last state of every pod it saw, so that a pod deleted before the end still counts."""

    def __init__(self, kubeconfig: Path, namespace: str, release: str, write: Write) -> None:
        self._kubeconfig, self._namespace, self._release, self._write = kubeconfig, namespace, release, write
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._followed: set[tuple[str, str]] = set()
        self.seen: dict[str, dict[str, Any]] = {}
        self._followers: list[threading.Thread] = []
        self._watcher = threading.Thread(target=self._watch, name="log-watcher", daemon=True)

    def __enter__(self) -> LogStream:
        self._watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, flush_seconds: float = 10) -> None:
        """Stop looking for new containers; give the ones followed ``flush_seconds`` to deliver their last lines."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._watcher.join(timeout=5)
        deadline = time.monotonic() + flush_seconds
        for thread in self._followers:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _emit(self, prefix: str, line: str) -> None:
        with self._lock:
            self._write(f"[{prefix}] {line}")

    def _watch(self) -> None:
        from kubernetes import client

        with Kube.from_kubeconfig(self._kubeconfig) as kube:
            core: Any = client.CoreV1Api(kube.api)
            while True:
                last_round = self._stop.is_set()  # one more look after the job ended: containers that just ran
                with contextlib.suppress(Exception):  # a failed poll is retried on the next one
                    for pod in kube.items(
                        f"/api/v1/namespaces/{self._namespace}/pods", label_selector=f"{INSTANCE_LABEL}={self._release}"
                    ):
                        self.seen[pod["metadata"]["name"]] = pod
                        status = pod.get("status") or {}
                        for container in (status.get("initContainerStatuses") or []) + (
                            status.get("containerStatuses") or []
                        ):
                            state = container.get("state") or {}
                            key = (pod["metadata"]["name"], container["name"])
                            if key not in self._followed and ("running" in state or "terminated" in state):
                                self._followed.add(key)
                                thread = threading.Thread(target=self._follow, args=(core, *key), daemon=True)
                                self._followers.append(thread)
                                thread.start()
                if last_round:
                    return
                self._stop.wait(1.0)

    def _follow(self, core: Any, pod: str, container: str) -> None:
        prefix = f"{pod}/{container}"
        try:
            resp = core.read_namespaced_pod_log(
                pod, self._namespace, container=container, follow=True, _preload_content=False
            )
            pending = b""
            for chunk in resp.stream(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._emit(prefix, line.decode(errors="replace"))
            if pending:
                self._emit(prefix, pending.decode(errors="replace"))
        except Exception as exc:  # noqa: BLE001 - a log that cannot be read is reported, the run goes on
            self._emit(prefix, f"(log not readable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
