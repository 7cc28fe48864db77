"""The clients of a cluster_failover.py trial (cluster_trial.py): `Client`, one /v1/connect
connection of one user; `open_socket` and `request` on it; `watch`, which reads it until the kill
drops it; `recover`, which then reconnects through the balancer and resumes; `close_clients`."""

from __future__ import annotations

import asyncio
import json
import time

from cluster_daemons import HOST
from cluster_driver import BenchError


class Client:
    """One /v1/connect connection of one user, and what became of it after the kill."""

    def __init__(self, index: int, user: str, token: str) -> None:
        self.index, self.user, self.token = index, user, token
        self.ws = None
        self.resume_token: str | None = None
        self.connection_id: str | None = None
        self.session_id: str | None = None
        self.last_seq = 0
        self.requests = 0
        self.watcher: asyncio.Task | None = None
        self.dropped_at: float | None = None
        self.resumed_at: float | None = None
        self.attempts = 0
        self.outcome: str | None = None
        self.last_error: str | None = None
        self.replay_complete: bool | None = None
        self.trace: list[tuple[float, float, str]] = []  # reconnect attempts: start, end (monotonic s), result

    def note(self, frame: dict) -> None:
        seq = frame.get("seq")
        if isinstance(seq, int) and frame.get("type") not in ("response", "error", "pong"):
            self.last_seq = max(self.last_seq, seq)


async def open_socket(port: int, client: Client, timeout: float, resume: bool) -> tuple[object, dict]:
    """A socket through the balancer, authenticated (resuming when ``resume``); (socket, connection.ok data)."""
    from websockets.asyncio.client import connect

    deadline = time.monotonic() + timeout
    ws = await connect(f"ws://{HOST}:{port}/v1/connect", open_timeout=timeout, proxy=None, max_size=None,
                       ping_interval=None, close_timeout=1)
    try:
        auth: dict = {"type": "auth", "id": "auth", "token": client.token}
        if resume:
            auth.update(resume_token=client.resume_token, last_seq=client.last_seq)
        await ws.send(json.dumps(auth))
        frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.05, deadline - time.monotonic())))
        if frame.get("type") != "connection.ok":
            raise BenchError(f"{client.user}: auth answered {frame}")
        return ws, frame["data"]
    except BaseException:
        ws.transport.abort()
        raise


async def request(client: Client, kind: str, data: dict, timeout: float) -> dict:
    """One request on the client's socket; its answer frame (events read meanwhile update last_seq)."""
    client.requests += 1
    rid = f"{client.user}-{client.requests}"
    await client.ws.send(json.dumps({"id": rid, "type": kind, "data": data}))
    deadline = time.monotonic() + timeout
    while True:
        frame = json.loads(await asyncio.wait_for(client.ws.recv(), max(0.05, deadline - time.monotonic())))
        client.note(frame)
        if frame.get("id") == rid:
            return frame


async def watch(client: Client) -> None:
    """Read the socket until it drops (the kill), noting seqs; then note the time."""
    try:
        async for text in client.ws:
            client.note(json.loads(text))
    except Exception:  # noqa: BLE001 - any end of the socket is the drop
        pass
    client.dropped_at = time.monotonic()


async def recover(client: Client, port: int, deadline: float, backoff: float) -> None:
    """After the socket drops: reconnect through the balancer and resume until ``deadline``."""
    left = deadline - time.monotonic()
    done, _ = await asyncio.wait({client.watcher}, timeout=max(0.0, left))
    if not done:
        client.outcome = "never_dropped"
        return
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            client.outcome = "timed_out"
            return
        client.attempts += 1
        began = time.monotonic()
        try:
            ws, hello = await open_socket(port, client, min(5.0, left), resume=True)
        except Exception as error:  # noqa: BLE001 - refused, closed by the balancer, timed out: try again
            client.last_error = f"{type(error).__name__}: {error}"[:200]
            client.trace.append((began, time.monotonic(), type(error).__name__))
            await asyncio.sleep(backoff)  # back-off between reconnect attempts, not a wait for a condition
            continue
        at = time.monotonic()
        client.trace.append((began, at, "connection.ok"))
        client.ws = ws
        client.replay_complete = hello.get("replay_complete")
        if not hello.get("resumed"):
            client.outcome = "new_connection"  # the resume token matched nothing
        elif client.session_id not in hello.get("sessions", []):
            client.outcome = "resumed_without_session"
        else:
            client.outcome = "resumed"
            client.resumed_at = at
        return


async def close_clients(clients: list[Client]) -> None:
    async def close(client: Client) -> None:
        if client.watcher is not None and not client.watcher.done():
            client.watcher.cancel()
        if client.ws is None:
            return
        try:
            await asyncio.wait_for(client.ws.close(), 2)
        except Exception:  # noqa: BLE001
            client.ws.transport.abort()

    await asyncio.gather(*(close(c) for c in clients), return_exceptions=True)
