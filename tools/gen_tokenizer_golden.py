#!/usr/bin/env python3
"""tools/gen_tokenizer_golden.py — golden ids for tessera's tokenizer, computed by `tokenizers`.

It is NOT part of the build and never runs in CI: tests/io/test_tokenizer*.c read the committed
files under tests/data/tokenizer/ and need neither Python nor the library. Run it by hand when
the corpus changes:

    python3 tools/gen_tokenizer_golden.py                  # writes tests/data/tokenizer/
    python3 tools/gen_tokenizer_golden.py --out /tmp/tok   # elsewhere (to diff against the commit)

The first run creates a virtual environment (default .cache/venv-tokenizer/, ignored by git;
--venv DIR to choose), installs the pinned `tokenizers` wheel there and re-runs itself with it.

GLM's own tokenizer.json cannot be downloaded here, so the script BUILDS a GLM-style tokenizer with
the library: GLM's pre-tokenizer (Split with the cl100k pattern, Isolated, then ByteLevel without
its regex; shared/glm-spec.md §7), a byte-level BPE trained by BpeTrainer on the small
multilingual corpus below (all 256 byte symbols in the vocabulary, ignore_merges true), GLM's
special tokens added after the vocabulary, ByteLevel decoder and post-processor. What it writes:

  glm_style.json          that tokenizer as the library saves it (merges as ["a", "b"] pairs)
  glm_style_legacy.json   the same with merges as "a b" strings (loaded back by the library and
                          checked to encode the corpus identically)
  probe.json              a Unicode-class probe: the same pre-tokenizer, a BPE whose merges join
                          the markers 'a', '1' and 'Ġ' with every byte symbol (ignore_merges
                          false, no decoder, no post-processor), so a piece boundary that moves
                          changes the ids
  golden.json             encode ids of the corpus, of invalid UTF-8 inputs (after the lossy
                          decoding that a Python or Rust caller applies), decode texts of id
                          sequences (cut inside characters too) and of every id alone, ids of
                          named tokens, the ids' hash for ~1 MiB of text, and hashes of the
                          probe's ids over every code point
  (with --c-tables)       src/io/tokenizer_unicode.c: the code points that the library's regex
                          engine (Oniguruma) puts in \\s, \\p{L} and \\p{N} beyond Unicode 14.0
                          (the data of PCRE2 10.39-10.42 and of this Python's unicodedata)

Texts and byte strings are stored as hex of their UTF-8 bytes, so nothing depends on escaping.
"""

import argparse
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True

TOKENIZERS_VERSION = "0.23.3"
PYPI_PINS = [f"tokenizers=={TOKENIZERS_VERSION}"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def ensure_environment(venv_dir):
    """Re-runs this script inside a venv holding the pinned wheel, creating it if needed."""
    try:
        import tokenizers

        if tokenizers.__version__ == TOKENIZERS_VERSION:
            return
    except ImportError:
        pass
    python = os.path.join(venv_dir, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(python):
        sys.exit(f"gen_tokenizer_golden: {venv_dir} does not provide tokenizers {TOKENIZERS_VERSION}")
    if not os.path.exists(python):
        print(f"gen_tokenizer_golden: creating {venv_dir}", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", venv_dir])
    try:
        subprocess.check_call([python, "-m", "pip", "install", "--quiet", *PYPI_PINS])
    except subprocess.CalledProcessError:
        sys.exit("gen_tokenizer_golden: pip could not install " + " ".join(PYPI_PINS) +
                 " (is PyPI reachable?); no golden data was written")
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "tokenizer"))
    ap.add_argument("--venv", default=os.path.join(REPO, ".cache", "venv-tokenizer"))
    ap.add_argument("--c-tables", action="store_true",
                    help="also rewrite src/io/tokenizer_unicode.c")
    args = ap.parse_args()
    ensure_environment(args.venv)

    from tokenizer_golden import build, cases, unicode_sets

    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    glm = build.glm_style_tokenizer()
    sizes = build.save_variants(glm, out)
    probe = build.probe_tokenizer()
    sizes["probe.json"] = build.save(probe, os.path.join(out, "probe.json"))

    golden = cases.golden(glm, probe)
    path = os.path.join(out, "golden.json")
    with open(path, "w") as f:  # one case per line: diffs stay readable
        f.write(cases.dump(golden))
    sizes["golden.json"] = os.path.getsize(path)

    if args.c_tables:
        unicode_sets.write_c_tables(os.path.join(REPO, "src", "io", "tokenizer_unicode.c"))

    import tokenizers

    print(f"gen_tokenizer_golden: tokenizers {tokenizers.__version__}, "
          f"vocabulary {glm.get_vocab_size(with_added_tokens=True)} "
          f"({len(golden['encode'])} encode, {len(golden['invalid_utf8'])} invalid UTF-8, "
          f"{len(golden['decode'])} decode cases, {len(golden['probe']['blocks'])} probe blocks)")
    for name in sorted(sizes):
        print(f"  {name:24s} {sizes[name]:8d} bytes")
    print(f"  total {sum(sizes.values())} bytes in {out}")


if __name__ == "__main__":
    main()
