# The same commands as the README: scripts/setup.sh installs, scripts/run.sh serves.
FROM python:3.11-slim

# curl for the HEALTHCHECK; libc/locales are enough for the embedded PostgreSQL.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 app

ENV PYTHON=python3.11 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DATA_DIR=/app/.data/pg \
    GRACEFUL_SHUTDOWN_SECONDS=8
# 8 s of draining plus PostgreSQL's fast stop fit inside `docker stop`'s default
# 10 s before SIGKILL (raise both together: `docker stop -t 30` + a larger value).

WORKDIR /app
COPY --chown=app:app . /app
USER app

# Installs into /app/.venv (torch==2.13.0 first, then the project).
# .data is created here, owned by `app`: a volume mounted on a directory the
# image lacks would be root-owned and the embedded PostgreSQL could not initdb.
RUN bash scripts/setup.sh && mkdir -p /app/.data

EXPOSE 8000
VOLUME ["/app/.data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8000/ready || exit 1

# exec'd by run.sh, so SIGTERM reaches the server and PostgreSQL stops cleanly.
CMD ["bash", "scripts/run.sh", "--host", "0.0.0.0"]
