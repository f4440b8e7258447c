"""One keep-alive HTTP/1.1 connection over asyncio streams (no dependencies), for the virtual
annotators of loadtest/client.py."""

from __future__ import annotations

import asyncio


class ConnectionFailed(Exception):
    """The request may or may not have reached the server; its response was not read."""


class HttpConnection:
    """One keep-alive HTTP/1.1 connection (re-opened after an error or ``Connection: close``)."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, bytes]:
        try:
            return await asyncio.wait_for(self._request(method, path, headers, body), self.timeout)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self.close()
            raise ConnectionFailed(f"{type(exc).__name__}: {exc}") from exc

    async def _request(self, method, path, headers, body) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await self.writer.drain()
        status_line = await self.reader.readuntil(b"\r\n")
        status = int(status_line.split(b" ", 2)[1])
        length, chunked, close = None, False, False
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection" and value == "close":
                close = True
        if chunked:
            data = bytearray()
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                data += await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                del data[-2:]
            payload = bytes(data[:-2]) if data.endswith(b"\r\n") else bytes(data)
        elif length is not None:
            payload = await self.reader.readexactly(length)
        else:
            payload, close = await self.reader.read(), True
        if close:
            self.close()
        return status, payload
