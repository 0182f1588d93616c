"""Write the container's hashed locks: deploy/image.lock (everything but torch), deploy/image-torch.lock and
deploy/build.lock (the build stage's setuptools and wheel).

    /work/main/.venv/bin/python deploy/lock_image.py            # resolve and write (Python 3.11, Linux x86_64)
    /work/main/.venv/bin/pip download --no-deps --require-hashes --isolated --index-url https://pypi.org/simple \\
        -r deploy/image.lock -r deploy/build.lock -d /tmp/lockcheck   # every hash checked against PyPI's own files

The set is what ``pip install -c constraints.txt specviz`` installs (requirements.txt's ranges, constraints.txt's
versions) for CPython 3.11 on manylinux x86_64, the Dockerfile's base image: ``pip install --dry-run --report``
names every distribution with the sha256 of the file it chose. The Dockerfile installs them with
``--require-hashes --no-deps``, so a file that differs from the one hashed here fails the build. torch is the
CPU-only build from PyTorch's CPU index (2.13.0+cpu): that index is not reachable from where this lock was
written, so its hash is that of the wheel this project's machines install (the same file name); if PyTorch's
file differs, the image build stops at that line rather than install something unchecked.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = ("# Written by deploy/lock_image.py (do not edit): {what}, CPython 3.11, Linux x86_64 (the Dockerfile's base\n"
          "# image). Installed with pip install --require-hashes --no-deps; regenerate after changing\n"
          "# requirements.txt or constraints.txt.\n")


def resolve(*requirements: str) -> list[dict]:
    """What pip would install for ``requirements`` under constraints.txt, here (CPython 3.11, Linux x86_64)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), "-c", str(ROOT / "constraints.txt"), *requirements], check=True)
        return json.loads(report.read_text())["install"]


def locked(items: list[dict]) -> list[tuple[str, str]]:
    """(name, lock entry) per distribution, sorted by name."""
    out = []
    for it in sorted(items, key=lambda i: i["metadata"]["name"].lower()):
        name, version = it["metadata"]["name"], it["metadata"]["version"]
        digest = it["download_info"]["archive_info"]["hashes"]["sha256"]
        out.append((name, f"{name}=={version} \\\n    --hash=sha256:{digest}\n"))
    return out


def main() -> None:
    # The build stage's backend (pyproject.toml's build-system requires), installed before `pip wheel
    # --no-build-isolation` so that nothing unhashed is fetched for the build either.
    build = locked(resolve("setuptools>=68", "wheel"))
    (ROOT / "deploy" / "build.lock").write_text(HEADER.format(what="the build backend (pyproject.toml)")
                                                + "".join(line for _, line in build))
    items = resolve("-r", str(ROOT / "requirements.txt"))
    lines, torch = [], []
    for it in sorted(items, key=lambda i: i["metadata"]["name"].lower()):
        name, version = it["metadata"]["name"], it["metadata"]["version"]
        digest = it["download_info"]["archive_info"]["hashes"]["sha256"]
        line = f"{name}=={version} \\\n    --hash=sha256:{digest}\n"
        (torch if name.lower() == "torch" else lines).append(line)
    assert len(torch) == 1 and "+cpu" in torch[0], torch
    (ROOT / "deploy" / "image.lock").write_text(HEADER.format(what="specviz's dependencies but torch") + "".join(lines))
    (ROOT / "deploy" / "image-torch.lock").write_text(
        HEADER.format(what="torch, the CPU-only build (PyTorch's CPU index)") + "".join(torch))
    print(f"{len(lines)} + 1 distributions locked")


if __name__ == "__main__":
    main()
