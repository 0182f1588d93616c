# specviz in a container: the Streamlit app on port 8501, CPU only.
#   docker build -t specviz . && docker run --rm -p 8501:8501 specviz     -> http://localhost:8501
# Checked offline in CI (tests/test_deploy.py: hadolint and the properties below). Not built on the
# project's machines (no Docker engine there).

# --- base image, pinned by digest ----------------------------------------------------------------
# Both stages use python:3.11-slim-bookworm at the digest given as PYTHON_DIGEST. No registry was
# reachable where this file was written, and a digest must not be guessed, so there is no default:
# resolve it where you build, and pass it (the build stops at the first FROM without it):
#   docker buildx imagetools inspect python:3.11-slim-bookworm --format '{{json .Manifest.Digest}}'
#   docker build --build-arg PYTHON_DIGEST=sha256:<that digest> -t specviz .
# The image is for linux/amd64: the locks below hash the x86_64 wheels.
ARG PYTHON_DIGEST

# --- build: the specviz wheel (it carries app.py, pages/ and scenarios/, see setup.py) -------------
FROM python:3.11-slim-bookworm@${PYTHON_DIGEST} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY deploy/build.lock /tmp/build.lock
COPY pyproject.toml setup.py MANIFEST.in README.md requirements.txt constraints.txt app.py ./
COPY specviz/ specviz/
COPY kernels/ kernels/
COPY pages/ pages/
COPY scenarios/ scenarios/
COPY static/ static/
# The build backend from a hashed lock, then no build isolation: nothing unhashed is fetched.
RUN pip install --require-hashes --no-deps -r /tmp/build.lock \
    && pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .

# --- run -----------------------------------------------------------------------------------------
FROM python:3.11-slim-bookworm@${PYTHON_DIGEST}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TRITON_INTERPRET=1 \
    TRITON_CACHE_DIR=/tmp/triton \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_SERVER_HEADLESS=true \
    MALLOC_ARENA_MAX=2

# graphviz's dot: SVG/PNG export of the tree figures. (Plotly PNG export needs a Chromium, which
# this image leaves out to stay small: the app then says PNG export is unavailable.) The Debian release is fixed by the base image's tag; its
# graphviz follows that release's security updates, so the package version is not pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends graphviz \
    && rm -rf /var/lib/apt/lists/*

# Every distribution from a lock with its sha256 (deploy/lock_image.py writes them from requirements.txt
# and constraints.txt): torch, the CPU-only build from PyTorch's CPU index (no CUDA download), then
# everything else from PyPI, then specviz's own wheel from the build stage (no dependencies left to
# fetch), and pip check that nothing is missing. A file that differs from the one hashed fails the build.
COPY deploy/image-torch.lock deploy/image.lock /tmp/lock/
COPY --from=build /wheels /wheels
RUN pip install --require-hashes --no-deps --index-url https://download.pytorch.org/whl/cpu -r /tmp/lock/image-torch.lock \
    && pip install --require-hashes --no-deps --index-url https://pypi.org/simple -r /tmp/lock/image.lock \
    && pip install --no-deps --no-index /wheels/specviz-*.whl \
    && pip check \
    && rm -rf /wheels /tmp/lock

# Never run as root.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin specviz
USER 10001
WORKDIR /home/specviz

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]
CMD ["specviz", "app", "--server.address", "0.0.0.0", "--server.port", "8501"]
