#!/usr/bin/env python3
"""`myriad serve`'s HTTP semantics beyond the hostile cases (test_serve_hostile.py): an HTTP/1.0
client gets a stream without the chunked coding (it does not know it, RFC 9112 §7.1), ended by
closing the connection; paths are percent-decoded before routing (RFC 3986 §2.1) and a malformed
escape is a 400; GET /v1/models/{model} answers as OpenAI's "retrieve model" (the openai client's
models.retrieve), 404 model_not_found for another name.

Run: build/venv/bin/python tests/python/test_serve_http.py   (MYRIAD_BINARY = myriad)
"""

import json
import socket
import sys

import openai
import pytest

from test_serve import MODEL, Server


@pytest.fixture(scope="module")
def server():
    s = Server("--served-model-name", "org/" + MODEL)
    yield s
    s.stop()


NAME = "org/" + MODEL


def exchange(server, request):
    """Sends raw request bytes and reads until the server closes; returns (head, body bytes)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), body


def request(method, path, version, body=None, extra=""):
    text = f"{method} {path} {version}\r\nHost: x\r\n{extra}"
    if body is not None:
        payload = json.dumps(body).encode()
        text += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    else:
        payload = b""
    return (text + "\r\n").encode() + payload


def sse_events(text):
    return [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def test_http10_stream_is_not_chunked_and_ends_with_the_connection(server):
    body = {"model": NAME, "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0,
            "stream": True}
    head, raw10 = exchange(server, request("POST", "/v1/completions", "HTTP/1.0", body))
    assert head.split(" ")[1] == "200", head
    lower = head.lower()
    assert "transfer-encoding" not in lower, head
    assert "connection: close" in lower, head
    text10 = raw10.decode()
    assert text10.rstrip().endswith("data: [DONE]"), text10[-200:]
    # The same stream over HTTP/1.1 is chunked; its de-chunked events are the HTTP/1.0 bytes'.
    head11, raw11 = exchange(server, request("POST", "/v1/completions", "HTTP/1.1", body,
                                             "Connection: close\r\n"))
    assert "transfer-encoding: chunked" in head11.lower(), head11
    plain, rest = b"", raw11
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        plain, rest = plain + rest[:size], rest[size + 2:]
    text = lambda events: "".join(e["choices"][0]["text"] for e in events if e["choices"])
    assert text(sse_events(text10)) == text(sse_events(plain.decode()))
    assert text(sse_events(text10)), "the stream carried no text"


def test_http10_plain_reply_has_a_length(server):
    head, body = exchange(server, request("GET", "/health", "HTTP/1.0"))
    assert head.split(" ")[1] == "200", head
    length = int(head.lower().split("content-length:")[1].split("\r\n")[0])
    assert len(body) == length and json.loads(body)["status"] == "ok"


def test_paths_are_percent_decoded(server):
    head, body = exchange(server, request("GET", "/v1/%6Dodels", "HTTP/1.1", None,
                                          "Connection: close\r\n"))
    assert head.split(" ")[1] == "200", head
    assert json.loads(body)["data"][0]["id"] == NAME


@pytest.mark.parametrize("path", ["/v1/models%", "/v1/models%4", "/v1/mo%zzdels", "/v1/models%00"])
def test_malformed_percent_escape_is_400(server, path):
    head, body = exchange(server, request("GET", path, "HTTP/1.1"))
    assert head.split(" ")[1] == "400", head
    err = json.loads(body)["error"]
    assert err["type"] == "invalid_request_error" and "%25" in err["message"], err


def test_retrieve_model_with_the_openai_client(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
    m = client.models.retrieve(NAME)  # the client sends the "/" as is: /v1/models/org/myriad-tiny
    assert m.id == NAME and m.object == "model"
    head, body = exchange(server, request("GET", "/v1/models/org%2F" + MODEL, "HTTP/1.1", None,
                                          "Connection: close\r\n"))
    assert head.split(" ")[1] == "200", head
    assert json.loads(body)["id"] == NAME
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("other-model")
    assert "org/" + MODEL in str(e.value)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
