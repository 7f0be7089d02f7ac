"""Case lists and builders for tools/gen_tokenizer_golden.py (see its docstring)."""
