"""Casebook core: everything the pages and the CLI call. Never imports streamlit."""

import os

# Offline first: no library may reach a model hub, even when a user forgets the
# environment variables. Set before any Hugging Face import can read them.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__all__: list[str] = []
