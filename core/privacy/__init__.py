"""Privacy: text normalisation, de-identification and the egress allow-list for external backends."""
