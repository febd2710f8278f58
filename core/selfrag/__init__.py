"""Self-reflective biomedical RAG: reflection tokens, adaptive retrieval, critic reranking, regeneration."""
