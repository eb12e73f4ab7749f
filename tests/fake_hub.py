"""A loopback stand-in for the Hugging Face Hub's HTTP API, as far as an upload goes.

`FakeHub` serves, on 127.0.0.1 (a free port) from a thread, the endpoints `huggingface_hub`
calls to create a dataset repo and commit files to it:

- `POST /api/repos/create` (`{"name", "organization", "type", "visibility"?}`): the repo URL;
  a name without organization goes to the user `tester`;
- `POST /api/validate-yaml`: the card's YAML must parse to a mapping (else a 400 with
  `errors`, as the Hub answers);
- `POST /api/datasets/{ns}/{name}/preupload/{rev}`: every file `regular` (so its bytes come
  inline in the commit: no LFS or Xet storage to fake);
- `POST /api/datasets/{ns}/{name}/commit/{rev}`: the NDJSON commit, whose files are kept.

Every request is recorded (method, path, headers in lower case, JSON body); `fail` maps a
path suffix to an HTTP status the server answers with instead (a refused commit, a 403).
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import yaml

USER = "tester"


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeHub:
    fail: dict[str, int] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)
    commits: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hub.answer(self, raw)

            def do_GET(self) -> None:
                hub.answer(self, b"")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        path = handler.path.split("?", 1)[0]
        ndjson = "ndjson" in (handler.headers.get("Content-Type") or "")
        body: Any = [json.loads(line) for line in raw.splitlines()] if ndjson else None
        if body is None and raw:
            body = json.loads(raw)
        headers = {key.lower(): value for key, value in handler.headers.items()}
        self.requests.append(Request(handler.command, path, headers, body))
        for suffix, status in self.fail.items():
            if path.endswith(suffix):
                return _send(handler, status, {"error": f"refused by the fake hub ({status})"})
        status, answer = self._route(handler.command, path, body)
        _send(handler, status, answer)

    def _route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if method == "POST" and path == "/api/repos/create":
            repo = f"{body.get('organization') or USER}/{body['name']}"
            self.repos.setdefault(repo, dict(body))
            return 200, {"url": f"{self.url}/datasets/{repo}", "name": repo}
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate(body["content"])
        if method == "POST" and len(parts) == 6 and parts[:2] == ["api", "datasets"]:
            repo = f"{parts[2]}/{parts[3]}"
            if repo not in self.repos:
                return 404, {"error": "Repository not found"}
            if parts[4] == "preupload":
                files = [
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                    for f in body["files"]
                ]
                return 200, {"files": files}
            if parts[4] == "commit":
                return self._commit(repo, body)
        return 404, {"error": f"the fake hub has no {method} {path}"}

    def _validate(self, content: str) -> tuple[int, Any]:
        block = content.split("---\n", 2)[1] if content.startswith("---\n") else ""
        try:
            meta = yaml.safe_load(block)
        except yaml.YAMLError as exc:
            return 400, {"errors": [{"message": f"YAML: {exc}"}]}
        if not isinstance(meta, dict):
            return 400, {"errors": [{"message": "no metadata mapping"}]}
        return 200, {"errors": [], "warnings": []}

    def _commit(self, repo: str, lines: list[dict[str, Any]]) -> tuple[int, Any]:
        header = next(line["value"] for line in lines if line["key"] == "header")
        stored = self.files.setdefault(repo, {})
        for line in lines:
            if line["key"] == "file":
                value = line["value"]
                stored[value["path"]] = base64.b64decode(value["content"])
        self.commits.append({"repo": repo, **header})
        oid = f"{len(self.commits):040x}"
        return 200, {"commitUrl": f"{self.url}/datasets/{repo}/commit/{oid}", "commitOid": oid}


def _send(handler: BaseHTTPRequestHandler, status: int, answer: Any) -> None:
    data = json.dumps(answer).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
