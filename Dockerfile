# syntax=docker/dockerfile:1
# Multi-stage build: compile with the Swift toolchain on Debian 12, run on a slim Debian 12
# with only the shared libraries the binary links (libwebsockets, libev, OpenSSL, SQLite).

FROM swift:6.2-bookworm AS build
WORKDIR /src
# Every directory Package.swift declares a target in (scripts/test replays this stage without
# Docker: scripts/docker-build-stage).
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
COPY Fuzz ./Fuzz
COPY bench/placement ./bench/placement
COPY bench/client ./bench/client
COPY bench/bus ./bench/bus
COPY bench/tunnel ./bench/tunnel
COPY bench/gateway ./bench/gateway
COPY Examples ./Examples
COPY config ./config
COPY scripts ./scripts
RUN scripts/build-release

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libwebsockets17 libwebsockets-evlib-ev libev4 libssl3 libsqlite3-0 libcap2 \
        libstdc++6 zlib1g ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system switchboard \
    && useradd --system --gid switchboard --home-dir /var/lib/switchboard --shell /usr/sbin/nologin switchboard \
    && install -d -o switchboard -g switchboard -m 0750 /var/lib/switchboard
COPY --from=build /src/dist/switchboard /usr/local/bin/switchboard
COPY --from=build /src/config/switchboard.json /etc/switchboard/switchboard.json
# The browser library, served at /sdk/ (the demo app is for `serve --dev` on a developer's machine).
COPY clients/js/src /usr/share/switchboard/sdk
USER switchboard
WORKDIR /var/lib/switchboard
VOLUME ["/var/lib/switchboard"]
EXPOSE 9000
ENV SWITCHBOARD_CONFIG=/etc/switchboard/switchboard.json \
    SWITCHBOARD_STORE_DIRECTORY=/var/lib/switchboard \
    SWITCHBOARD_HTTP_SDK_DIR=/usr/share/switchboard/sdk
# The admin API stays on the container's loopback and needs a bearer token: SWITCHBOARD_ADMIN_TOKEN,
# or the one the daemon generates into /var/lib/switchboard/admin.token at first start.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8081/healthz >/dev/null || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["serve"]
