"""Large corpora (millions of chunks): JSONL (+ optional embeddings) in, sharded dense indexes out.

``layout`` names corpora and their folders, ``records`` and ``vectors`` read
the input, ``build`` ingests (resumable) and swaps a version in, ``ann`` builds
and searches the FAISS shards, ``serve`` opens versions and searches them.
See docs/LARGE_CORPORA.md.
"""
