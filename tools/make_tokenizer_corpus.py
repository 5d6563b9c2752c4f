#!/usr/bin/env python3
"""Builds tests/data/tokenizers/corpus.jsonl.xz: the text on which the tokenizer oracle test
(tests/python/test_tokenizer_oracle.py) compares myriad's token ids with HF tokenizers' and
tiktoken's. One JSON string per line (a "document"); at least 200 KB of UTF-8 in all.

What goes in (all of it this project's own or written here; nothing downloaded):
  - English prose and Markdown: this project's docs (shared/docs/design.md, reference.md,
    style.md), cut into documents of about 2 KB;
  - code: this repository's C++ tokenizer sources and Python tools;
  - sentences written here in Chinese, Japanese, Korean, Arabic, Hebrew, Hindi (Devanagari),
    Thai, Russian, Greek, Vietnamese, Turkish and German, mixed by a seeded generator with
    English, numbers, punctuation and emoji;
  - emoji: ZWJ families and professions, skin tones, flags, keycaps, variation selectors;
  - combining marks (decomposed accents, stacked marks), long digit runs, runs of spaces, tabs,
    CR, LF and CRLF, Unicode spaces, contractions in every case ('S, 'Ll, ſ);
  - random strings over assigned code points (Unicode 14, the version of the PCRE2 and Python
    this runs with) of many scripts.
Special tokens are not in here: the test adds every special token of each tokenizer itself.

Deterministic (seeded): the same inputs give the same file.
Usage: python3 tools/make_tokenizer_corpus.py [--shared ../shared] [--out tests/data/tokenizers]
"""

import argparse
import json
import lzma
import os
import random
import unicodedata

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ENGLISH = [
    "The tokenizer turns text into the integers a language model reads, and turns the integers "
    "it writes back into text. A single token of difference changes what the model sees.",
    "Byte-pair encoding starts from single bytes and merges the most useful pairs; the order of "
    "the merges is part of the model, so the encoder must apply them in exactly that order.",
    "We measured 3.4 bytes per token on English prose, 2.5 on tables of figures, and about 1.1 "
    "on Thai, where the vocabulary has few whole words.",
    "I'm sure it's fine. You're right, they've gone; we'll see what he'd say. DON'T SHOUT. "
    "IT'S LOUD! She'LL come, won't she? The cat's toy isn't the dog's.",
    "Prices: $1,299.99 (was $1,499.00), 15% off; 3/4 cup; 2^10 = 1024; 6.022e23; -273.15 °C; "
    "v2.0.1-rc3; 192.168.0.1:8080; 2026-11-30T05:00:00Z.",
    "E-mail john.doe+tag@example.com or visit https://example.org/path?q=a&b=c#frag for more.",
    "    Indented line with four spaces.\n\tTabbed line.\n\n\nThree newlines above.   \n",
]

CHINESE = [
    "我们在一台服务器上运行最大的开源混合专家模型。",
    "分词器把文本变成整数，模型读取这些整数，再把生成的整数还原成文字。",
    "今天天气很好，我们去公园散步吧！你觉得怎么样？",
    "中华人民共和国成立于1949年10月1日，首都是北京。",
    "这个问题的答案是：第一，检查输入；第二，验证输出；第三，记录日志。",
    "「你好」，他说，『欢迎光临』。《红楼梦》是一部伟大的小说……",
    "机器学习、深度学习和自然语言处理是人工智能的重要分支。",
    "繁體中文：我們的伺服器支援串流輸出與工具呼叫。",
]
JAPANESE = [
    "東京は日本の首都です。今日はとても暑いですね。",
    "トークナイザーはテキストを整数の列に変換します。",
    "ひらがな、カタカナ、そして漢字が混ざった文章です。ラーメンを食べに行きましょう！",
    "この〇〇は々や〆のような記号を含みます。ｶﾀｶﾅの半角もあります。",
]
KOREAN = [
    "안녕하세요, 만나서 반갑습니다. 오늘 날씨가 정말 좋네요.",
    "토크나이저는 텍스트를 정수로 바꿉니다. 한국어 텍스트도 잘 처리해야 합니다.",
]
ARABIC = [
    "مرحبا بالعالم! هذا نص تجريبي باللغة العربية.",
    "يقوم المحلل بتحويل النص إلى أرقام يقرأها النموذج، ثم يعيد الأرقام إلى نص.",
    "الأرقام العربية: ٠١٢٣٤٥٦٧٨٩ والأرقام الغربية: 0123456789.",
    "السَّلَامُ عَلَيْكُمْ وَرَحْمَةُ اللهِ",
]
HEBREW = [
    "שלום עולם! זהו טקסט לדוגמה בעברית.",
    "המודל קורא מספרים וכותב מספרים, והמפענח הופך אותם חזרה לטקסט.",
    "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
]
HINDI = [
    "नमस्ते दुनिया! यह हिंदी में एक परीक्षण पाठ है।",
    "टोकनाइज़र पाठ को संख्याओं में बदलता है। १२३४५ देवनागरी अंक हैं।",
    "क्षत्रिय, ज्ञान, श्री, द्विज — संयुक्ताक्षर कठिन होते हैं।",
]
THAI = [
    "สวัสดีครับ ยินดีต้อนรับสู่ประเทศไทย",
    "ตัวตัดคำแปลงข้อความเป็นตัวเลขที่โมเดลอ่านได้",
    "ภาษาไทยไม่เว้นวรรคระหว่างคำ๑๒๓๔๕",
]
OTHERS = [
    "Привет, мир! Токенизатор превращает текст в числа. Ёлка и ёжик.",
    "Γειά σου Κόσμε! Ο τοκενιστής μετατρέπει το κείμενο σε αριθμούς. ΣΟΦΟΣ σοφός.",
    "Tiếng Việt có nhiều dấu: Người Việt Nam, phở bò, cà phê sữa đá.",
    "İstanbul'da ılık bir gün; IĞDIR ve ığdır; Şişli'ye gidiyoruz.",
    "Größe, Straße, Fußgängerübergänge, ÄÖÜ äöü ẞ.",
    "Ελληνικά, Русский, עברית, العربية, हिन्दी, ไทย, 中文, 日本語, 한국어.",
    "ſtraße ſ's 'ſ 'S 'LL 'Ve 'rE 'D 'M 'T",
]
EMOJI = [
    "👍", "👍🏻", "👍🏼", "👍🏽", "👍🏾", "👍🏿", "👨‍👩‍👧‍👦", "👩‍💻", "👩🏽‍💻", "🧑🏿‍🚀",
    "🏳️‍🌈", "🏴‍☠️", "❤️", "❤️‍🔥", "🇯🇵", "🇫🇷", "🇺🇸", "1️⃣", "#️⃣", "©️", "™",
    "😀", "😂", "🤖", "🚀", "🎉", "🥲", "🫠", "🧠", "🦀", "🐍", "☕", "✨", "⚡", "🌍",
    "👁️‍🗨️", "🤝🏾", "👨‍❤️‍💋‍👨", "🧑‍🤝‍🧑", "🙋‍♀️", "🏃🏻‍♂️", "💁🏼‍♀️",
]
COMBINING = [
    "e\u0301", "a\u0300", "o\u0308", "n\u0303", "c\u0327", "A\u030a", "u\u031b\u0301",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a",
    "q\u0307\u0323", "\u0915\u094d\u0937", "\u05e9\u05c1\u05b8", "\u0e01\u0e34\u0e4a",
    "Cafe\u0301 na\u0131\u0308ve re\u0301sume\u0301",
]
SPACES = [" ", "  ", "    ", "\t", "\t\t", "\n", "\r\n", "\r", "\n\n", " \n ", "\u00a0",
          "\u3000", "\u2002", "\u2009", "\u202f", "\u2028", "\u0085", "\x0b", "\x0c", " \t \n"]
PUNCT = list(".,;:!?-–—()[]{}<>\"'`~@#$%^&*_+=|\\/…“”‘’«»‹›¿¡·•§¶†‡‰′″") + ["...", "!?", "--"]


def sentences():
    return ENGLISH + CHINESE + JAPANESE + KOREAN + ARABIC + HEBREW + HINDI + THAI + OTHERS


def mixed_document(rng, size):
    """Sentences of every language mixed with numbers, punctuation, emoji and white space."""
    parts = []
    n = 0
    pools = [sentences(), EMOJI, COMBINING, SPACES, PUNCT]
    weights = [10, 3, 1, 3, 2]
    while n < size:
        pool = rng.choices(pools, weights)[0]
        piece = rng.choice(pool)
        r = rng.random()
        if r < 0.08:
            piece = str(rng.randrange(10 ** rng.randint(1, 12)))
        elif r < 0.12:
            piece = piece.upper()
        elif r < 0.15:
            piece = piece.replace(" ", "")
        parts.append(piece)
        if rng.random() < 0.5:
            parts.append(rng.choice([" ", " ", " ", "", "\n", "  "]))
        n += len(piece.encode("utf-8"))
    return "".join(parts)


def digits_and_spaces(rng):
    docs = []
    for length in (1, 2, 3, 4, 5, 7, 10, 17, 33, 64, 100, 257, 500, 1000):
        docs.append("".join(rng.choice("0123456789") for _ in range(length)))
    docs.append("٣٤٥٦٧ ١٢٣ 12 ١٢ ๑๒๓ 〇一二三 ⅠⅡⅢ ½ ¼ ² ³ ① ② ⑳")
    docs.append("1,000,000 1.000.000 1 000 000 0x1F 0b1010 1e-9 3.14159265358979323846")
    for _ in range(40):
        docs.append("".join(rng.choice(SPACES + ["a", "word", "x.", "1"]) for _ in range(rng.randint(5, 60))))
    docs.append(" " * 300)
    docs.append("\t" * 50 + "x" + "\r\n" * 40)
    docs.append("trailing spaces   ")
    docs.append("   leading spaces")
    docs.append("\n")
    docs.append(" ")
    docs.append("")
    docs.append("a" * 3000)
    docs.append("ab" * 1500)
    docs.append("!" * 500 + "?" * 300)
    docs.append("的" * 800)
    docs.append("🙂" * 200)
    return docs


def random_unicode(rng, count):
    """Random strings over assigned code points (this Python's Unicode) of many blocks."""
    blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x250, 0x2ff), (0x300, 0x36f), (0x370, 0x3ff),
              (0x400, 0x4ff), (0x530, 0x58f), (0x590, 0x5ff), (0x600, 0x6ff), (0x900, 0x97f),
              (0x980, 0x9ff), (0xe00, 0xe7f), (0x10a0, 0x10ff), (0x1100, 0x11ff),
              (0x1e00, 0x1eff), (0x2000, 0x206f), (0x20a0, 0x20cf), (0x2100, 0x214f),
              (0x2190, 0x21ff), (0x2200, 0x22ff), (0x2500, 0x257f), (0x2600, 0x26ff),
              (0x3000, 0x303f), (0x3040, 0x30ff), (0x3400, 0x4dbf), (0x4e00, 0x9fff),
              (0xac00, 0xd7a3), (0xf900, 0xfaff), (0xfb00, 0xfb4f), (0xfe30, 0xfe4f),
              (0xff00, 0xffef), (0x1d400, 0x1d7ff), (0x1f300, 0x1f5ff), (0x1f600, 0x1f64f),
              (0x1f900, 0x1f9ff), (0x20000, 0x2a6df)]
    docs = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 120)):
            lo, hi = rng.choice(blocks)
            while True:
                c = chr(rng.randint(lo, hi))
                if unicodedata.category(c) not in ("Cn", "Cs", "Co"):
                    break
            chars.append(c)
            if rng.random() < 0.2:
                chars.append(rng.choice([" ", " ", "\n", "'s", "'LL", "1", "23"]))
        docs.append("".join(chars))
    return docs


def chunks(text, size):
    """Cuts text at line ends into pieces of about `size` bytes."""
    out, cur = [], []
    n = 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line.encode("utf-8"))
        if n >= size:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "tokenizers"))
    args = ap.parse_args()
    rng = random.Random(20261130)

    docs = []
    for name in ("design.md", "reference.md", "style.md"):
        with open(os.path.join(args.shared, "docs", name), encoding="utf-8") as f:
            docs += chunks(f.read(), 2000)
    code_files = ["src/tokenizer/bpe.cpp", "src/tokenizer/regex.cpp", "src/tokenizer/utf8.cpp",
                  "src/tokenizer/pre_tokenizer.cpp", "src/tokenizer/added_tokens.cpp",
                  "tools/make_tokenizer.py"]
    for rel in code_files:
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            docs += chunks(f.read(), 2000)
    for s in sentences() + EMOJI + COMBINING:
        docs.append(s)
    docs.append(" ".join(EMOJI))
    docs.append("".join(EMOJI))
    for _ in range(60):
        docs.append(mixed_document(rng, rng.randint(200, 2000)))
    docs += digits_and_spaces(rng)
    docs += random_unicode(rng, 300)

    total = sum(len(d.encode("utf-8")) for d in docs)
    assert total >= 200_000, total
    data = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode("utf-8")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "corpus.jsonl.xz")
    with open(path, "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print(f"{path}: {len(docs)} documents, {total} bytes of text, "
          f"{os.path.getsize(path)} bytes compressed")


if __name__ == "__main__":
    main()
