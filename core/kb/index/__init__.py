"""The knowledge-base index: versioned folders of FAISS vectors, BM25 and a chunk store.

``builder`` writes a version and swaps it in, ``reader`` opens one, ``docstore``
and ``lexical`` are its chunk store and BM25 index, ``ingest`` parses and
embeds documents into a new version, ``retriever`` searches the live versions
(dense, BM25, or both fused by ``fusion``).
"""
