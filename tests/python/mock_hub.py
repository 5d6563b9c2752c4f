"""A local stand-in for the Hugging Face hub (reference.md §3.3) for the `myriad pull` and
`myriad plan ORG/NAME` tests: the model-info API with sizes and checksums, resolve URLs that
redirect LFS files to a content host honouring Range, and faults injected on purpose.

Faults (set on the server's `faults` before a run; each applies to the content host):
  drop:    {path: n}   the next n answers for the file send half their bytes, then close
  errors:  {path: n}   the next n answers are HTTP 500
  slow:    {path: n}   the next n answers stall (longer than the client's timeout)
  corrupt: {path: n}   the next n answers that hold byte 100 of the file flip it (-1: always)
  resize:  {path: k}   the content host serves the file with k extra bytes (a changed file)
  delay:   seconds     every range answer waits this long first (to kill a pull mid-way)
"""

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = hashlib.sha1(b"myriad mock hub commit").hexdigest()


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class MockHub:
    def __init__(self, repo, files, lfs_suffixes=(".safetensors",)):
        self.repo = repo
        self.files = dict(files)  # path -> bytes
        self.lfs = {p for p in files if p.endswith(tuple(lfs_suffixes))}
        self.faults = {"drop": {}, "errors": {}, "slow": {}, "corrupt": {}, "resize": {},
                       "delay": 0.0}
        self.served = {}  # path -> bytes sent by the content host
        self.requests = []  # (method, path, range header)
        self.auth = []  # Authorization headers seen on the hub and on the content host
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub.handle(self, head=True)

            def do_GET(self):
                hub.handle(self, head=False)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def sha256(self, path):
        return hashlib.sha256(self.files[path]).hexdigest()

    def siblings(self):
        out = []
        for path, data in sorted(self.files.items()):
            s = {"rfilename": path, "size": len(data), "blobId": git_blob_sha1(data)}
            if path in self.lfs:
                s["lfs"] = {"sha256": self.sha256(path), "size": len(data), "pointerSize": 134}
            out.append(s)
        return out

    def take(self, kind, path):
        with self.lock:
            n = self.faults[kind].get(path, 0)
            if n == 0:
                return False
            if n > 0:
                self.faults[kind][path] = n - 1
            return True

    def send(self, h, status, body=b"", headers=None, head=False):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def handle(self, h, head):
        path = h.path.split("?")[0]
        with self.lock:
            self.requests.append((h.command, h.path, h.headers.get("Range")))
            self.auth.append((path, h.headers.get("Authorization")))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/([^/]+)", path)
        if m:
            if m.group(1) != self.repo:
                return self.send(h, 401, b'{"error":"Repository not found"}',
                                 {"X-Error-Code": "RepositoryNotFound"}, head)
            if m.group(2) not in ("main", COMMIT):
                return self.send(h, 404, b'{"error":"Invalid rev id"}',
                                 {"X-Error-Code": "RevisionNotFound"}, head)
            body = json.dumps({"id": self.repo, "sha": COMMIT, "siblings": self.siblings()})
            return self.send(h, 200, body.encode(), {"Content-Type": "application/json"}, head)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            repo, rev, file = m.groups()
            if repo != self.repo:
                return self.send(h, 401, b"", {"X-Error-Code": "RepositoryNotFound"}, head)
            if file not in self.files:
                return self.send(h, 404, b"", {"X-Error-Code": "EntryNotFound"}, head)
            data = self.files[file]
            if file in self.lfs:
                return self.send(h, 302, b"", {
                    "Location": f"{self.url}/cdn/{self.sha256(file)}/{file}",
                    "X-Linked-Etag": f'"{self.sha256(file)}"', "X-Linked-Size": str(len(data)),
                    "X-Repo-Commit": COMMIT}, head)
            return self.serve_range(h, file, data, head, {"ETag": f'"{git_blob_sha1(data)}"',
                                                          "X-Repo-Commit": COMMIT})
        m = re.fullmatch(r"/cdn/([0-9a-f]{64})/(.+)", path)
        if m and m.group(2) in self.files:
            return self.serve_range(h, m.group(2), self.files[m.group(2)], head, {})
        return self.send(h, 404, b"not found", None, head)

    def serve_range(self, h, file, data, head, extra):
        import time
        if self.faults["delay"]:
            time.sleep(self.faults["delay"])
        if self.take("errors", file):
            return self.send(h, 500, b"internal error", None, head)
        if self.take("slow", file):
            time.sleep(5)
            return self.send(h, 500, b"too late", None, head)
        grow = self.faults["resize"].get(file, 0)
        if grow:
            data = data + b"\0" * grow
        first, last, status = 0, len(data) - 1, 200
        rng = h.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng)
            first = int(m.group(1))
            last = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
            if first >= len(data):
                return self.send(h, 416, b"", {"Content-Range": f"bytes */{len(data)}"}, head)
            status = 206
            extra = dict(extra, **{"Content-Range": f"bytes {first}-{last}/{len(data)}"})
        body = bytearray(data[first:last + 1])
        if first <= 100 <= last and self.take("corrupt", file):
            body[100 - first] ^= 0xFF
        if head:
            return self.send(h, status, b"", extra, True)
        if self.take("drop", file):
            h.send_response(status)
            for k, v in extra.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(bytes(body[:len(body) // 2]))
            h.wfile.flush()
            h.close_connection = True
            with self.lock:
                self.served[file] = self.served.get(file, 0) + len(body) // 2
            return
        self.send(h, status, bytes(body), extra)
        with self.lock:
            self.served[file] = self.served.get(file, 0) + len(body)
