"""Demo content written by us (not for clinical use): the demo KBs and the realistic documents.

``build`` keeps the demo KBs in step with their sources; ``realistic`` ingests
the long documents; ``pdfwrite`` and ``splwrite`` generate the PDF guideline and
the SPL labels they are made of.
"""

