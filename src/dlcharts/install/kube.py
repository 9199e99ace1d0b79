"""A small raw-JSON client for the API server (its answers and warnings as sent) and discovery of what it serves."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from dlcharts.errors import ClusterError


def kind_key(api_version: str, kind: str) -> str:
    """``Kind`` for the core group, else ``group/Kind`` (stable across versions of a group): how inventories name a
    kind, whether from a resource list or an object's (or owner reference's) apiVersion."""
    group = api_version.rpartition("/")[0]
    return f"{group}/{kind}" if group else kind


@dataclasses.dataclass(frozen=True)
class ApiResource:
    group_version: str  # "v1", "batch/v1"
    kind: str
    name: str  # plural
    namespaced: bool
    verbs: tuple[str, ...]

    @property
    def key(self) -> str:
        return kind_key(self.group_version, self.kind)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{self.name}"
        return f"{base}/{quote(name)}" if name else base


@dataclasses.dataclass
class Response:
    status: int
    doc: Any
    warnings: list[str]


class Kube:
    """Raw JSON requests to the API server over a ``kubernetes.client.ApiClient`` (its TLS and credentials).

    Much faster than the generated models for the polling the waits do, and it returns what the API server
    said, warnings (e.g. Pod Security) included.
    """

    def __init__(self, api_client: Any) -> None:
        self.api = api_client
        self._resources: list[ApiResource] | None = None

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path | str) -> Kube:
        from kubernetes import config

        kconfig: Any = config
        return cls(kconfig.new_client_from_config(config_file=str(kubeconfig)))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api.close()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Response:
        from kubernetes.client.exceptions import ApiException

        url = path + ("?" + urlencode(dict(query)) if query else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        method_, full_url, header_params, _, _ = self.api.param_serialize(
            method, url, header_params=headers, auth_settings=["BearerToken"]
        )
        try:  # the REST layer serializes a dict/list body as JSON
            resp = self.api.call_api(
                method_, full_url, header_params=header_params, body=body, _request_timeout=timeout
            )
            resp.read()
            status, raw, headers_out = resp.status, resp.data, resp.getheaders()
        except ApiException as exc:
            status, raw, headers_out = exc.status or 0, (exc.body or b""), exc.headers or {}
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw or "")
        try:
            doc = json.loads(text) if text else None
        except json.JSONDecodeError:
            doc = text
        warnings = []
        if headers_out:
            getall = getattr(headers_out, "getlist", None) or getattr(headers_out, "get_all", None)
            values = getall("Warning") if getall else [headers_out.get("Warning")]
            for value in values or []:
                if value:
                    warnings.append(_warning_text(str(value)))
        return Response(status, doc, warnings)

    def get(self, path: str, **query: str) -> Any:
        resp = self.request("GET", path, query=query or None)
        if resp.status != 200:
            raise ClusterError(f"GET {path} answered {resp.status}: {status_message(resp.doc)}")
        return resp.doc

    def get_or_none(self, path: str) -> Any:
        resp = self.request("GET", path)
        if resp.status == 404:
            return None
        if resp.status != 200:
            raise ClusterError(f"GET {path} answered {resp.status}: {status_message(resp.doc)}")
        return resp.doc

    def apply(self, obj: Mapping[str, Any], field_manager: str = "dlcharts") -> Any:
        """Server-side apply of one object (created, or updated to what ``obj`` says); returns it as stored."""
        meta = obj["metadata"]
        path = self.resource_for(str(obj["apiVersion"]), str(obj["kind"])).path(meta.get("namespace"), meta["name"])
        # as text (JSON is YAML), which the client sends as it is whatever its version makes of the content type
        resp = self.request("PATCH", path, query={"fieldManager": field_manager, "force": "true"},
                            body=json.dumps(obj), content_type="application/apply-patch+yaml")  # fmt: skip
        if resp.status not in (200, 201):
            raise ClusterError(f"the API server refused {obj['kind']} {meta['name']}: {status_message(resp.doc)}")
        return resp.doc

    def items(self, path: str, label_selector: str | None = None, field_selector: str | None = None) -> list[Any]:
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        return list(self.get(path, **query).get("items") or [])

    def resources(self, refresh: bool = False) -> list[ApiResource]:
        """Every listable resource type the API server serves (all versions), from discovery; cached."""
        if self._resources is not None and not refresh:
            return self._resources
        found: list[ApiResource] = []
        group_versions = ["v1"]
        for group in self.get("/apis").get("groups", []):
            group_versions += [v["groupVersion"] for v in group.get("versions", [])]
        for gv in group_versions:
            path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
            resp = self.request("GET", path)
            if resp.status != 200:  # an aggregated API that is down: not ours to judge here
                continue
            for res in resp.doc.get("resources", []):
                if "/" in res["name"] or "list" not in res.get("verbs", []):
                    continue
                found.append(ApiResource(gv, res["kind"], res["name"], bool(res["namespaced"]), tuple(res["verbs"])))
        self._resources = found
        return found

    def resource_for(self, api_version: str, kind: str) -> ApiResource:
        for refresh in (False, True):
            for res in self.resources(refresh=refresh):
                if res.group_version == api_version and res.kind == kind:
                    return res
        raise ClusterError(f"the cluster serves no {kind} in {api_version} (is its CRD installed?)")

    def preferred_resources(self) -> list[ApiResource]:
        """One version per group and kind (the first listed, i.e. the preferred one): for inventories."""
        seen: set[str] = set()
        out = []
        for res in self.resources():
            if res.key not in seen:
                seen.add(res.key)
                out.append(res)
        return out


def _warning_text(header: str) -> str:
    # RFC 7234 warning: 299 - "text"
    parts = header.split(" ", 2)
    text = parts[2] if len(parts) == 3 else header
    return text.strip().strip('"')


def status_message(doc: Any) -> str:
    if isinstance(doc, dict):
        return str(doc.get("message") or doc)
    return str(doc)
