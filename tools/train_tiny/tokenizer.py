"""The shipped tokenizer (tiktoken.model + tokenizer_config.json) for training and evaluation.

Uses tiktoken when it is installed; otherwise a byte-level BPE of its own with the `regex`
package (a dependency of transformers, so on the GPU host): the `pat_str` split in regex's V1 mode
(class intersection `&&`, as tiktoken's fancy-regex reads it), then tiktoken's rank merge — the
pair of lowest rank merged first — inside each piece. Special tokens are matched by name first,
as tiktoken's encode(allowed_special="all") does. The test checks both give the same ids.
"""

import base64
import json
import os


class Tokenizer:
    def __init__(self, model_dir, backend="auto"):
        ranks = {}
        with open(os.path.join(model_dir, "tiktoken.model"), "rb") as f:
            for line in f:
                if line.strip():
                    b, r = line.split()
                    ranks[base64.b64decode(b)] = int(r)
        with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        self.special = {v["content"]: int(k) for k, v in config["added_tokens_decoder"].items()}
        self.pat_str = config["pat_str"]
        self.ranks = ranks
        self.id_to_bytes = {r: b for b, r in ranks.items()}
        self.id_to_bytes.update({i: s.encode() for s, i in self.special.items()})
        self.n_vocab = max(self.id_to_bytes) + 1
        self._tiktoken = None
        if backend in ("auto", "tiktoken"):
            try:
                import tiktoken  # noqa: PLC0415 - optional
                self._tiktoken = tiktoken.Encoding(
                    "myriad-tiny", pat_str=self.pat_str, mergeable_ranks=ranks,
                    special_tokens=self.special, explicit_n_vocab=self.n_vocab)
            except ImportError:
                if backend == "tiktoken":
                    raise
        if self._tiktoken is None:
            import regex  # noqa: PLC0415
            self._pat = regex.compile(self.pat_str, regex.V1)
            self._special_re = regex.compile(
                "|".join(regex.escape(s) for s in sorted(self.special, key=len, reverse=True)))
            self._cache = {}

    @property
    def backend(self):
        return "tiktoken" if self._tiktoken is not None else "regex"

    def encode(self, text):
        """Ids of text, special-token names included as their ids."""
        if self._tiktoken is not None:
            return self._tiktoken.encode(text, allowed_special="all")
        out, start = [], 0
        for m in self._special_re.finditer(text):
            self._encode_ordinary(text[start:m.start()], out)
            out.append(self.special[m.group()])
            start = m.end()
        self._encode_ordinary(text[start:], out)
        return out

    def _encode_ordinary(self, text, out):
        for piece in self._pat.findall(text):
            ids = self._cache.get(piece)
            if ids is None:
                ids = self._bpe(piece.encode("utf-8"))
                if len(self._cache) < 500_000:
                    self._cache[piece] = ids
            out.extend(ids)

    def _bpe(self, b):
        if b in self.ranks:
            return [self.ranks[b]]
        parts = [b[i:i + 1] for i in range(len(b))]
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                r = self.ranks.get(parts[i] + parts[i + 1])
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return [self.ranks[p] for p in parts]

    def decode(self, ids):
        return b"".join(self.id_to_bytes.get(i, b"") for i in ids).decode("utf-8", "replace")
