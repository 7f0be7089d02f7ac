"""The golden cases of tools/gen_tokenizer_golden.py, all computed by the `tokenizers` library."""

import json
import random

from . import build, corpus

# Byte strings that are not UTF-8: cut sequences, overlong forms, surrogates, bytes above
# U+10FFFF, stray continuation bytes, bytes that never occur in UTF-8.
INVALID_UTF8 = [
    b"\xff", b"\x80", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf",
    b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xfe\xfe\xff\xff", b"abc\xe2\x82",
    b"\xe2\x82abc", b"\xe2\x82\xe2\x82\xac", b"\xf0\x9f\x98", b"\xf0\x9f\x98 smile", b"a\xc3",
    b"\xc3(", b"\xe4\xb8\xad\xe6\x96", b"Hello \x80\x81\x82 world", b"\xf0\x9f\x98\x80\x9f\x98",
    b"<|user|>\xff<|assistant|>", b"word\xe2\x82<think>", b"\xe1\x80\xe2\xf0\x91\x92\xf1\xbf",
    b"\x80\xbf\x80\xbf", b"x\xf4\x8f\xbf\xbf\xf4\x90y", b"  \xa0\xa0  ",
]

SPLIT_TEXTS = ["😀😃😄 🎉🚀", "人工智能是计算机科学", "👨‍👩‍👧‍👦🇫🇷", "Größe Straße"]
NAMED = ["Ġthe", "the", "a", "Ċ", "ĠĠ", "<|user|>", "not a token", "<|user", "Ġ"]


def hex_of(b):
    return b.hex()


def fnv1a64(ids, h=0xCBF29CE484222325):
    """FNV-1a over the ids (one step per id): the C test hashes the same way."""
    for i in ids:
        h = ((h ^ i) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def byte_ids(tok, data):
    symbols = {build.byte_of(s): s for s in __import__("tokenizers").pre_tokenizers.ByteLevel.alphabet()}
    return [tok.token_to_id(symbols[b]) for b in data]


def encode_cases(tok):
    cases = []
    for text in corpus.TEXTS:
        ids = tok.encode(text).ids
        assert tok.decode(ids, skip_special_tokens=False) == text, text
        cases.append({"text": hex_of(text.encode()), "ids": ids})
    return cases


def invalid_cases(tok):
    cases = []
    for data in INVALID_UTF8:
        lossy = data.decode("utf-8", "replace")
        # Rust's String::from_utf8_lossy (the ByteLevel decoder) agrees with Python's "replace".
        assert tok.decode(byte_ids(tok, data), skip_special_tokens=False) == lossy, data
        cases.append({"bytes": hex_of(data), "ids": tok.encode(lossy).ids})
    return cases


def decode_cases(tok):
    seqs = [byte_ids(tok, data) for data in INVALID_UTF8]
    for text in SPLIT_TEXTS:  # every prefix of the ids, so cuts fall inside characters
        ids = byte_ids(tok, text.encode())
        seqs += [ids[:k] for k in range(1, len(ids))]
        enc = tok.encode(text).ids
        seqs += [enc[:k] for k in range(1, len(enc))]
    rng = random.Random(20240611)
    size = tok.get_vocab_size(with_added_tokens=True)
    seqs += [[rng.randrange(size) for _ in range(rng.randrange(1, 24))] for _ in range(40)]
    return [{"ids": ids, "text": hex_of(tok.decode(ids, skip_special_tokens=False).encode())}
            for ids in seqs]


def probe_text(first, last):
    """The probe's text for code points first..last: each one between markers of every class."""
    parts = []
    for c in range(max(first, 1), last + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        parts.append("a" + ch + "a1" + ch + "1 " + ch + " |" + ch + ch + "a|")
    return "".join(parts)


def probe_blocks(probe, block):
    blocks = []
    for first in range(0, 0x110000, block):
        ids = probe.encode(probe_text(first, first + block - 1)).ids
        blocks.append({"first": first, "count": len(ids), "fnv1a64": f"{fnv1a64(ids):016x}"})
    return blocks


def big_case(tok):
    """About 1 MiB: the encode texts joined by newlines, repeated."""
    joined = "\n".join(corpus.TEXTS)
    repeat = -(-(1 << 20) // len(joined.encode()))
    ids = tok.encode(joined * repeat).ids
    return {"repeat": repeat, "separator": "0a", "count": len(ids), "fnv1a64": f"{fnv1a64(ids):016x}"}


def variants(tok):
    """The GLM-style tokenizer with one part changed (the C test makes the same change to
    glm_style.json): GPT-2's lone ByteLevel regex, ByteLevel without any regex, ignore_merges
    false, and added tokens that overlap GLM's (leftmost-longest: "/nothinking" keeps "/nothink"
    though "othinking" is longer)."""
    from tokenizers import AddedToken, Tokenizer, pre_tokenizers

    out = []
    specs = [
        {"name": "gpt2_byte_level", "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                                                      "trim_offsets": True, "use_regex": True}},
        {"name": "byte_level_no_regex", "pre_tokenizer": {"type": "ByteLevel",
                                                          "add_prefix_space": False,
                                                          "trim_offsets": True, "use_regex": False}},
        {"name": "ignore_merges_false", "ignore_merges": False},
        {"name": "overlapping_added", "added": ["othinking", "<|us", "er|>", "ing /no"]},
    ]
    texts = [t for t in corpus.TEXTS if len(t.encode()) <= 160]
    texts += ["/nothinking", "<|user|> <|us <|user|>er|>", "thinking /nothinking /no", "a" * 300]
    for spec in specs:
        data = json.loads(tok.to_str())
        if "pre_tokenizer" in spec:
            data["pre_tokenizer"] = spec["pre_tokenizer"]
        if "ignore_merges" in spec:
            data["model"]["ignore_merges"] = spec["ignore_merges"]
        variant = Tokenizer.from_str(json.dumps(data))
        if "added" in spec:
            variant.add_special_tokens([AddedToken(a, special=True, normalized=False)
                                        for a in spec["added"]])
            spec["added"] = [{"content": a, "id": variant.token_to_id(a)} for a in spec["added"]]
        spec["ids"] = [variant.encode(t).ids for t in texts]
        out.append(spec)
    return [hex_of(t.encode()) for t in texts], out


def golden(tok, probe):
    import tokenizers

    variant_texts, variant_list = variants(tok)
    block = 0x10000
    return {
        "generator": "tools/gen_tokenizer_golden.py",
        "tokenizers_version": tokenizers.__version__,
        "tokenizer": "glm_style.json (glm_style_legacy.json: the same, merges as \"a b\")",
        "hex": "texts and byte strings are hex of their bytes (UTF-8 where valid)",
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "token_ids": [{"token": hex_of(t.encode()), "id": -1 if tok.token_to_id(t) is None
                       else tok.token_to_id(t)} for t in NAMED + build.GLM_SPECIAL],
        "encode": encode_cases(tok),
        "invalid_utf8": invalid_cases(tok),
        "decode": decode_cases(tok),
        "decode_each": [hex_of(tok.decode([i], skip_special_tokens=False).encode())
                        for i in range(tok.get_vocab_size(with_added_tokens=True))],
        "big": big_case(tok),
        "variant_texts": variant_texts,
        "variants": variant_list,
        "probe": {"tokenizer": "probe.json", "block": block,
                  "text": "for each code point c of the block but 0 and surrogates: "
                          "'a' c 'a1' c '1 ' c ' |' c c 'a|'; fnv1a64: h = 0xcbf29ce484222325, "
                          "per id h = (h ^ id) * 0x100000001b3 mod 2^64",
                  "blocks": probe_blocks(probe, block)},
    }


def dump(golden):
    lines = ["{"]
    items = list(golden.items())
    for k, (key, value) in enumerate(items):
        end = "," if k + 1 < len(items) else ""
        if isinstance(value, list) and value and isinstance(value[0], dict):
            rows = ",\n".join("  " + json.dumps(v, separators=(",", ":")) for v in value)
            lines.append(f" {json.dumps(key)}: [\n{rows}\n ]{end}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"
