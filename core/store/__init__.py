"""Relational store: models, engines, migrations and the repository layer."""
