"""Files read from a downloaded wheel (``pip download --no-deps -d .wheels NAME==VERSION``), never installed.

Installing a wheel unpacks and byte-compiles all of it (sglang 0.5.23: 222 MB, ~27 s; vLLM 0.33.0: minutes);
the reference engines need one or two of its files. They are extracted once into
``.wheels/NAME-VERSION/`` (git-ignored) and loaded from there by file path.
"""
from __future__ import annotations

import importlib.metadata
import os
import zipfile
from pathlib import Path


def wheel_folder() -> Path:
    """Where downloaded wheels are looked for: $SPECVIZ_WHEELS, else the repository's .wheels/."""
    return Path(os.environ.get("SPECVIZ_WHEELS") or Path(__file__).resolve().parents[2] / ".wheels")


def installed_version(name: str) -> str:
    """The installed distribution's version, or "unknown" when it is importable without package metadata."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def extract(name: str, version: str, members: tuple[str, ...]) -> tuple[Path | None, str]:
    """(folder holding ``members`` as in the wheel, how) or (None, why not), from ``NAME-VERSION-*.whl``."""
    folder = wheel_folder()
    wheels = sorted(folder.glob(f"{name}-{version}-*.whl")) if folder.is_dir() else []
    if not wheels:
        return None, f"no {name}-{version} wheel in {folder} (pip download --no-deps -d .wheels {name}=={version})"
    root = folder / f"{name}-{version}"
    for member in members:
        target = root / member
        if target.is_file():
            continue
        try:
            with zipfile.ZipFile(wheels[0]) as zf:
                data = zf.read(member)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            return None, f"{wheels[0].name} has no readable {member} ({type(exc).__name__})"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)  # atomic: two test workers may extract at once
    return root, f"{name} {version} wheel {wheels[0].name}"
