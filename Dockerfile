# specviz in a container: the Streamlit app on port 8501, CPU only.
#   docker build -t specviz . && docker run --rm -p 8501:8501 specviz     -> http://localhost:8501
# Checked offline in CI (tests/test_deploy.py: hadolint and the properties below). Not built on the
# project's machines (no Docker engine there).

# --- build: the specviz wheel (it carries app.py, pages/ and scenarios/, see setup.py) -------------
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md requirements.txt constraints.txt app.py ./
COPY specviz/ specviz/
COPY kernels/ kernels/
COPY pages/ pages/
COPY scenarios/ scenarios/
COPY static/ static/
RUN pip wheel --no-deps --wheel-dir /wheels .

# --- run -----------------------------------------------------------------------------------------
# NOT YET PINNED BY DIGEST: no registry was reachable where this file was written, and a digest
# must not be guessed. Before building for production, pin both FROM lines to the digest you
# resolved, e.g.  docker buildx imagetools inspect python:3.11-slim-bookworm  ->  sha256:...
#   FROM python:3.11-slim-bookworm@sha256:<that digest>
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TRITON_INTERPRET=1 \
    TRITON_CACHE_DIR=/tmp/triton \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_SERVER_HEADLESS=true

# graphviz's dot: SVG/PNG export of the tree figures. (Plotly PNG export needs a Chromium, which
# this image leaves out to stay small: the app then says PNG export is unavailable.) The Debian release is fixed by the base image's tag; its
# graphviz follows that release's security updates, so the package version is not pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends graphviz \
    && rm -rf /var/lib/apt/lists/*

# torch: the CPU-only build from PyTorch's CPU index (no CUDA download), then specviz with the
# locked versions of everything else (constraints.txt).
COPY constraints.txt /tmp/constraints.txt
COPY --from=build /wheels /wheels
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
    && pip install -c /tmp/constraints.txt /wheels/specviz-*.whl \
    && rm -rf /wheels /tmp/constraints.txt

# Never run as root.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin specviz
USER 10001
WORKDIR /home/specviz

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]
CMD ["specviz", "app", "--server.address", "0.0.0.0", "--server.port", "8501"]
