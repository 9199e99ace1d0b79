"""Our side of ``python -m bench.validation``: one timed process of ours end to end (``ours-e2e``), our validation
alone (``ours-engine``), and our two engines' agreement (jsonschema-rs and jsonschema)."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

from bench import common


def ours_cmd(path: Path, engine: str, decoder: str = "server") -> list[str]:
    """One timed process of ours (run from the checkout's root, where ``bench`` is importable)."""
    return [sys.executable, "-m", "bench.validation", "ours-e2e", str(path), "--engine", engine, "--decoder", decoder]


def ours_e2e(path: Path, engine: str, decoder: str = "server") -> dict[str, Any]:
    """One process: read and decode the stream, compile validators, validate every object (timed in parts).

    ``decoder``: ``server``, the harness's own path (dlcharts.render_server: the pinned helm's in-process renderer
    decodes each piece as PyYAML would and sends JSON; the pieces it leaves to PyYAML are decoded here), or
    ``pyyaml``, every piece with PyYAML's C loader (the path of a harness without its render server)."""
    t0 = time.perf_counter()
    from dlcharts import render_server, schemas
    from dlcharts.helm import find_helm
    from dlcharts.render import parse_manifest

    if engine == "python":
        schemas.disable_fast_engine()
    server = render_server.server_for(find_helm()) if decoder == "server" else None
    if decoder == "server" and server is None:
        raise SystemExit("the render server does not run (build it: make tools)")
    t1 = time.perf_counter()
    text = path.read_text()
    decoded, fallback = server.decode(text) if server is not None else (None, frozenset[int]())
    objects = list(parse_manifest(text, decoded=decoded, fallback=fallback).values())
    t2 = time.perf_counter()
    findings = schemas.validate_objects(objects, common.KUBE_VERSION)
    t3 = time.perf_counter()
    errors = sorted({(f.object, f.path.replace(".", "/").replace("[", "/").replace("]", "")) for f in findings})
    return {
        "objects": len(objects),
        "invalid": len({f.object for f in findings}),
        "findings": len(findings),
        "errors": errors,
        "seconds": {"import": t1 - t0, "parse": t2 - t1, "validate": t3 - t2},
        "decoded_by_pyyaml": len(fallback) if decoded is not None else len(objects),
    }


def ours_engine(path: Path, repeat: int) -> dict[str, Any]:
    """validate_objects alone: objects parsed, validators compiled by a first pass, then ``repeat`` timed passes."""
    from dlcharts import schemas
    from dlcharts.render import parse_manifest

    objects = list(parse_manifest(path.read_text()).values())
    start = time.perf_counter()
    schemas.validate_objects(objects, common.KUBE_VERSION)
    first = time.perf_counter() - start
    samples, findings = common.timed(lambda: schemas.validate_objects(objects, common.KUBE_VERSION), repeat)
    return {"objects": len(objects), "first_pass": first, "samples": samples, "findings": len(findings)}


def engine_agreement(path: Path, count: int, seed: int = 11) -> dict[str, Any]:
    """jsonschema-rs's verdict vs jsonschema's on ``count`` randomly mutated corpus objects (values replaced by
    other types, odd strings or huge numbers, fields deleted, unknown fields added). Only "rs accepts what
    jsonschema rejects" would lose findings; the other way round, jsonschema's path decides anyway."""
    import copy

    from dlcharts import schemas
    from dlcharts.render import parse_manifest

    text = path.read_text()[:6_000_000]
    objects = list(parse_manifest(text[: text.rfind("\n---")]).values())
    rng = random.Random(seed)
    values: list[Any] = [None, 0, -1, 1.5, 2**70, "", "x", "1Gi", True, False, [], {}, ["a"], {"a": 1}, "a\n",
                         float("nan")]  # fmt: skip
    schema_set = schemas.schema_set_for(common.KUBE_VERSION)

    def walk(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        found = [prefix] if prefix else []
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            found += walk(child, (*prefix, key))
        return found

    counts = {"agree": 0, "rs_accepts_jsonschema_rejects": 0, "rs_rejects_jsonschema_accepts": 0}
    for _ in range(count):
        obj = rng.choice(objects)
        body = copy.deepcopy(obj.body)
        for _ in range(rng.randint(1, 3)):
            where = rng.choice(walk(body))
            parent: Any = body
            for key in where[:-1]:
                parent = parent[key]
            last, op = where[-1], rng.random()
            if op < 0.35:
                parent[last] = copy.deepcopy(rng.choice(values))  # a shared value could end up inside itself
            elif op < 0.55 and isinstance(parent, dict):
                del parent[last]
            elif op < 0.75 and isinstance(parent, dict):
                parent[f"{last}x"] = 1
            elif isinstance(parent[last], str):
                parent[last] += rng.choice(["\n", "-", "_", "A", " ", ".", "é"])
        fast = schemas.fast_validator_for(schema_set, obj.key.api_version, obj.kind)
        reference = schemas.validator_for(schema_set, obj.key.api_version, obj.kind)
        rs_ok = schemas.fast_is_valid(fast, body)
        py_ok = next(iter(reference.iter_errors(body)), None) is None
        key = (
            "agree" if rs_ok == py_ok else "rs_accepts_jsonschema_rejects" if rs_ok else "rs_rejects_jsonschema_accepts"
        )
        counts[key] += 1
    return {"mutated": count, **counts}
