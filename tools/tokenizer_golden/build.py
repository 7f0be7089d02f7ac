"""The tokenizers that tools/gen_tokenizer_golden.py builds with the library, and their files."""

import json
import os

from . import corpus

# GLM-4-0414 / GLM-4.5's Split pattern (shared/glm-spec.md §7), i.e. tiktoken's cl100k_base.
CL100K = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
          r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# GLM-4.5's added tokens in their order (ids follow the learned vocabulary), all special.
GLM_SPECIAL = [
    "<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
    "<|assistant|>", "<|observation|>", "<|begin_of_image|>", "<|end_of_image|>",
    "<|begin_of_video|>", "<|end_of_video|>", "<|begin_of_audio|>", "<|end_of_audio|>",
    "<|begin_of_transcription|>", "<|end_of_transcription|>", "<|code_prefix|>",
    "<|code_middle|>", "<|code_suffix|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<arg_key>", "</arg_key>", "<arg_value>",
    "</arg_value>", "/nothink", "<|begin_of_box|>", "<|end_of_box|>", "<|image|>", "<|video|>",
]

VOCAB_SIZE = 2600  # learned vocabulary, the 256 byte symbols included


def glm_pre_tokenizer():
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CL100K), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def glm_style_tokenizer():
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers import trainers

    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = glm_pre_tokenizer()
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus.TRAINING, trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in GLM_SPECIAL])
    return tok


def probe_tokenizer():
    """Byte symbols plus a merge of each marker with every byte symbol, both ways."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    symbols = sorted(pre_tokenizers.ByteLevel.alphabet(), key=byte_of)
    vocab = {s: i for i, s in enumerate(symbols)}
    merges = []
    for marker in ("a", "1", "\u0120"):
        merges += [(marker, s) for s in symbols] + [(s, marker) for s in symbols]
    merges = list(dict.fromkeys(merges))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=False))
    tok.pre_tokenizer = glm_pre_tokenizer()
    tok.decoder = decoders.ByteLevel()
    return tok


def byte_of(symbol):
    """The byte a GPT-2 byte-level symbol stands for."""
    c = ord(symbol)
    if 0x21 <= c <= 0x7E or 0xA1 <= c <= 0xAC or 0xAE <= c <= 0xFF:
        return c
    singles = [b for b in range(256) if not (0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or
                                               0xAE <= b <= 0xFF)]
    return singles[c - 256]


def save(tok, path):
    text = tok.to_str(pretty=False)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return os.path.getsize(path)


def save_variants(tok, out):
    """glm_style.json as saved, glm_style_legacy.json with "a b" merges (checked equal)."""
    from tokenizers import Tokenizer

    sizes = {"glm_style.json": save(tok, os.path.join(out, "glm_style.json"))}
    data = json.loads(tok.to_str())
    merges = data["model"]["merges"]
    assert merges and isinstance(merges[0], list), "the library no longer saves merge pairs"
    assert all(" " not in a and " " not in b for a, b in merges)
    data["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    legacy = Tokenizer.from_str(text)
    assert legacy.to_str() == tok.to_str(), "the legacy merges do not load as the same tokenizer"
    for s in corpus.TRAINING:
        assert legacy.encode(s).ids == tok.encode(s).ids
    path = os.path.join(out, "glm_style_legacy.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    sizes["glm_style_legacy.json"] = os.path.getsize(path)
    return sizes
