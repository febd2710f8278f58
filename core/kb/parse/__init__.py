"""Parsing: untrusted files in, :class:`~core.kb.types.Document` s of section-aware chunks out.

``blocks`` holds the records every reader emits; ``registry`` maps a guideline
file suffix to its reader (``docparse`` for Markdown and HTML, ``pdfparse`` for
PDF); ``guidelines`` and ``spl`` turn a file into chunks; ``sandbox`` runs a
parser in a budgeted worker process; ``sources`` walks files, folders and zips.
Nothing here knows about indexes: :mod:`core.kb.index` depends on this package,
never the other way.
"""
