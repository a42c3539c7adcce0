# apimcp: the control plane, gateways, the CLI. One image; the command picks the role:
#   docker run IMAGE control-plane --host 0.0.0.0 --database-url postgresql://...
#   docker run IMAGE gateway --control-plane http://cp:8080 --host 0.0.0.0 --state-url redis://redis:6379/0
#   docker run -p 8080:8080 IMAGE            (serve: control plane and gateway in one process, SQLite)
# deploy/compose.yaml runs the topology of docs/deployment.md with it.
FROM python:3.11-slim

WORKDIR /opt/apimcp
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir . && useradd --system --uid 10001 --home-dir /data apimcp \
    && mkdir -p /data && chown apimcp /data

USER apimcp
ENV APIMCP_HOME=/data
VOLUME /data
EXPOSE 8080 8081
ENTRYPOINT ["apimcp"]
CMD ["serve", "--host", "0.0.0.0"]
