#!/usr/bin/env python3
"""Is a server's greedy decoding deterministic? Starts `myriad serve` on a checkpoint with the
given flags, sends the same greedy chat request (logprobs, top 5) several times, and prints for
each repeat where it parts from the first run and how far the chosen tokens' logprobs moved
before that (0 everywhere: bitwise the same step; small: a reduction whose order varies; large:
a wrong sum). Standard library only, so it runs on a bare GPU host.

  tools/repeat_probe.py BINARY CHECKPOINT [--runs N] [--tokens N] [--env K=V ...] -- SERVE FLAGS
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request


def post(port, path, body, timeout=300):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("checkpoint")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--label", default="")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    flags = argv[cut + 1:]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    log = open(f"/tmp/repeat_probe_{port}.log", "w")
    p = subprocess.Popen([a.binary, "serve", a.checkpoint, "--port", str(port), "--served-model-name", "m", *flags],
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    label = a.label or " ".join(flags + a.env)
    try:
        start = time.time()
        while True:
            if p.poll() is not None:
                print(f"{label}: serve exited {p.returncode}; see {log.name}")
                print(open(log.name).read()[-2000:])
                return 1
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        print(f"{label}: healthy after {time.time() - start:.1f} s")
        body = {"model": "m", "temperature": 0, "max_tokens": a.tokens, "logprobs": True,
                "top_logprobs": 5, "chat_template_kwargs": {"thinking": False},
                "messages": [{"role": "user",
                              "content": "Name three rivers of Europe and their seas."}]}
        runs = []
        for _ in range(a.runs):
            r = post(port, "/v1/chat/completions", body)
            runs.append([(t["token"], t["logprob"], [(x["token"], x["logprob"])
                                                      for x in t["top_logprobs"]])
                         for t in r["choices"][0]["logprobs"]["content"]])
        base = runs[0]
        for k, run in enumerate(runs[1:], 1):
            part = next((i for i, (x, y) in enumerate(zip(base, run)) if x[0] != y[0]), None)
            upto = part if part is not None else min(len(base), len(run))
            moved = max((abs(base[i][1] - run[i][1]) for i in range(upto)), default=0.0)
            first = abs(base[0][1] - run[0][1]) if base and run else 0.0
            if part is None:
                print(f"{label}: repeat {k}: same {upto} tokens; chosen logprobs moved at most "
                      f"{moved:.2e} (first token {first:.2e})")
            else:
                print(f"{label}: repeat {k}: parts at token {part} of {len(base)}; before it the "
                      f"chosen logprobs moved at most {moved:.2e} (first token {first:.2e}); "
                      f"run 0 top {base[part][2][:3]} / repeat top {run[part][2][:3]}")
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
